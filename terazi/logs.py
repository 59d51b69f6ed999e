"""terazi's log lines in the Prefect run they belong to.

terazi logs with the standard `logging` module (logger `terazi.*`), which Prefect does not capture
by default. `send_to_prefect` adds Prefect's API handler to the `terazi` logger, filtered to records
emitted inside a flow or task run, so served runs, CLI runs and Dask workers alike show every
terazi line (fingerprints, pairs scored, progress) on the run's page in the UI.
"""

from __future__ import annotations

import logging


class _InsideARun(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        from prefect.context import FlowRunContext, TaskRunContext

        return FlowRunContext.get() is not None or TaskRunContext.get() is not None


def send_to_prefect() -> None:
    """Idempotent: attach Prefect's API log handler to the `terazi` logger (INFO and above)."""
    from prefect.logging.handlers import APILogHandler

    log = logging.getLogger("terazi")
    if any(isinstance(h, APILogHandler) for h in log.handlers):
        return
    handler = APILogHandler()
    handler.addFilter(_InsideARun())
    log.addHandler(handler)
    if log.level == logging.NOTSET or log.level > logging.INFO:
        log.setLevel(logging.INFO)
