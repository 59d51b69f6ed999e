"""How a file gets into the cache folder, and out of the way when it is damaged: each written once here.

- `write_atomic`: a file or folder is made under a temporary name beside its place, then renamed into it, so a
  killed process leaves no half file and a second process sees all or nothing.
- `stat_stamp`: what says a file was not written since it was last read (device, inode, size, mtime; mtime last).
- `set_aside`: a damaged entry moved into `quarantine/`, in a folder of its own with one record (`set-aside.json`:
  where it was, why, when), so that the next run makes it again and a person can still read what went wrong.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

RECORD = "set-aside.json"
T = TypeVar("T")
log = logging.getLogger("terazi.store")


def temporary_name(target: Path) -> Path:
    """A name beside `target` that no other writer uses, hidden (a dot name: no reader of the folder lists it)."""
    return target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")


def write_atomic(target: Path, write: Callable[[Path], T], folder: bool = False, keep_theirs: bool = False) -> T:
    """`write(tmp)` makes the file (or, with `folder`, fills the new folder) `tmp`, which is then renamed to
    `target`; returns what `write` returned. A folder replaces one already there, unless `keep_theirs`: then one
    another process put there meanwhile is kept (it is the same) and this one dropped."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_name(target)
    if folder:
        tmp.mkdir()
    try:
        value = write(tmp)
        if folder and not keep_theirs:
            shutil.rmtree(target, ignore_errors=True)
        try:
            os.replace(tmp, target)  # a rename keeps every file's inode and mtime: recorded stamps stay true
        except OSError:
            if not (folder and keep_theirs and target.is_dir()):
                raise
        return value
    finally:
        remove(tmp)


def remove(path: Path) -> None:
    """A file or folder gone, whichever it is (nothing when it is not there)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def stat_stamp(path: Path) -> list[int]:
    st = os.stat(path)
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def set_aside(
    item: Path, why: str, quarantine: Path, kind: str, sidecars: Iterable[str] = (), derived: bool = True
) -> Path:
    """Move `item` (and the files named by its name plus each of `sidecars`: a SQLite file's `-wal`, `-shm`) into a
    folder of its own under `quarantine`, with its record; returns where `item` went. Where the move fails, a
    `derived` item is removed (the next use makes it again); any other is left where it is, and the error raised."""
    entry = quarantine / f"{kind}-{item.name}-{datetime.now(UTC):%Y%m%d-%H%M%S%f}-{uuid.uuid4().hex[:6]}"
    kept = entry / item.name
    try:
        entry.mkdir(parents=True)
        for suffix in ("", *sidecars):
            if (src := Path(f"{item}{suffix}")).exists():
                shutil.move(src, f"{kept}{suffix}")
        record = {"from": str(item), "why": why, "when": datetime.now(UTC).isoformat(timespec="seconds")}
        write_atomic(entry / RECORD, lambda p: p.write_text(json.dumps(record, indent=1), encoding="utf-8"))
    except OSError:
        if not derived:
            raise
        for suffix in ("", *sidecars):
            remove(Path(f"{item}{suffix}"))
    log.warning("%s: %s; set aside in quarantine/, made again when needed", item, why)
    return kept
