"""The cache folder as a whole: check it, repair it, merge score caches into it.

What lives there: `scores.sqlite` (the score cache), `candidates/<key>/` (frozen candidate sets), `embeddings/<key>/`
(vector stores, `terazi.models.vectors`: corpus embedding shards `rows-*.npy`, parts of query and reranker vectors
`part-*.npy`), `corpus/<fingerprint>.parquet` (corpus tables), `costs/<identity hash>.json` (measured cost per score
identity, `terazi.models.costs`), `onnx/<key>/` (ONNX exports and int8 copies), `http/<endpoint hash>/` (the lock files
that bound a rerank API's requests in flight, `terazi.rerank.backends.service`), `outputs/<key>/` (stage outputs linked
into results folders, each with the stamps and hashes of its files, `terazi.memo`), `work/` (a running run's plans;
removed when it finishes), `quarantine/` (what repair set aside), `stamps.json` (hashes of model folders and frozen
files by their stat stamps, `terazi.stamps`; check and repair hash every byte instead) and `intervals.sqlite` (bootstrap
results by the content of their inputs, `terazi.analysis.known`). Everything but the score cache, the candidate sets and
the cost figures is derived and is simply rebuilt; `terazi.cache_usage` weighs the parts and prunes what no recent run
used.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from terazi import memo
from terazi.analysis import known
from terazi.errors import CacheError
from terazi.present.table import Table
from terazi.rerank.store import ModelKey, SharedStore, SQLiteStore
from terazi.rerank.store import sqlite as sqlite_store
from terazi.rerank.store.scores import CACHE_FILE, cache_file
from terazi.retrieval.frozen import MANIFEST, load_frozen, quarantine_folder

STALE_WORK_SECONDS = 24 * 3600
SHARD = re.compile(r"rows-(\d+)-(\d+)\.npy$")


@dataclass
class Finding:
    path: str
    problem: str
    repair: str


def findings_table(findings: list[Finding]) -> Table:
    """What `check` found, and what `repair` will do about each."""
    return Table(["file", "problem", "`terazi cache repair` will"], [[f.path, f.problem, f.repair] for f in findings])


def _candidate_sets(cache: Path) -> list[Path]:
    return sorted(p for p in (cache / "candidates").glob("*") if p.is_dir() and not p.name.startswith("."))


def check(cache: Path) -> list[Finding]:
    """Everything damaged in the cache folder, with what `repair` would do about it."""
    out: list[Finding] = []
    db = cache / CACHE_FILE
    if db.exists():
        try:
            store = SQLiteStore(db)
            out += [Finding(str(db), p, "quarantine it, salvage the readable scores") for p in store.check()[:5]]
            store.close()
        except CacheError as e:
            out.append(Finding(str(db), str(e).split(": run")[0], "quarantine it, salvage the readable scores"))
    for folder in _candidate_sets(cache):
        try:
            if load_frozen(folder, rebuild=False, trust_stamps=False) is None:
                what = (
                    "manifest.json unreadable"
                    if not _readable_json(folder / MANIFEST)
                    else "candidates.parquet missing or damaged"
                )
                out.append(Finding(str(folder), what, "set it aside; the next run computes it again"))
        except CacheError as e:
            out.append(Finding(str(folder), str(e).split(": ", 1)[-1], "write the TREC files again from the parquet"))
    for shard in sorted((cache / "embeddings").glob("*/rows-*.npy")):
        if not _shard_ok(shard):
            out.append(
                Finding(str(shard), "unreadable or of the wrong size", "delete it; the next run encodes it again")
            )
    for part in sorted((cache / "embeddings").glob("*/part-*.npy")):
        if not _part_ok(part):
            out.append(
                Finding(
                    str(part),
                    "unreadable, or not one vector per key",
                    "delete it (and its keys); the next run encodes its texts again",
                )
            )
    for table in sorted((cache / "corpus").glob("*.parquet")):
        try:
            pq.read_metadata(table)
        except Exception:  # noqa: BLE001 - any read failure means damaged
            out.append(Finding(str(table), "unreadable", "delete it; the next run rebuilds it from the dataset"))
    for obj, problem in _outputs(cache):
        out.append(Finding(str(obj), problem, "set it aside in quarantine/; the next run makes it again"))
    intervals = cache / known.FILE
    if intervals.exists() and (problem := known.check(intervals)):
        out.append(Finding(str(intervals), problem, "delete it; the next run computes its intervals again"))
    return out


def _readable_json(path: Path) -> bool:
    import json

    try:
        json.loads(path.read_text())
        return True
    except (OSError, ValueError):
        return False


def _shard_ok(path: Path) -> bool:
    m = SHARD.search(path.name)
    try:
        emb = np.load(path, mmap_mode="r")
    except (OSError, ValueError):
        return False
    return bool(m) and emb.ndim == 2 and emb.shape[0] == int(m.group(2)) - int(m.group(1))


def _keys_of(part: Path) -> Path:
    return part.with_name(f"keys-{part.name[5:]}")


def _part_ok(path: Path) -> bool:
    """A vector store's part: its vectors and keys readable, one unit-length float32 row per key."""
    try:
        vectors, keys = np.load(path, mmap_mode="r"), np.load(_keys_of(path), mmap_mode="r")
    except (OSError, ValueError):
        return False
    return vectors.ndim == 2 and vectors.dtype == np.float32 and keys.ndim == 1 and len(keys) == len(vectors)


