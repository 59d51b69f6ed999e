"""Progress of long scoring with pairs/second: a bar on a terminal, log lines elsewhere (CI, Prefect)."""

from __future__ import annotations

import logging
import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

log = logging.getLogger("terazi.progress")
LOG_EVERY_S = 30.0


@contextmanager
def pair_progress(description: str) -> Iterator[Callable[[int, int], None]]:
    """Yields on_progress(done, total)."""
    if not sys.stderr.isatty():
        start, last = time.perf_counter(), [time.perf_counter()]

        def log_line(done: int, total: int) -> None:
            now = time.perf_counter()
            if now - last[0] >= LOG_EVERY_S or done == total:
                last[0] = now
                log.info("%s: %d/%d pairs scored, %.1f pairs/s", description, done, total, done / max(now - start, 1e-9))

        yield log_line
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[rate]}"), TimeRemainingColumn())
    with Progress(*columns, transient=True) as bar:
        tid = bar.add_task(description, total=None, rate="")

        def update(done: int, total: int) -> None:
            task = bar.tasks[0]
            rate = done / task.elapsed if task.elapsed else 0.0
            bar.update(tid, completed=done, total=total, rate=f"{rate:6.1f} pairs/s")

        yield update
