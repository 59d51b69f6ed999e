"""terazi and Prefect's logging: terazi's log lines in the Prefect run they belong to and on a command's terminal,
Prefect's own lines kept off that terminal, and the settings Prefect reads when it is imported.

terazi logs with the standard `logging` module (logger `terazi.*`), which Prefect does not capture
by default. `send_to_prefect` adds Prefect's API handler to the `terazi` logger, filtered to records
emitted inside a flow or task run, so served runs, CLI runs and Dask workers alike show every
terazi line (fingerprints, pairs scored, progress) on the run's page in the UI.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING

from terazi.base.outside import blotting

if TYPE_CHECKING:
    from rich.console import Console

# Prefect settings that must be in place before prefect is imported: no telemetry unless the user opted in, and a
# start-up timeout that suits small machines. Prefect's temporary server (started by a run without PREFECT_API_URL,
# with this environment) registers no block types: terazi uses none, and hashing every block class to learn that the
# registration can be skipped is part of every start; a `prefect server start` registers them as usual. Values
# already set win.
PREFECT_DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "PREFECT_SERVER_REGISTER_BLOCKS_ON_START": "false",
    "PREFECT_SERVER_MEMOIZE_BLOCK_AUTO_REGISTRATION": "false",
    "TOKENIZERS_PARALLELISM": "false",
}


def prefect_defaults() -> None:
    """Put `PREFECT_DEFAULTS` into the environment where the caller has not set them (before prefect is imported)."""
    for k, v in PREFECT_DEFAULTS.items():
        os.environ.setdefault(k, v)


class _InsideARun(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        from prefect.context import FlowRunContext, TaskRunContext

        return FlowRunContext.get() is not None or TaskRunContext.get() is not None


class _NoTracebackForRefusals(logging.Filter):
    """A served run that terazi refuses ends Failed with its one line (`flows.runtime.refusals_as_failed`); Prefect's
    engine then logs that failed state once more, as an "unexpected exception" with a traceback of its own code. That
    record is dropped: the run's log keeps terazi's line and Prefect's "Finished in state Failed(…)"."""

    def filter(self, record: logging.LogRecord) -> bool:
        from prefect.exceptions import FailedRun

        return not (record.exc_info and isinstance(record.exc_info[1], FailedRun))


def send_to_prefect() -> None:
    """Idempotent: attach Prefect's API log handler to the `terazi` logger (INFO and above), and keep a refused
    run's log free of Prefect's traceback."""
    from prefect.logging.handlers import APILogHandler

    log = logging.getLogger("terazi")
    if any(isinstance(h, APILogHandler) for h in log.handlers):
        return
    logging.getLogger("prefect.flow_runs").addFilter(_NoTracebackForRefusals())
    handler = blotting(APILogHandler())
    handler.addFilter(_InsideARun())
    log.addHandler(handler)
    for name in ("prefect.flow_runs", "prefect.task_runs"):  # Prefect's own lines of a run: failures, tracebacks
        for other in logging.getLogger(name).handlers:
            blotting(other)
    if log.level == logging.NOTSET or log.level > logging.INFO:
        log.setLevel(logging.INFO)


def to_terminal(console: Console, verbose: bool = False) -> None:
    """terazi's log lines on `console` (a command's stderr): DEBUG with `verbose`, INFO otherwise, not passed on to
    the root logger; on a terminal, the lines a progress bar shows are left to the bar. A second call replaces the
    first one's handler."""
    from rich.logging import RichHandler

    from terazi.base.progress import HideProgressLines

    handler = blotting(RichHandler(console=console, show_path=False, show_time=False, markup=False))
    if sys.stderr.isatty():
        handler.addFilter(HideProgressLines())
    log = logging.getLogger("terazi")
    log.handlers[:] = [h for h in log.handlers if not isinstance(h, RichHandler)] + [handler]
    log.setLevel(logging.DEBUG if verbose else logging.INFO)
    log.propagate = False


class _OnlyWarningsOutsidePrefect(logging.Filter):
    """Keep Prefect's own run chatter (and failure tracebacks, which terazi prints as one line) off the
    terminal; the Prefect UI still receives every line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.name.startswith("prefect")


def quiet_console(verbose: bool) -> None:
    """Hide Prefect's console lines from a command's terminal unless `verbose` (call after importing prefect); the
    lines shown are blotted (`terazi.base.outside`)."""
    import prefect.main  # noqa: F401  (sets up Prefect's logging, whose console handler sits on the root logger;

    # a bare `import prefect` is lazy and does not, so the handler filtered here was replaced by the flow's import)
    from prefect.logging.handlers import PrefectConsoleHandler

    for handler in logging.getLogger().handlers:
        if not isinstance(handler, PrefectConsoleHandler):
            continue
        blotting(handler)
        if not verbose and not any(isinstance(f, _OnlyWarningsOutsidePrefect) for f in handler.filters):
            handler.addFilter(_OnlyWarningsOutsidePrefect())