def _outputs(cache: Path) -> list[tuple[Path, str]]:
    """Stored outputs (terazi.memo) whose bytes are not the ones recorded when they were stored, every byte read."""
    return [
        (obj, problem)
        for obj in sorted((cache / memo.FOLDER).glob("*"))
        if obj.is_dir() and not obj.name.startswith(".") and (problem := memo.damaged(obj))
    ]


def repair(cache: Path) -> list[str]:
    """Repair what `check` finds; returns one line per action."""
    done = []
    db = cache / CACHE_FILE
    if db.exists():
        try:
            store = SQLiteStore(db)
            bad = store.check()
            store.close()
        except CacheError:
            bad = ["unreadable"]
        if bad:
            r = sqlite_store.repair(db)
            done.append(
                f"{db}: damaged file kept as {r['quarantined']}; {r['salvaged']} scores of {r['models']} "
                f"model(s) salvaged into a new cache ({r['unreadable_ranges']} unreadable key ranges lost; "
                "their pairs are scored again when needed)"
            )
    for folder in _candidate_sets(cache):
        try:
            if load_frozen(folder, rebuild=False, trust_stamps=False) is None:
                quarantine_folder(folder)
                done.append(f"{folder}: set aside in quarantine/; the next run computes it again")
        except CacheError:
            load_frozen(folder, rebuild=True, trust_stamps=False)
            done.append(f"{folder}: TREC files written again from candidates.parquet")
    for shard in sorted((cache / "embeddings").glob("*/rows-*.npy")):
        if not _shard_ok(shard):
            shard.unlink()
            done.append(f"{shard}: deleted; the next run encodes it again")
    for part in sorted((cache / "embeddings").glob("*/part-*.npy")):
        if not _part_ok(part):
            part.unlink()
            _keys_of(part).unlink(missing_ok=True)
            done.append(f"{part}: deleted; the next run encodes its texts again")
    for table in sorted((cache / "corpus").glob("*.parquet")):
        try:
            pq.read_metadata(table)
        except Exception:  # noqa: BLE001
            table.unlink()
            done.append(f"{table}: deleted; the next run rebuilds it")
    for obj, problem in _outputs(cache):
        memo.set_aside(obj, problem)
        done.append(f"{obj}: {problem}; set aside in quarantine/, the next run makes it again")
    for tmp in sorted((cache / memo.FOLDER).glob(".*")):
        if time.time() - tmp.stat().st_mtime > STALE_WORK_SECONDS:
            if tmp.is_dir():
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.unlink(missing_ok=True)
            done.append(f"{tmp}: left half-written by a stopped run; removed")
    intervals = cache / known.FILE
    if intervals.exists() and known.check(intervals):
        intervals.unlink()
        done.append(f"{intervals}: deleted; the next run computes its intervals again")
    for work in sorted((cache / "work").glob("*")):
        if time.time() - work.stat().st_mtime > STALE_WORK_SECONDS:
            shutil.rmtree(work, ignore_errors=True)
            done.append(f"{work}: left by a stopped run; removed")
    return done


def open_source(source: str):
    """A score cache to merge from (or into): a cache folder, a `.sqlite` file, or a shared store (folder or URL)."""
    path = Path(source).expanduser()
    if "://" not in source:
        if path.is_file():
            return SQLiteStore(path)
        if (path / CACHE_FILE).is_file():
            return SQLiteStore(path / CACHE_FILE)
        if not (path / "scores").is_dir():
            raise CacheError(f"{source}: neither a cache folder, a scores.sqlite file nor a score store")
    return SharedStore(source)


def merge(target: SQLiteStore | SharedStore, source: SQLiteStore | SharedStore) -> dict[str, int]:
    """Copy every score of `source` into `target` (pairs `target` has are kept as they are). A shared store as
    target is compacted afterwards: one part per model (so merging a store into itself compacts it)."""
    models = rows = 0
    for model_id, identity, max_length, _ in source.models():
        frame = source.rows(model_id)
        ident = None if identity == "(unknown)" else identity
        if isinstance(target, SQLiteStore):
            rows += target.put_model_rows(model_id, ident, max_length, frame)
        else:
            if ident is not None:
                target.put_many(ModelKey(ident, max_length), frame)
            else:
                target.put_model_rows(model_id, frame)
            target.compact(model_id)
            rows += frame.height
        models += 1
    return {"models": models, "rows": rows}


def merge_all(sources: list[str], cache: Path, into: str | None = None) -> Iterator[str]:
    """Merge every score cache of `sources` (`open_source`) into the shared store `into`, or else into the cache
    folder's score store: a line for each, saying how many scores of how many models it brought."""
    target = SharedStore(into) if into else SQLiteStore(cache_file(cache))
    for source in sources:
        got = merge(target, open_source(source))
        yield f"{source} → {into or target.where}: {got['rows']} scores of {got['models']} model(s) merged"
