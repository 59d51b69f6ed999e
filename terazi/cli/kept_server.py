"""A temporary Prefect server kept between runs, where the user allows it (`TERAZI_KEEP_SERVER=1`).

Starting Prefect's server (a process importing its API and opening its database) costs several seconds, every run:
most of a warm rerun of a small benchmark. With `TERAZI_KEEP_SERVER=1` the first run starts it detached and later runs
on the same Prefect home (`PREFECT_HOME`, which holds the database) reuse it, so the daily loop pays it once. It is
the same server the temporary one is (Prefect's own app, UI off, the same database), on 127.0.0.1 only.

What keeps it from running forever: the state file `$PREFECT_HOME/terazi-server.json` names the server and the
terazi processes using it; the server stops itself when none of them is alive and it has answered no request for
`TERAZI_KEEP_SERVER_IDLE` seconds (default 1800), when the state file no longer names it, or on `terazi server stop`.
A server that does not answer, or runs another Prefect version, is stopped and replaced. Its lines go to
`$PREFECT_HOME/terazi-server.log`, not to the terminal of the run that happened to start it.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from terazi import shutdown
from terazi.errors import TeraziError

KEEP = "TERAZI_KEEP_SERVER"
IDLE = "TERAZI_KEEP_SERVER_IDLE"
STATE = "terazi-server.json"
WATCH_SECONDS = 5.0


def wanted() -> bool:
    return os.environ.get(KEEP, "").strip().lower() in ("1", "true", "yes")


def state_path() -> Path:
    from prefect.settings import PREFECT_HOME

    return Path(PREFECT_HOME.value()).expanduser() / STATE


def _read(path: Path) -> dict | None:
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = (isinstance(state, dict) and isinstance(state.get("pid"), int)
          and re.fullmatch(r"http://127\.0\.0\.1:\d+/api", str(state.get("url"))))
    return state if ok else None  # a state naming any other URL is not ours: runs never follow it off this machine


def _write(path: Path, state: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(state))
    tmp.replace(path)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One terazi process at a time reads and changes the state (two runs starting together start one server)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _healthy(url: str) -> bool:
    import httpx

    try:
        return httpx.get(url + "/health", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def idle_seconds() -> float:
    """TERAZI_KEEP_SERVER_IDLE, checked by the run that starts the server (a bad value is one line there, not a server
    that dies where nobody sees it)."""
    raw = os.environ.get(IDLE) or "1800"
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise TeraziError(f"{IDLE}={raw!r}: give the idle time in seconds, a number above 0")
    return value


def kept(env: dict[str, str], port: int) -> tuple[str, Callable[[], bool], Callable[[], int | None]]:
    """The kept server's API URL, this process registered as one of its users; started on `port` (with `env`) when
    none answers. Returns the URL, a poll that is True once it answers (at once for a server already running) and
    one that is its exit code once it has exited (None while it runs)."""
    import prefect

    idle_seconds()
    path = state_path()
    with _locked(path):
        state = _read(path)
        if state and psutil.pid_exists(state["pid"]) and state.get("version") == prefect.__version__ and _healthy(state["url"]):
            state["users"] = [p for p in state.get("users", []) if psutil.pid_exists(p)] + [os.getpid()]
            _write(path, state)
            return state["url"], lambda: True, lambda: None
        if state and psutil.pid_exists(state["pid"]):
            shutdown.end_process(state["pid"])  # not answering, or another Prefect version: replaced
        url = f"http://127.0.0.1:{port}/api"
        with open(path.with_name("terazi-server.log"), "ab") as log:
            server = subprocess.Popen(_command(port), env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                      start_new_session=True)
        _write(path, {"pid": server.pid, "url": url, "version": prefect.__version__, "users": [os.getpid()],
                      "started": time.time()})
    return url, lambda: server.poll() is None and _healthy(url), server.poll


def _command(port: int) -> list[str]:
    """The kept server's process: this module's `serve`, detached from the run that starts it."""
    return [sys.executable, "-m", "terazi.cli.kept_server", "--port", str(port)]


def status() -> dict | None:
    """The kept server's state when it is alive (pid, url, version, users alive), else None."""
    state = _read(state_path())
    if not state or not psutil.pid_exists(state["pid"]):
        return None
    return {**state, "users": [p for p in state.get("users", []) if psutil.pid_exists(p)]}


def stop() -> int | None:
    """Stop the kept server of this Prefect home; its pid, or None when none was running."""
    path = state_path()
    with _locked(path):
        state = _read(path)
        path.unlink(missing_ok=True)
    if not state or not psutil.pid_exists(state["pid"]):
        return None
    shutdown.end_process(state["pid"])
    return state["pid"]


class _Activity:
    """Prefect's ASGI app, noting the time of the last request."""

    def __init__(self, app):
        self.app, self.last = app, time.monotonic()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            self.last = time.monotonic()
        await self.app(scope, receive, send)


def _watch(server, app: _Activity, path: Path, idle: float) -> None:
    """Ask uvicorn to stop when the state no longer names this process, or no user is alive and nothing was asked
    for `idle` seconds."""
    while not server.should_exit:
        time.sleep(WATCH_SECONDS)
        state = _read(path)
        if state is None or state["pid"] != os.getpid():
            server.should_exit = True
        elif any(psutil.pid_exists(p) for p in state.get("users", [])):
            app.last = time.monotonic()
        elif time.monotonic() - app.last > idle:
            server.should_exit = True


def serve(port: int) -> None:
    """Run Prefect's server app (as `uvicorn --factory prefect.server.api.server:create_app` would) until idle."""
    import uvicorn
    from prefect.server.api.server import create_app

    idle = idle_seconds()
    app = _Activity(create_app())
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="on"))
    path = state_path()
    threading.Thread(target=_watch, args=(server, app, path, idle), daemon=True).start()
    server.run()
    with _locked(path):
        state = _read(path)
        if state and state["pid"] == os.getpid():
            path.unlink(missing_ok=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="terazi's kept Prefect server (started by terazi itself)")
    parser.add_argument("--port", type=int, required=True)
    serve(parser.parse_args().port)
