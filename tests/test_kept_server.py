"""TERAZI_KEEP_SERVER=1: the temporary Prefect server started once, reused by the next run, stopped on request or
when no run has used it for a while."""

from __future__ import annotations

import os
import sys
import time

import psutil
import pytest

from terazi.cli import kept_server


@pytest.fixture()
def home(tmp_path, monkeypatch):
    from prefect.settings import PREFECT_HOME, temporary_settings

    with temporary_settings({PREFECT_HOME: str(tmp_path)}):
        yield tmp_path


HEALTH = """
import http.server, sys
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/api/health" else 404)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
"""


def test_started_once_reused_then_stopped(home, monkeypatch):
    """The state file's protocol with a stand-in server (a process answering /api/health: Prefect's own takes ~10 s
    to start, and `serve` is Prefect's app behind uvicorn; benchmarks/bench_warm.py runs the real one)."""
    monkeypatch.setattr(kept_server, "_command", lambda port: [sys.executable, "-c", HEALTH, str(port)])
    env = {**os.environ, "PREFECT_HOME": str(home)}
    url, answering, exited = kept_server.kept(env, _free_port())
    deadline = time.monotonic() + 120
    while not answering():
        assert exited() is None, (home / "terazi-server.log").read_text()
        assert time.monotonic() < deadline, (home / "terazi-server.log").read_text()
        time.sleep(0.2)
    state = kept_server.status()
    assert state["url"] == url and state["users"] == [os.getpid()]
    again, answering_again, _ = kept_server.kept(env, _free_port())  # another port offered: the running one is used
    assert again == url and answering_again() and kept_server.status()["pid"] == state["pid"]
    assert kept_server.stop() == state["pid"]
    assert kept_server.status() is None and not (home / kept_server.STATE).exists()
    assert not psutil.pid_exists(state["pid"])
    assert kept_server.stop() is None


class _Server:
    should_exit = False


def test_stops_when_idle_with_no_run_alive_or_when_no_longer_named(home, monkeypatch):
    monkeypatch.setattr(kept_server, "WATCH_SECONDS", 0.01)
    path = home / kept_server.STATE
    app = kept_server._Activity(None)
    kept_server._write(path, {"pid": os.getpid(), "url": "http://127.0.0.1:1/api", "users": [os.getpid()]})  # a live user: kept
    server = _Server()
    watcher = kept_server.threading.Thread(target=kept_server._watch, args=(server, app, path, 0.05), daemon=True)
    watcher.start()
    time.sleep(0.3)
    assert not server.should_exit
    kept_server._write(path, {"pid": os.getpid(), "url": "http://127.0.0.1:1/api", "users": [2 ** 22 + 12345]})  # its runs are gone
    watcher.join(timeout=5)
    assert server.should_exit
    server, path_gone = _Server(), home / "other.json"  # the state names another server (or was removed): it stops
    kept_server._watch(server, kept_server._Activity(None), path_gone, 3600)
    assert server.should_exit


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_bad_idle_time_is_one_line_in_the_run_that_would_start_the_server(home, monkeypatch):
    from terazi.errors import TeraziError

    for bad in ("soon", "0", "-5", "nan"):
        monkeypatch.setenv(kept_server.IDLE, bad)
        with pytest.raises(TeraziError, match="TERAZI_KEEP_SERVER_IDLE"):
            kept_server.kept(dict(os.environ), 1)
    assert not (home / kept_server.STATE).exists()  # nothing started


def test_a_state_naming_another_url_is_not_followed(home):
    kept_server._write(home / kept_server.STATE, {"pid": os.getpid(), "url": "http://attacker.example:80/api",
                                                  "users": []})
    assert kept_server.status() is None and kept_server._read(home / kept_server.STATE) is None
