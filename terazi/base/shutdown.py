"""Stopping a run cleanly on SIGTERM or Ctrl-C, wherever it is.

Whoever holds the signal handler (terazi's own in the CLI, Prefect's inside a flow, which turns SIGTERM into a
`TerminationSignal` in the main thread), the main thread stops at once; but the work of a stage often runs in a
worker thread (a task the flow waits for), and Prefect's handler alone leaves it running while the flow waits for
it to finish. So every handler terazi installs first sets `STOP`: long loops call `check()` between units of work
(encoding and scoring batches, every torch forward pass of a model terazi loads, BM25 queries, bootstrap chunks,
corrupted queries, exported files) and stop at the next one. In a command (`graceful()`: `terazi run`, `terazi
serve`), if anything still hangs, a watchdog ends the process and its children (the temporary Prefect server
included) `GRACE_S` after the signal, so it is gone within 10 s. Elsewhere (`terazi.evaluate()` in a notebook) a
stop ends the run only: no watchdog, and `STOP` is cleared when the flow has ended, so the next run starts.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

STOP = threading.Event()
ENDING = threading.Event()  # inside `graceful()`: a stop ends the process
GRACE_S = 8.0
SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stopped(KeyboardInterrupt):
    """Raised in worker loops once a stop was requested."""


def check() -> None:
    """Call between units of work: raises `Stopped` after SIGTERM / Ctrl-C."""
    if STOP.is_set():
        raise Stopped("stop requested")


def stoppable(module):
    """A torch module that calls `check()` before every forward pass (each batch of encode / predict), returned."""
    module.register_forward_pre_hook(lambda *_: check())
    return module


def kill_children(timeout: float = 5.0) -> None:
    """Terminate every child process, kill those still alive after `timeout`, and wait for them (which reaps them).
    Only the run's own: a Prefect server it runs against (PREFECT_API_URL) is no child of it."""
    import psutil

    processes = psutil.Process().children(recursive=True)
    for p in processes:
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(processes, timeout=timeout)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=timeout)


def _watchdog(code: int) -> None:
    time.sleep(GRACE_S)
    kill_children(1.0)
    os._exit(code)


_stopped_by: list[int] = []  # the signal of the run's stop request, whatever exception the stop surfaced as


def stopped_by() -> int | None:
    """The signal that stopped the current (or the last) run, if one did."""
    return _stopped_by[0] if _stopped_by else None


def request_stop(signum: int) -> None:
    """Stop every loop at its next `check()`; in a command, the first request also arms the watchdog."""
    if not STOP.is_set():
        STOP.set()
        _stopped_by[:] = [signum]
        if ENDING.is_set():
            threading.Thread(target=_watchdog, args=(128 + signum,), daemon=True).start()


@contextmanager
def _handlers(make) -> Iterator[None]:
    """Within the block, each of SIGNALS handled by `make(previous handler)` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.getsignal(s) for s in SIGNALS}
    for s, h in before.items():
        signal.signal(s, make(h))
    try:
        yield
    finally:
        for s, h in before.items():
            signal.signal(s, h)


def _raise_interrupt(previous):
    def on_signal(signum, frame):
        request_stop(signum)
        raise KeyboardInterrupt(f"stopped by signal {signum}")

    return on_signal


def relaying(previous):
    """A signal handler that sets `STOP` (and in a command arms the watchdog), then does what `previous` did."""

    def on_signal(signum, frame):
        if previous is signal.SIG_IGN:
            return
        request_stop(signum)
        if callable(previous):  # Prefect's TerminationSignal, or the CLI's KeyboardInterrupt
            previous(signum, frame)
        raise KeyboardInterrupt(f"stopped by signal {signum}")

    return on_signal


@contextmanager
def graceful() -> Iterator[None]:
    """Within this block (a command), SIGTERM behaves like Ctrl-C, and both stop worker loops too. What is alive when
    it starts (the imports: Prefect's, polars', torch's objects) lives as long as the process: frozen out of the
    garbage collector, so that the collections a stage's allocations trigger scan only what the run makes (a stage
    that allocates per pair, as BM25 does, otherwise spends much of its time rescanning the imports' objects)."""
    gc.freeze()
    ENDING.set()
    hook, sys.unraisablehook = sys.unraisablehook, _quiet_once_stopping(sys.unraisablehook)
    try:
        with _handlers(_raise_interrupt):
            yield
    except KeyboardInterrupt:
        kill_children(2.0)
        gc.freeze()  # spare the interpreter's last collection a scan of torch's and Prefect's objects
        raise
    finally:
        ENDING.clear()
        sys.unraisablehook = hook


def _quiet_once_stopping(hook):
    """Python's hook for exceptions it cannot raise, without the stop's own: a signal that arrives while the main
    thread runs a callback (a weakref's, a finalizer's) raises its KeyboardInterrupt or Prefect's TerminationSignal
    there, where Python prints it as a traceback and goes on. Nothing is lost, as `STOP` is set and the loops end at
    their next `check()` (the watchdog bounds the rest); anything else is printed as before."""

    def on_unraisable(unraisable) -> None:
        if STOP.is_set() and not isinstance(unraisable.exc_value, Exception):
            return
        hook(unraisable)

    return on_unraisable


@contextmanager
def relayed() -> Iterator[None]:
    """Within a flow: whatever handles SIGTERM and SIGINT now (Prefect's handler) still does, after `STOP` is set;
    outside a command, `STOP` is cleared when the flow has ended (its worker threads are done by then)."""
    if not STOP.is_set():
        _stopped_by.clear()  # a new run: an earlier run's stop is not this one's
    try:
        with _handlers(relaying):
            yield
    finally:
        if not ENDING.is_set():
            STOP.clear()
