"""The CLI's side of Prefect: is the API reachable, and Prefect's console lines only with --verbose."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from terazi.errors import TeraziError


def check_api() -> None:
    """With PREFECT_API_URL set, fail in one line (and say how to fix it) when nothing answers there."""
    url = os.environ.get("PREFECT_API_URL")
    if not url:
        return
    import httpx

    try:
        httpx.get(url.rstrip("/") + "/health", timeout=5.0).raise_for_status()
    except httpx.HTTPError as e:
        raise TeraziError(f"cannot reach the Prefect API at {url} ({type(e).__name__}): start it with "
                          "`prefect server start`, or unset PREFECT_API_URL to run on a temporary local server") from None


@contextmanager
def temporary_server() -> Iterator[Callable[[], None]]:
    """Without a Prefect API, start the temporary server Prefect would start for the flow now, in a thread, so that
    its start-up (a process importing Prefect's server and opening its database: seconds) overlaps terazi's checks
    and imports; yields the wait for it, called just before the flow, which finds it running (Prefect keeps one such
    server per process). When the block fails before the flow, the server started here is stopped. Whether an API is
    set is read here, in the caller's context: Prefect's settings may live in a context variable (a test harness,
    `temporary_settings`) that a new thread does not see, and that server is not ours to start or stop."""
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():  # in the environment, the Prefect profile or the caller's settings context
        yield lambda: None
        return
    started, cancelled = [], threading.Event()

    def start() -> None:
        from prefect.server.api.server import SubprocessASGIServer

        if not cancelled.is_set():  # a check failed while Prefect's server module was imported: no server at all
            server = SubprocessASGIServer()
            server.start()
            started.append(server)

    thread = threading.Thread(target=start, name="terazi-prefect-server", daemon=True)
    thread.start()
    try:
        yield thread.join
    except BaseException:
        cancelled.set()
        thread.join()
        for server in started:
            server.stop()
        raise


class _OnlyWarningsOutsidePrefect(logging.Filter):
    """Keep Prefect's own run chatter (and failure tracebacks, which terazi prints as one line) off the
    terminal; the Prefect UI still receives every line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.name.startswith("prefect")


def quiet_console() -> None:
    """Hide Prefect's console lines unless --verbose (call after importing prefect)."""
    if os.environ.get("TERAZI_VERBOSE") == "1":
        return
    import prefect.main  # noqa: F401  (sets up Prefect's logging, whose console handler sits on the root logger;

    # a bare `import prefect` is lazy and does not, so the handler filtered here was replaced by the flow's import)
    from prefect.logging.handlers import PrefectConsoleHandler

    for handler in logging.getLogger().handlers:
        if isinstance(handler, PrefectConsoleHandler) and not any(
                isinstance(f, _OnlyWarningsOutsidePrefect) for f in handler.filters):
            handler.addFilter(_OnlyWarningsOutsidePrefect())
