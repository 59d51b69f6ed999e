"""Hashes remembered by stat stamp (terazi.store.file_hashes): the same identity as hashing every byte, read from the
cache folder's book while nothing changed, computed again when a file changes, and never trusted by `terazi cache
check`."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import polars as pl

from terazi.models import refs
from terazi.retrieval.frozen import load_frozen, set_files, store_candidates
from terazi.store import file_hashes
from terazi.store.files import stat_stamp
from terazi.store.layout import PARTS
from terazi.upkeep.health import check


def settled(path: Path) -> None:
    """Older than the book's 2 s of doubt, as any model folder a run meets."""
    old = time.time() - 60
    os.utime(path, (old, old))


def model_folder(root: Path) -> Path:
    folder = root / "model"
    (folder / "sub").mkdir(parents=True)
    for name, data in (("config.json", b'{"a": 1}'), ("sub/weights.bin", bytes(range(256)) * 64)):
        (folder / name).write_bytes(data)
        settled(folder / name)
    return folder


def by_hand(folder: Path) -> str:
    """The identity's hash as the project always made it: each file's relative path, a NUL, its bytes."""
    h = hashlib.sha256()
    for p in sorted(x for x in folder.rglob("*") if x.is_file()):
        h.update(str(p.relative_to(folder)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:12]


def identity(folder: Path, cache: Path) -> str:
    refs._folder_hash.cache_clear()  # a new process, as the next run is
    file_hashes._seen.clear()
    return refs.resolve(str(folder), cache_dir=cache).identity


def frozen_set(cache: Path) -> Path:
    """A frozen candidate set of one query (dataset x), its files older than the book's doubt."""
    folder = cache / "candidates" / "k"
    cand = pl.DataFrame(
        {
            "condition": ["clean"] * 2,
            "sample": [0, 0],
            "query_id": ["q1", "q1"],
            "rank": [1, 2],
            "doc_id": ["d1", "d2"],
            "score": [2.0, 1.0],
        }
    )
    store_candidates(
        folder,
        cand,
        {
            "lookup_key": "k",
            "dataset": "x",
            "dataset_fingerprint": "y",
            "encoder": "e",
            "encoder_identity": "e",
            "index": {},
            "depth": 2,
            "queries_encoded": 1,
            "docs_encoded": 2,
            "faiss_version": "",
        },
        {"q1": {"d1": 1}},
        time.perf_counter(),
    )
    for p in folder.rglob("*"):
        settled(p)
    return folder


def test_a_model_folder_hash_is_remembered_until_a_file_changes(tmp_path):
    folder, cache = model_folder(tmp_path), tmp_path / "cache"
    cache.mkdir()
    assert identity(folder, cache) == f"model#{by_hand(folder)}"  # the same identity: no cache keyed by it is lost
    book = json.loads((cache / PARTS["file_hashes"].name).read_text())
    [(key, (recorded, digest))] = book.items()
    assert key == f"folder:{folder.resolve()}" and digest == by_hand(folder)

    book[key][1] = "remembered!"  # the book is what a warm run reads while the files' stamps are unchanged
    (cache / PARTS["file_hashes"].name).write_text(json.dumps(book))
    assert identity(folder, cache) == "model#remembered!"

    weights = folder / "sub" / "weights.bin"  # same size, other bytes: a write moves its stamp
    weights.write_bytes(bytes(reversed(range(256))) * 64)
    settled(weights)
    assert identity(folder, cache) == f"model#{by_hand(folder)}" != "model#remembered!"
    (folder / "extra.txt").write_text("x")  # a file added
    settled(folder / "extra.txt")
    assert identity(folder, cache) == f"model#{by_hand(folder)}"


def test_a_file_written_just_now_is_hashed_but_not_recorded(tmp_path):
    folder, cache = model_folder(tmp_path), tmp_path / "cache"
    cache.mkdir()
    (folder / "config.json").write_bytes(b'{"a": 2}')  # within its mtime's tick it could change again unseen
    assert identity(folder, cache) == f"model#{by_hand(folder)}"
    assert not (cache / PARTS["file_hashes"].name).exists()
    assert identity(folder, tmp_path / "no-such-cache") == f"model#{by_hand(folder)}"  # no cache folder: hashed


def test_frozen_files_are_checked_through_the_book_but_cache_check_hashes_every_byte(tmp_path):
    cache = tmp_path / "cache"
    folder = frozen_set(cache)
    files = set_files(folder)
    assert load_frozen(folder) is not None
    book = json.loads((cache / PARTS["file_hashes"].name).read_text())
    assert {k.split(":", 1)[1] for k in book} == {str((folder / n).resolve()) for n in files}

    run = (folder / "runs" / "clean.trec").resolve()
    run.write_text(run.read_text().replace("d1", "d9"))  # damaged in place, and the book told it still has its hash
    settled(run)
    book[f"file:{run}"] = [[stat_stamp(run)], files["runs/clean.trec"]]
    (cache / PARTS["file_hashes"].name).write_text(json.dumps(book))
    assert load_frozen(folder) is not None and "d9" in run.read_text()  # a run takes the book's word: not rebuilt
    [finding] = check(cache)  # check hashes every byte
    assert finding.path == str(folder) and "clean.trec" in finding.problem


def test_links_to_a_frozen_file_cost_no_hash_but_a_write_does(tmp_path, monkeypatch):
    """Every results folder links (and a rerun or a cleanup unlinks) the frozen files of its run, which moves their
    ctime: with ctime in the stamp, every warm run hashed the frozen TREC files again. A write is still seen."""
    from terazi.base import fingerprint
    from terazi.retrieval.frozen import publish_candidates

    cache = tmp_path / "cache"
    folder = frozen_set(cache)
    hashed = []
    real = fingerprint.of_file
    monkeypatch.setattr(fingerprint, "of_file", lambda p: hashed.append(Path(p).name) or real(p))

    def next_run():  # a new process: only the book remembers
        file_hashes._seen.clear()
        hashed.clear()
        return load_frozen(folder)

    cs = next_run()
    assert sorted(hashed) == ["candidates.parquet", "clean.trec"]  # first sight: hashed, then recorded
    run = (folder / "runs" / "clean.trec").resolve()
    ctime = run.stat().st_ctime_ns
    for name in ("a", "b", "a"):  # results folders linking the frozen run file, one of them rerun
        time.sleep(0.01)
        publish_candidates(cs, tmp_path / name)
        assert (tmp_path / name / "candidates" / "x" / "clean.trec").samefile(run)
        assert next_run() is not None and hashed == []
    shutil.rmtree(tmp_path / "b")  # an old results folder deleted
    assert next_run() is not None and hashed == []
    assert run.stat().st_ctime_ns != ctime and run.stat().st_nlink == 2

    text = run.read_text()
    run.write_text(text.replace("d1", "d9"))  # a write (same size) moves mtime
    settled(run)
    assert next_run() is not None and hashed == ["clean.trec"] * 2  # seen, written again from the parquet, checked
    assert run.read_text() == text
