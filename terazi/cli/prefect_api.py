"""The CLI's side of Prefect: is the API reachable, and Prefect's console lines only with --verbose."""

from __future__ import annotations

import atexit
import logging
import os
import socket
import time
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from terazi import shutdown
from terazi.cli import kept_server, prefect_db, spare_server
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


TEMPORARY_LOG = "terazi-temporary-server.log"  # in PREFECT_HOME, beside the kept server's
LOG_LIMIT = 5 * 2**20  # started again from empty past this size


def _api_in_profile() -> bool:
    """A hint, read without importing Prefect: does the active Prefect profile set PREFECT_API_URL? Then no server
    process is started before Prefect's settings are known (they decide, either way)."""
    home = Path(os.environ.get("PREFECT_HOME") or "~/.prefect").expanduser()
    path = Path(os.environ.get("PREFECT_PROFILES_PATH") or home / "profiles.toml").expanduser()
    try:
        profiles = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    active = os.environ.get("PREFECT_PROFILE") or profiles.get("active") or "ephemeral"
    return bool(profiles.get("profiles", {}).get(active, {}).get("PREFECT_API_URL"))


def _spare_wanted() -> bool:
    """Whether to start the temporary server's process before Prefect's settings are known: not when the environment,
    the kept server or the active profile says where the API is."""
    return not (os.environ.get("PREFECT_API_URL") or kept_server.wanted() or _api_in_profile())


_early: list[spare_server.Spare] = []  # started by the command line before it read its arguments (`start_early`)


def start_early() -> None:
    """Start the temporary server's process first thing in `terazi run` and `terazi demo`, before the command imports
    typer, pydantic and its own modules: that server's start is what a run on it waits for (0.2 s sooner). A command
    that ends before its run takes it (a bad argument) ends it at exit, unused; `--help` starts none."""
    if not _early and _spare_wanted():
        _early.append(spare_server.Spare())
        atexit.register(_early[-1].close)  # after the run's own stop (registered later, run earlier): a no-op then


def _start(early: spare_server.Spare | None, processes: list[spare_server.Spare]):
    """The server this run uses, as (url, answering, exited, where, stop); None when a Prefect API is configured.
    Every server process it starts is added to `processes`, for the caller to end should anything fail."""
    import prefect.context
    from prefect.settings import PREFECT_API_URL, get_current_settings

    if PREFECT_API_URL.value():  # in the environment, the Prefect profile or the caller's settings context
        if early:
            early.close()
        return None
    with socket.socket() as s:  # a free port (the one race left, a port taken meanwhile, fails in one line below)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, **get_current_settings().to_environment_variables(exclude_unset=True),
           "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1",
           **prefect_db.start_settings()}  # a database this Prefect version migrated already is not migrated again
    if kept_server.wanted():  # started once, reused by later runs (terazi/cli/kept_server.py)
        url, answering, exited = kept_server.kept(env, port)
        return url, answering, exited, f" (see {kept_server.state_path().with_name('terazi-server.log')})", lambda: None
    if early and prefect.context.SettingsContext.get() is not prefect.context.GLOBAL_SETTINGS_CONTEXT:
        early.close()  # settings from the caller's context, which the early process imported Prefect without
        early = None
    url = f"http://127.0.0.1:{port}/api"
    log = kept_server.state_path().with_name(TEMPORARY_LOG)  # its shutdown's chatter off the terminal
    log.parent.mkdir(parents=True, exist_ok=True)
    server = early or spare_server.Spare(env)
    if server is not early:
        processes.append(server)
    server.serve(env, port, log, truncate=log.is_file() and log.stat().st_size > LOG_LIMIT)

    def answering() -> bool:
        import httpx

        try:
            return httpx.get(url + "/health", timeout=5.0).status_code == 200
        except httpx.HTTPError:
            return False

    def stop() -> None:
        if server.process.poll() is None:
            shutdown.end_process(server.process.pid)

    return url, answering, server.process.poll, f" (see {log})", stop


@contextmanager
def temporary_server() -> Iterator[Callable[[], None]]:
    """Without a Prefect API, start the temporary server Prefect would start for the flow now, so that its start-up
    (a process importing Prefect's server and opening its database: seconds) overlaps terazi's checks and imports;
    yields the wait for it, called just before the flow. Its process is started before this one imports Prefect
    (terazi/cli/spare_server.py): it imports the server while this process learns the settings, then runs
    Prefect's own app (`prefect.server.api.server:create_app`, UI off, ephemeral) with them. Not through Prefect's
    SubprocessASGIServer, because importing that class loads Prefect's whole server (FastAPI, SQLAlchemy, the API)
    into this process too: 3-6 s of CPU per run, by the machine's speed, for a process that only talks HTTP to it. This process then reaches
    it through PREFECT_API_URL (set in its environment and Prefect's global settings), so the flow, its logs and
    events go to that server as they would to Prefect's. The server's own output goes to
    `$PREFECT_HOME/terazi-temporary-server.log`, named by the one line that says it failed to start (its services
    logged tracebacks on the terminal when stopped at the end of a successful run). It is stopped when the process
    exits (after Prefect's workers have drained, as they register later), or at once when the block fails before
    the flow. Whether an API is set is read in the caller's context: Prefect's settings may live in a context
    variable (a test harness, `temporary_settings`) or a profile, and that server is not ours to start or stop (a
    process started early is then ended unused). With TERAZI_KEEP_SERVER=1 the server is kept between runs instead
    (terazi/cli/kept_server.py): started detached by the first run, reused by the next ones."""
    early = _early.pop() if _early else spare_server.Spare() if _spare_wanted() else None
    processes = [early] if early else []
    try:
        started = _start(early, processes)
    except BaseException:  # nothing started here outlives a failure before the flow
        for process in processes:
            process.close()
        raise
    if started is None:
        yield lambda: None
        return
    url, answering, exited, where, stop = started
    from prefect.context import refresh_global_settings_context
    from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS

    def ready() -> None:
        deadline = time.monotonic() + PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()
        while time.monotonic() < deadline:
            if (code := exited()) is not None:
                raise TeraziError(f"the temporary Prefect server at {url} exited with code {code} "
                                  f"before answering{where}")
            if answering():
                prefect_db.remember()
                return
            time.sleep(0.1)
        raise TeraziError(f"the temporary Prefect server did not answer at {url} within "
                          f"{PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value():.0f} s "
                          f"(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS){where}")

    atexit.register(stop)
    old = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = url
    refresh_global_settings_context()
    try:
        yield ready
    except BaseException:
        stop()
        if old is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = old
        refresh_global_settings_context()
        raise


HEARTBEAT = "PREFECT_FLOWS_HEARTBEAT_FREQUENCY"


@contextmanager
def no_heartbeats() -> Iterator[None]:
    """A flow started by a command sends no Prefect heartbeats unless PREFECT_FLOWS_HEARTBEAT_FREQUENCY is set.
    Prefect's heartbeat thread sleeps in 1 s steps and the flow's end joins it: up to a second added to every run,
    most of a warm rerun's flow. What heartbeats are for, telling a crashed run from a running one, terazi does
    itself: a run whose process died is marked crashed by the next run on its results folder (docs/reliability.md);
    deployments served by `terazi serve` keep Prefect's setting."""
    if os.environ.get(HEARTBEAT):
        yield
        return
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    with temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


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
