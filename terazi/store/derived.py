"""Derived things kept once in the cache folder under the hash of what makes them (`key`, the one key builder every
stage uses): stage outputs, hard-linked into each results folder, and single values (a table, a text).

The daily loop reruns the same datasets, candidates and rows with one thing changed. A stage whose inputs did not
change (its input files' bytes, its parameters, and the code that makes it: `terazi.store.codehash`) finds its output
files under `outputs/<key>/` in the cache folder and links them into the results folder: nothing is computed and no
byte is written again. The files are the same inodes (a copy where the file system has no hard links), so a results
folder costs its new files only; every reader (trec_eval, ranx, polars, `terazi score`, `terazi analyze`) sees
ordinary files. Objects are read-only and never rewritten: a writer in the results folder replaces a linked file,
it does not write into it.

A shared inode can still be written in place by whoever may (root ignores the read-only mode: an `>>` onto a run file
of an old results folder). So each object records, when stored, every file's stat stamp (`files.stat_stamp`) and
SHA-256: before an object is linked or reported stored its stamps are compared (a stat per file), and one that no
longer matches is set aside under `quarantine/` and made again, said in one log line; `terazi cache check` compares
every byte with the recorded hash. Reuse also marks the object used (its meta file's mtime), which is what
`terazi cache prune` reads.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from terazi.base import fingerprint
from terazi.base.paths import link, mark_used
from terazi.store import codehash, file_hashes
from terazi.store.files import remove, set_aside, stat_stamp, write_atomic
from terazi.store.layout import OUTPUT_RECORD as META
from terazi.store.layout import CacheLayout

log = logging.getLogger("terazi.store.derived")


def key(stage: str, *parts: Any, maker: str) -> str:
    """The key of a derived thing: its name, every input (JSON-able values; Paths by content) and the code of
    `maker`, the module that makes it (pass `__name__`). The parts must name everything the thing's content and its
    paths in the results folder (dataset, system) depend on."""
    return f"{stage}-{fingerprint.of_json([stage, codehash.of_module(maker), *[_part(p) for p in parts]])}"


def _part(value: Any) -> Any:
    if isinstance(value, Path):
        return file_hashes.file_digest(value)  # hashed once per process while its stamp is unchanged
    if isinstance(value, (list, tuple)):
        return [_part(v) for v in value]
    return value


def changed(obj: Path, record: dict) -> str | None:
    """The first file of a stored object whose bytes are not the ones stored (None: all as stored). A file whose
    stamp is the recorded one has not been written since; one whose stamp moved (a copied or restored cache) is
    hashed, and its new stamp recorded when the bytes are the same."""
    moved = False
    for name, entry in record["files"].items():
        try:
            if stat_stamp(obj / name) == entry[0]:
                continue
            if fingerprint.of_file(obj / name) != entry[1]:
                return name
        except OSError:
            return name
        entry[0], moved = stat_stamp(obj / name), True
    if moved:
        _write_record(obj / META, record)
    return None


def damaged(obj: Path) -> str | None:
    """What is wrong with a stored object, every byte read (`terazi cache check`): None when it is sound."""
    try:
        files = json.loads((obj / META).read_text())["files"]
    except (KeyError, TypeError):
        return "stored by an older terazi (no record of its files): no run uses it"
    except (OSError, ValueError):
        return "its record (.meta.json) is missing or unreadable"
    for name, (_, digest) in files.items():
        try:
            if fingerprint.of_file(obj / name) != digest:
                return f"{name} was changed after it was stored"
        except OSError:
            return f"{name} is missing"
    return None


def _set_aside(obj: Path, why: str) -> None:
    """Move a stored object into the cache's `quarantine/`: the next use makes it again."""
    set_aside(obj, why, CacheLayout(obj.parent.parent).quarantine, "outputs")


def _write_record(path: Path, record: dict) -> None:
    try:
        write_atomic(path, lambda p: p.write_text(json.dumps(record)))
    except OSError:  # a read-only cache: the stamps are checked by hash again next time
        pass


