"""A progress bar with pairs/second for long scoring, quiet when nobody is watching."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn


@contextmanager
def pair_progress(description: str) -> Iterator[Callable[[int, int], None]]:
    """Yields on_progress(done, total); draws a bar on an interactive terminal only."""
    if not sys.stderr.isatty():
        yield lambda done, total: None
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
