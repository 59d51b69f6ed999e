"""The cache folder as a whole: check it (`terazi cache check`), repair it (`repair`), merge score caches into it.

Its parts are named in `terazi.store.layout` (`CacheLayout`, `PARTS`); this module reads each part the way its
writer wrote it, every byte (the file-hash book is never trusted here): the score store (SQLite's integrity check;
repaired by salvaging every readable score), frozen candidate sets (their manifests' hashes; TREC files written
again from the parquet), vector stores (`rows-*.npy` shards of the right size, `part-*.npy` with one vector per
key), corpus tables, stored outputs (their recorded hashes) and the intervals file. What is damaged and derived is
set aside into `quarantine/` or deleted, and made again by the next run that needs it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from terazi.base.errors import CacheError
from terazi.base.paths import remove
from terazi.present.table import Table
from terazi.rerank.store import ModelKey, SharedStore, SQLiteStore
from terazi.rerank.store import sqlite as sqlite_store
from terazi.retrieval.frozen import load_frozen
from terazi.store import bootstraps, derived
from terazi.store.files import set_aside
from terazi.store.layout import CANDIDATES_MANIFEST as MANIFEST
from terazi.store.layout import CacheLayout

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
    return [p for p in CacheLayout(cache).entries("candidates") if p.is_dir()]


def check(cache: Path) -> list[Finding]:
    """Everything damaged in the cache folder, with what `repair` would do about it."""
    out: list[Finding] = []
    layout = CacheLayout(cache)
    db = layout.scores
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
    for shard in sorted(layout.embeddings.glob("*/rows-*.npy")):
        if not _shard_ok(shard):
            out.append(
                Finding(str(shard), "unreadable or of the wrong size", "delete it; the next run encodes it again")
            )
    for part in sorted(layout.embeddings.glob("*/part-*.npy")):
        if not _part_ok(part):
            out.append(
                Finding(
                    str(part),
                    "unreadable, or not one vector per key",
                    "delete it (and its keys); the next run encodes its texts again",
                )
            )
    for table in sorted(layout.corpus.glob("*.parquet")):
        try:
            pq.read_metadata(table)
        except Exception:  # noqa: BLE001 - any read failure means damaged
            out.append(Finding(str(table), "unreadable", "delete it; the next run rebuilds it from the dataset"))
    for obj, problem in _outputs(cache):
        out.append(Finding(str(obj), problem, "set it aside in quarantine/; the next run makes it again"))
    intervals = layout.intervals
    if intervals.exists() and (problem := bootstraps.check(intervals)):
        out.append(Finding(str(intervals), problem, "set it aside; the next run computes its intervals again"))
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
    """Stored outputs (terazi.store.derived) whose bytes are not the ones recorded when stored, every byte read."""
    return [
        (obj, problem)
        for obj in CacheLayout(cache).entries("outputs")
        if obj.is_dir() and (problem := derived.damaged(obj))
    ]


def repair(cache: Path) -> list[str]:
    """Repair what `check` finds; returns one line per action."""
    done = []
    layout = CacheLayout(cache)
    db = layout.scores
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
                set_aside(folder, "a damaged candidate set", layout.quarantine, "candidates")
                done.append(f"{folder}: set aside in quarantine/; the next run computes it again")
        except CacheError:
            load_frozen(folder, rebuild=True, trust_stamps=False)
            done.append(f"{folder}: TREC files written again from candidates.parquet")
    for shard in sorted(layout.embeddings.glob("*/rows-*.npy")):
        if not _shard_ok(shard):
            shard.unlink()
            done.append(f"{shard}: deleted; the next run encodes it again")
    for part in sorted(layout.embeddings.glob("*/part-*.npy")):
        if not _part_ok(part):
            part.unlink()
            _keys_of(part).unlink(missing_ok=True)
            done.append(f"{part}: deleted; the next run encodes its texts again")
    for table in sorted(layout.corpus.glob("*.parquet")):
        try:
            pq.read_metadata(table)
        except Exception:  # noqa: BLE001
            table.unlink()
            done.append(f"{table}: deleted; the next run rebuilds it")
    for obj, problem in _outputs(cache):
        set_aside(obj, problem, layout.quarantine, "outputs")
        done.append(f"{obj}: {problem}; set aside in quarantine/, the next run makes it again")
    for tmp in sorted(layout.outputs.glob(".*")):
        if time.time() - tmp.stat().st_mtime > STALE_WORK_SECONDS:
            remove(tmp)
            done.append(f"{tmp}: left half-written by a stopped run; removed")
    intervals = layout.intervals
    if intervals.exists() and (problem := bootstraps.check(intervals)):
        set_aside(intervals, problem, layout.quarantine, "intervals", ("-wal", "-shm"))
        done.append(f"{intervals}: set aside in quarantine/; the next run computes its intervals again")
    for work in layout.entries("work"):
        if time.time() - work.stat().st_mtime > STALE_WORK_SECONDS:
            remove(work)
            done.append(f"{work}: left by a stopped run; removed")
    return done


def open_source(source: str):
    """A score cache to merge from (or into): a cache folder, a `.sqlite` file, or a shared store (folder or URL)."""
    path = Path(source).expanduser()
    if "://" not in source:
        if path.is_file():
            return SQLiteStore(path)
        if (layout := CacheLayout(path)).scores.is_file():
            return SQLiteStore(layout.scores)
        if not layout.shared_scores.is_dir():
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
    target = SharedStore(into) if into else SQLiteStore(CacheLayout(cache).scores)
    for source in sources:
        got = merge(target, open_source(source))
        yield f"{source} → {into or target.where}: {got['rows']} scores of {got['models']} model(s) merged"