def _sound(obj: Path) -> dict | None:
    """The record of a stored object whose files are as stored, marked used now; None (the object set aside when
    changed) otherwise."""
    try:
        record = json.loads((obj / META).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        _set_aside(obj, "its record (.meta.json) is unreadable")
        return None
    if (name := changed(obj, record)) is not None:
        _set_aside(obj, f"{name} was changed after it was stored")
        return None
    mark_used(obj / META)  # `terazi cache prune` removes what no recent run used
    return record


def stored(cache_dir: str | Path | None, stage_key: str) -> dict | None:
    """The meta of a stored output whose files are as stored, or None (none, or set aside as changed)."""
    if cache_dir is None:
        return None
    record = _sound(CacheLayout(cache_dir).part("outputs", stage_key))
    return None if record is None else record["meta"]


def _one_file(
    cache_dir: str | Path | None,
    name: str,
    make: Callable[[], Any],
    read: Callable[[Path], Any],
    write: Callable[[Any, Path], None],
) -> Any:
    """A value made once per name and kept as one file among the stored outputs (written aside, then renamed); made
    each time without a cache. Read back, never linked, so nothing outside the cache can write into it."""
    if cache_dir is None:
        return make()
    path = CacheLayout(cache_dir).part("outputs", name)
    if path.is_file():
        try:
            value = read(path)
            mark_used(path)
            return value
        except Exception as e:  # noqa: BLE001 - damaged (any reader's error): made again, as its key says
            log.warning("stored output %s is unreadable (%s); making it again", path.name, e)
    value = make()
    write_atomic(path, lambda p: write(value, p))
    return value


def text(cache_dir: str | Path | None, stage_key: str, make: Callable[[], str]) -> str:
    """A text made once per key and kept among the stored outputs (a rendered plot)."""
    return _one_file(
        cache_dir,
        f"{stage_key}.txt",
        make,
        lambda p: p.read_text(encoding="utf-8"),
        lambda text, p: p.write_text(text, encoding="utf-8"),
    )


def table(cache_dir: str | Path | None, stage_key: str, make: Callable[[], pl.DataFrame]) -> pl.DataFrame:
    """A frame made once per key and kept among the stored outputs (an intermediate no results folder shows, e.g.
    the first stage's per-query recall)."""
    return _one_file(cache_dir, f"{stage_key}.parquet", make, pl.read_parquet, lambda frame, p: frame.write_parquet(p))


def reuse(cache_dir: str | Path | None, stage_key: str, out_dir: str | Path, make: Callable[[Path], dict]) -> dict:
    """The files of output `stage_key` in `out_dir`, made only when the cache has none (or only a changed one):
    `make(folder)` writes them under `folder` at the paths they have under `out_dir` (a results folder's layout) and
    returns a JSON-able meta, which is returned every time after. Concurrent runs making the same output keep the
    first one stored. Without a cache folder (a stage called on its own), `make(out_dir)` writes them in place."""
    if cache_dir is None:
        give_back()
        return make(Path(out_dir))
    obj = CacheLayout(cache_dir).part("outputs", stage_key)
    record = _sound(obj)
    if record is None:
        give_back()
        record = _store(obj, make)
    for name in record["files"]:
        link(obj / name, Path(out_dir) / name)
    return record["meta"]


def give_back() -> None:
    """The C heap's free pages handed back to the system before a stage makes its outputs. glibc keeps what earlier
    stages freed (the encoder's, the search's, numpy's buffers) mapped in its arenas, more the larger the benchmark,
    and a stage whose tables polars makes (its own allocator) cannot reuse it: the process's peak was those leftovers
    plus the stage's own tables (benchmarks/bench_scale_up.py). Nothing to do where the C library is not glibc."""
    if (trim := _malloc_trim()) is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    import ctypes  # here, not at import: most commands never make a stage's outputs

    try:
        return ctypes.CDLL(None).malloc_trim  # the process's own symbols: glibc's where it is the C library
    except (OSError, AttributeError, TypeError):  # macOS, musl, Windows
        return None


def _store(obj: Path, make: Callable[[Path], dict]) -> dict:
    """Make an object aside, record its files' stamps and hashes, and move it into place (unless another run stored
    it meanwhile: then that one is used, or, when it was changed since, set aside and replaced by this one)."""

    def made(tmp: Path) -> dict:
        meta = make(tmp)
        files = {}
        for f in sorted(p for p in tmp.rglob("*") if p.is_file()):
            f.chmod(0o444)
            files[str(f.relative_to(tmp))] = [stat_stamp(f), fingerprint.of_file(f)]
        record = {"meta": meta, "files": files, "stored": time.time()}
        (tmp / META).write_text(json.dumps(record))
        return record

    if obj.is_dir() and not (obj / META).is_file():
        remove(obj)  # a stored output without its record is incomplete
    for _ in range(2):
        record = write_atomic(obj, made, folder=True, keep_theirs=True)
        if (stored := _sound(obj)) is not None:
            return stored  # ours, or the same one another run stored first
    return record
