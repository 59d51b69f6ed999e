"""How a file gets into the cache folder, and out of the way when it is damaged: each written once here (the one
write-then-rename, `write_atomic`, is a leaf's: `terazi.base.paths`, which results folders use too).

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
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from terazi.base.paths import remove, write_atomic

RECORD = "set-aside.json"
log = logging.getLogger("terazi.store")


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
