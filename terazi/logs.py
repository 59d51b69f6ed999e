"""terazi and Prefect's logging: terazi's log lines in the Prefect run they belong to, and the settings Prefect reads
when it is imported.

terazi logs with the standard `logging` module (logger `terazi.*`), which Prefect does not capture
by default. `send_to_prefect` adds Prefect's API handler to the `terazi` logger, filtered to records
emitted inside a flow or task run, so served runs, CLI runs and Dask workers alike show every
terazi line (fingerprints, pairs scored, progress) on the run's page in the UI.
"""

from __future__ import annotations

import logging
import os

# Prefect settings that must be in place before prefect is imported: no telemetry unless the user opted in, and a
# start-up timeout that suits small machines. Values already set win.
PREFECT_DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
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
    handler = APILogHandler()
    handler.addFilter(_InsideARun())
    log.addHandler(handler)
    if log.level == logging.NOTSET or log.level > logging.INFO:
        log.setLevel(logging.INFO)
