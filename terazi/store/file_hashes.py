"""Hashes of big inputs remembered across runs by their files' stat stamps, in the cache folder (`file-hashes.json`).

A warm run reads a model folder (a cross-encoder: 0.5-2 GB) and a frozen candidate set's files (TREC runs: hundreds
of MB) only to hash them: the model's hash is its identity, which keys every cache, and a frozen file is checked
against the hash recorded when it was frozen. A file whose stamp (device, inode, size, mtime) is the one it had when
it was last hashed has not been written since: any write moves mtime, and a file replaced, copied, synced or unpacked
in its place is another inode (or, copied with its times, at least another mtime to the nanosecond). So its hash is
taken from the book instead of its bytes, as make decides what changed (and git with `core.trustctime` off). ctime is
not trusted: a hard link or an unlink moves it, and every results folder links the frozen files of its run (with
ctime in the stamp, each warm run hashed again every TREC file the run before had linked).
What a stamp cannot see, bytes changed behind an mtime set back to the nanosecond or a disk flipping bits, is what
`terazi cache check` and `repair` are for: they hash every byte and never read the book.

The book is a small JSON file written atomically; two runs adding to it at once may lose one's entries, which only
costs a hash next time. Entries whose file is gone are dropped when it is written.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from terazi.base import fingerprint
from terazi.store.files import stat_stamp, write_atomic
from terazi.store.layout import CacheLayout

_lock = threading.Lock()

SETTLED_NS = 2_000_000_000  # a file written in the last 2 s may be written again within its mtime's tick: not recorded


_seen: dict[tuple, str] = {}  # this process's hashes, by what was hashed and its stamps


def by_stamp(key: str, stamps: list[list], book: Path | None, compute) -> str:
    """The hash of what `stamps` describe (`key`: what is hashed, by absolute path; one stamp per file, its mtime
    last): remembered for this process, and across runs in `book` when the stamps are the ones it recorded,
    else `compute()`, recorded (unless a file is too new to trust its stamp)."""
    seen = (key, json.dumps(stamps))
    if seen in _seen:
        return _seen[seen]
    if book is not None:
        with _lock:
            hit = _read(book).get(key)
        if hit and hit[0] == stamps:
            _seen[seen] = hit[1]
            return hit[1]
    value = _seen[seen] = compute()
    if book is not None and all(time.time_ns() - s[-1] >= SETTLED_NS for s in stamps):
        with _lock:
            entries = _read(book)
            entries[key] = [stamps, value]
            _write(book, entries)
    return value


def file_digest(path: str | Path, book: Path | None = None) -> str:
    """SHA-256 of one file's bytes (`fingerprint.of_file`), through the book (without one, remembered for this
    process only: a ranking that is scored and exported is hashed once)."""
    path = Path(path).resolve()
    return by_stamp(f"file:{path}", [stat_stamp(path)], book, lambda: fingerprint.of_file(path))


def folder_digest(folder: Path, files: list[Path], book: Path | None, compute) -> str:
    """`compute()` of a folder's `files` (their names and bytes), through the book: remembered while no file was
    added, removed or written."""
    folder = Path(folder).resolve()
    stamps = [[str(p.relative_to(folder)), *stat_stamp(p)] for p in files]
    return by_stamp(f"folder:{folder}", stamps, book, compute)


def book_in(cache_dir: str | Path | None) -> Path | None:
    """The book of a cache folder (None without one, or where it cannot be written: then everything is hashed)."""
    if cache_dir is None:
        return None
    folder = Path(cache_dir)
    return CacheLayout(folder).file_hashes if folder.is_dir() and os.access(folder, os.W_OK) else None


_parsed: dict[Path, tuple[list[int], dict]] = {}  # the book as last read, by its own stamp: parsed once per change


def _read(book: Path) -> dict:
    try:
        mark = stat_stamp(book)
        if (seen := _parsed.get(book)) and seen[0] == mark:
            return dict(seen[1])
        entries = json.loads(book.read_text(encoding="utf-8"))
        entries = entries if isinstance(entries, dict) else {}
        if time.time_ns() - mark[3] >= SETTLED_NS:  # a book written just now may be written again within its tick
            _parsed[book] = (mark, entries)
        return dict(entries)
    except (OSError, ValueError):
        return {}


def _write(book: Path, entries: dict) -> None:
    alive = {k: v for k, v in entries.items() if os.path.exists(k.split(":", 1)[1])}
    try:
        write_atomic(book, lambda p: p.write_text(json.dumps(alive, separators=(",", ":")), encoding="utf-8"))
    except OSError:  # a full or read-only disk: the hash is still right, only not remembered
        pass
