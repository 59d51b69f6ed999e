"""The cache folder's one write-then-rename, one set-aside and one layout (terazi.store): a failed write leaves the
old file and no temporary one, a set-aside item keeps its record, and every part a prune weighs is a named part."""

from __future__ import annotations

import json

import pytest

from terazi.base.paths import write_atomic
from terazi.store.files import set_aside
from terazi.store.layout import PARTS, CacheLayout
from terazi.upkeep.usage import entries


def test_a_write_that_fails_leaves_the_old_file_and_nothing_else(tmp_path):
    target = tmp_path / "a.json"
    write_atomic(target, lambda p: p.write_text("old"))

    def broken(p):
        p.write_text("half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        write_atomic(target, broken)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_a_folder_another_run_stored_first_is_kept(tmp_path):
    target = tmp_path / "set"
    write_atomic(target, lambda p: (p / "f").write_text("theirs"), folder=True)
    write_atomic(target, lambda p: (p / "f").write_text("ours"), folder=True, keep_theirs=True)
    assert (target / "f").read_text() == "theirs" and [p.name for p in tmp_path.iterdir()] == ["set"]


def test_a_set_aside_item_keeps_its_sidecars_and_one_record(tmp_path):
    layout = CacheLayout(tmp_path)
    for name in ("scores.sqlite", "scores.sqlite-wal"):
        (tmp_path / name).write_text(name)
    kept = set_aside(layout.scores, "damaged", layout.quarantine, "scores", ("-wal", "-shm"), derived=False)
    assert kept.read_text() == "scores.sqlite" and kept.with_name("scores.sqlite-wal").is_file()
    record = json.loads((kept.parent / "set-aside.json").read_text())
    assert record["why"] == "damaged" and record["from"] == str(layout.scores) and not layout.scores.exists()
    assert [e.part for e in entries(tmp_path)] == ["quarantine"]  # one entry, pruned whole


def test_parts_stay_inside_the_cache_and_the_paid_for_are_never_pruned(tmp_path):
    layout = CacheLayout(tmp_path)
    assert all(layout.part(name).parent == tmp_path.resolve() for name in PARTS)
    assert not any(p.prunable for p in PARTS.values() if p.paid_for)
    with pytest.raises(Exception, match="would leave"):
        layout.part("outputs", "../../elsewhere")
