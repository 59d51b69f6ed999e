"""Stopping a run cleanly on SIGTERM or Ctrl-C.

The main thread gets a KeyboardInterrupt (Prefect then marks the flow run crashed and the results
folder keeps its "incomplete" marker); long loops in worker threads see `STOP` at their next
progress tick and stop too. If anything still hangs, a watchdog ends the process and its children
(the temporary Prefect server included) so that nothing is left behind.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import contextmanager
from typing import Iterator

STOP = threading.Event()
GRACE_S = 20.0


class Stopped(KeyboardInterrupt):
    """Raised in worker loops once a stop was requested."""


def check() -> None:
    """Call between units of work: raises `Stopped` after SIGTERM / Ctrl-C."""
    if STOP.is_set():
        raise Stopped("stop requested")


def kill_children(timeout: float = 5.0) -> None:
    """Terminate every child process (then kill what is left after `timeout`)."""
    import psutil

    children = psutil.Process().children(recursive=True)
    for c in children:
        try:
            c.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(children, timeout=timeout)
    for c in alive:
        try:
            c.kill()
        except psutil.NoSuchProcess:
            pass


def _watchdog(code: int) -> None:
    time.sleep(GRACE_S)
    kill_children(2.0)
    os._exit(code)


@contextmanager
def graceful() -> Iterator[None]:
    """Within this block, SIGTERM behaves like Ctrl-C, and both stop worker loops too."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum, frame):
        if not STOP.is_set():
            STOP.set()
            threading.Thread(target=_watchdog, args=(128 + signum,), daemon=True).start()
        raise KeyboardInterrupt(f"stopped by signal {signum}")

    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    for s in before:
        signal.signal(s, on_signal)
    try:
        yield
    except KeyboardInterrupt:
        kill_children(5.0)
        raise
    finally:
        for s, h in before.items():
            signal.signal(s, h)
