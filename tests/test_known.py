"""Bootstrap results found again by the content of their inputs (terazi.analysis.known): the same numbers as drawing
them, no draw at all for values seen before, a draw for anything that changed, and a damaged file never in the way."""

from __future__ import annotations

import numpy as np
import pytest

from terazi.analysis import known, stats
from terazi.cache_folder import check, repair


@pytest.fixture
def counted(monkeypatch) -> list:
    """Every resampling the statistics make (one per interval or ratio computed, not found)."""
    calls, real = [], stats.draws
    monkeypatch.setattr(stats, "draws", lambda *a: calls.append(a) or real(*a))
    return calls


def values(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"tr": rng.random(300), "en": rng.random(120)}


def statistics(a: dict, b: dict) -> list:
    return [
        stats.interval(a, 500, 3, 0.9),
        stats.paired_difference(a, b, 500, 3, 0.9),
        stats.ratio_interval(a, b, 500, 3, 0.9, "macro"),
        stats.ratio_interval(a, b, 500, 3, 0.9, "pooled"),
    ]


def test_found_again_equal_to_drawn_and_only_what_changed_is_drawn(tmp_path, counted):
    a, b = values(1), values(2)
    drawn = statistics(a, b)  # outside `kept`: computed, as everywhere but the results stage
    assert len(counted) == 4
    with known.kept(tmp_path):
        assert statistics(a, b) == drawn  # the first run over this cache computes and keeps them
    assert len(counted) == 8 and (tmp_path / known.FILE).is_file()
    with known.kept(tmp_path):  # the next run: all found, nothing drawn
        assert statistics({k: v.copy() for k, v in a.items()}, b) == drawn
        assert len(counted) == 8
        changed = {**a, "en": a["en"] + 1e-9}  # one value of one dataset moved
        again = statistics(changed, b)
    assert len(counted) == 12 and again[0].estimate != drawn[0].estimate
    with known.kept(tmp_path):  # other parameters are other results; numpy's numbers are the numbers they equal
        assert stats.interval(a, 500, 4, 0.9) != drawn[0] and len(counted) == 13
        assert stats.interval(a, np.int64(500), np.int64(3), np.float64(0.9)) == drawn[0] and len(counted) == 13


def test_a_damaged_file_is_set_aside_and_reported(tmp_path, counted):
    a, b = values(1), values(2)
    (tmp_path / known.FILE).write_bytes(b"not a database" * 100)
    assert [f.problem.split(" ")[0] for f in check(tmp_path)] == ["unreadable"]
    with known.kept(tmp_path):
        drawn = statistics(a, b)  # computed as if there were no file
    assert len(counted) == 4 and (tmp_path / f"{known.FILE}.damaged").is_file()
    (tmp_path / known.FILE).write_bytes(b"not a database" * 100)
    assert any("deleted" in line for line in repair(tmp_path)) and not (tmp_path / known.FILE).exists()
    with known.kept(tmp_path):
        assert statistics(a, b) == drawn
    assert check(tmp_path) == []


def test_a_file_another_run_holds_is_waited_for_then_left_alone(tmp_path, counted, monkeypatch):
    import sqlite3

    a, b = values(1), values(2)
    with known.kept(tmp_path):
        drawn = statistics(a, b)
    monkeypatch.setattr(known, "TIMEOUT", 0.05)
    other = sqlite3.connect(tmp_path / known.FILE, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # another run writing its intervals, for longer than this one waits
    try:
        with known.kept(tmp_path):
            assert statistics(a, b) == drawn  # computed, as without the file
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert len(counted) == 8 and not (tmp_path / f"{known.FILE}.damaged").exists()
    with known.kept(tmp_path):  # the file was left as it was: everything found again
        assert statistics(a, b) == drawn and len(counted) == 8
