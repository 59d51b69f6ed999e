"""Progress of long work (encoding, scoring): a bar on a terminal, a log line every 30 s elsewhere.

Log lines go to the `terazi` logger, so they reach the Prefect run's logs in served runs and on
Dask workers. Every tick also checks whether a stop was requested (terazi.base.shutdown).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)

from terazi.base import shutdown

log = logging.getLogger("terazi.base.progress")
LOG_EVERY_S = 30.0


@contextmanager
def progress(description: str, unit: str = "pairs") -> Iterator[Callable[[int, int], None]]:
    """Yields on_progress(done, total): a log line at most every 30 s (and at the end), plus a bar on a terminal."""
    start = time.perf_counter()
    last = [start]

    def log_line(done: int, total: int) -> None:
        shutdown.check()
        now = time.perf_counter()
        if now - last[0] >= LOG_EVERY_S or done == total:
            last[0] = now
            rate = done / max(now - start, 1e-9)
            eta = f", about {(total - done) / rate:.0f}s left" if rate > 0 and done < total else ""
            log.info(
                "%s: %d/%d %s, %.1f %s/s%s", description, done, total, unit, rate, unit, eta, extra={"progress": True}
            )

    if not sys.stderr.isatty():
        yield log_line
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, transient=True) as bar:
        tid = bar.add_task(description, total=None, rate="")

        def update(done: int, total: int) -> None:
            log_line(done, total)
            task = bar.tasks[0]
            rate = done / task.elapsed if task.elapsed else 0.0
            bar.update(tid, completed=done, total=total, rate=f"{rate:6.1f} {unit}/s")

        yield update


class HideProgressLines(logging.Filter):
    """For a terminal handler while a bar shows the same progress."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(record, "progress", False)
