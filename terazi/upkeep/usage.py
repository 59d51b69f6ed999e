"""What the cache folder weighs, part by part (`terazi cache du`), and pruning what no recent run used (`prune`).

The cache only grows by itself: every new model, corpus, candidate set and code version adds entries. An *entry* is
the unit a run uses whole: a stored output (`outputs/<key>/`, or one file for a kept table or plot), a frozen
candidate set, a vector store, a corpus table, an ONNX export, the intervals file, a quarantined item, a stopped
run's plan (the parts `terazi.store.layout.PARTS` marks prunable). A run marks each entry it uses (its mtime,
`terazi.base.paths.mark_used`), so an entry's age is the time since a run last needed it. Pruning removes entries older
than a given age, or the least recently used until the folder fits a size budget; a warm run afterwards makes again
exactly what was removed (vectors are encoded again, outputs computed again: no pair is scored, the score store is never
pruned). Entries used in the last `GRACE_SECONDS` are never removed (a run's plan under `work/`: none younger than a
day), so a prune beside a running run cannot take what it is using.

Sizes are the blocks a file holds on disk. Outputs are hard-linked into results folders: removing such a file from
the cache frees nothing while a results folder still links it, so `freed` counts only files with no other link.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from terazi.present.table import Table
from terazi.store.layout import PARTS, CacheLayout

GRACE_SECONDS = 600
WORK_GRACE_SECONDS = 24 * 3600  # a plan is removed by its run when it ends: one this old belongs to a stopped run


@dataclass
class Entry:
    part: str
    path: Path
    used: float  # seconds since the epoch
    size: int  # bytes on disk
    freed: int  # bytes a removal gives back (files no results folder links)


def _sizes(path: Path) -> tuple[int, int]:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file() and not p.is_symlink()]
    size = freed = 0
    for f in files:
        try:
            st = f.stat()
        except OSError:
            continue
        size += st.st_blocks * 512
        freed += st.st_blocks * 512 if st.st_nlink == 1 else 0
    return size, freed


def _used(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def entries(cache: Path) -> list[Entry]:
    """Every prunable entry of the cache folder (temporary items being written by a run are not entries)."""
    layout = CacheLayout(cache)
    return [
        Entry(part, e, _used(layout.used_marker(part, e)), *_sizes(e))
        for part in PARTS
        if PARTS[part].prunable
        for e in layout.entries(part)
    ]


def usage(cache: Path) -> list[tuple[str, int, int, int]]:
    """(part, entries, bytes on disk, bytes a removal would free) per part, the kept scores included."""
    rows: dict[str, list[int]] = {}
    for e in entries(cache):
        row = rows.setdefault(e.part, [0, 0, 0])
        row[0] += 1
        row[1] += e.size
        row[2] += e.freed
    for name, part in PARTS.items():
        if part.paid_for and (path := CacheLayout(cache).part(name)).exists():
            size, _ = _sizes(path)
            row = rows.setdefault("scores (kept)", [0, 0, 0])
            row[0] += 1
            row[1] += size
    return [(part, *values) for part, values in rows.items()]


def usage_table(cache: Path) -> Table:
    """`usage` as a table: sizes in binary units, the kept scores never pruned, and the total."""
    rows = usage(cache)
    body = [
        [part, str(n), human(size), "never pruned" if part.endswith("(kept)") else human(freed)]
        for part, n, size, freed in rows
    ]
    body.append(["total", str(sum(r[1] for r in rows)), human(sum(r[2] for r in rows)), ""])
    return Table(["part", "entries", "on disk", "freed if removed"], body, align=["left", "right", "right", "right"])


def prunable(
    cache: Path, older_than: float | None = None, max_size: int | None = None, now: float | None = None
) -> list[Entry]:
    """The entries a prune removes: those unused for `older_than` seconds, then, least recently used first, as many
    as it takes for the whole folder to fit `max_size` bytes. Entries used within `GRACE_SECONDS` are kept."""
    now = time.time() if now is None else now
    candidates = sorted(
        (e for e in entries(cache) if now - e.used >= (WORK_GRACE_SECONDS if e.part == "work" else GRACE_SECONDS)),
        key=lambda e: e.used,
    )
    chosen = [e for e in candidates if older_than is not None and now - e.used >= older_than]
    if max_size is not None:
        total = sum(_sizes(p)[0] for p in cache.iterdir()) if cache.is_dir() else 0
        total -= sum(e.size for e in chosen)
        for e in candidates:
            if total <= max_size:
                break
            if e not in chosen:
                chosen.append(e)
                total -= e.size
    return chosen


def prune(cache: Path, older_than: float | None, max_size: int | None, dry_run: bool = False) -> Iterator[str]:
    """Remove the entries `prunable` chooses (with `dry_run`, remove nothing): a line for each as it goes, naming
    what it weighed, freed and when it was last used, then a line of the totals."""
    folder, now = cache.resolve(), time.time()
    chosen = prunable(folder, older_than, max_size, now)
    for e in chosen:
        if not dry_run:
            remove(e)
        yield (
            f"{'would remove' if dry_run else 'removed'} {e.part}: {e.path.relative_to(folder)} "
            f"({human(e.size)}, frees {human(e.freed)}, last used {age(now - e.used)} ago)"
        )
    would = "would be " if dry_run else ""
    yield (
        f"{cache}: {len(chosen)} entr{'y' if len(chosen) == 1 else 'ies'} {would}removed, "
        f"{human(sum(e.freed for e in chosen))} {would}freed"
    )


def remove(entry: Entry) -> None:
    if entry.path.is_dir():
        shutil.rmtree(entry.path, ignore_errors=True)
    else:
        entry.path.unlink(missing_ok=True)
        for side in (entry.path.with_name(entry.path.name + "-wal"), entry.path.with_name(entry.path.name + "-shm")):
            side.unlink(missing_ok=True)


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"
