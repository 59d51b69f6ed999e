"""The temporary server's process is started before the run knows its settings; a run that learns a Prefect API is
configured after all (a profile, the caller's settings) ends it unused, having written nothing."""

from __future__ import annotations

import time

from prefect.settings import PREFECT_API_URL, PREFECT_HOME, temporary_settings

from terazi.cli import prefect_api, spare_server


def test_an_api_configured_outside_the_environment_ends_the_early_server_unused(tmp_path, monkeypatch):
    started: list[spare_server.Spare] = []

    class Recorded(spare_server.Spare):
        def __init__(self) -> None:
            super().__init__()
            started.append(self)

    monkeypatch.setattr(spare_server, "Spare", Recorded)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.delenv("TERAZI_KEEP_SERVER", raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))  # what the early process would write under, had it the line
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:9/api", PREFECT_HOME: str(tmp_path)}):
        t = time.monotonic()
        with prefect_api.temporary_server() as ready:
            ready()  # nothing to wait for: the configured API is used
            assert len(started) == 1 and started[0].process.poll() is not None  # ended, not left importing
        assert time.monotonic() - t < 10
    assert list(tmp_path.iterdir()) == []  # no log, no database: it never had its settings


def test_an_api_in_the_active_profile_starts_no_early_server(tmp_path, monkeypatch):
    (tmp_path / "profiles.toml").write_text('active = "work"\n[profiles.work]\n'
                                            'PREFECT_API_URL = "http://127.0.0.1:9/api"\n', encoding="utf-8")
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    monkeypatch.delenv("PREFECT_PROFILES_PATH", raising=False)
    monkeypatch.delenv("PREFECT_PROFILE", raising=False)
    assert prefect_api._api_in_profile()
    monkeypatch.setenv("PREFECT_PROFILE", "ephemeral")  # another profile active: no API there
    assert not prefect_api._api_in_profile()


def test_an_api_in_the_environment_starts_no_early_server(monkeypatch):
    def refused() -> None:
        raise AssertionError("a server process was started")

    monkeypatch.setattr(spare_server, "Spare", refused)
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:9/api"}):  # as a process started so reads it
        with prefect_api.temporary_server() as ready:
            ready()


def test_a_command_that_fails_before_its_run_ends_the_process_it_started_first(tmp_path):
    """`terazi run` starts the temporary server's process before it reads its arguments; a command that ends before
    its run (here an invalid configuration) ends it at exit, having written nothing."""
    import os
    import subprocess
    import sys

    import psutil

    def spares(parent: int | None = None) -> set[int]:  # the command's own (other tests may start theirs meanwhile)
        return {p.pid for p in psutil.process_iter(["cmdline", "ppid"]) if any(
            "spare_server.py" in a for a in p.info["cmdline"] or []) and parent in (None, p.info["ppid"])}

    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "TERAZI_KEEP_SERVER")}
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")
    seen: set[int] = set()
    proc = subprocess.Popen([sys.executable, "-m", "terazi.cli", "run", "--dataset", str(tmp_path / "ds"), "--depth", "0",
                             "--out", str(tmp_path / "out")], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    while proc.poll() is None:
        seen |= spares(proc.pid)
        time.sleep(0.05)
    out = proc.stdout.read()
    assert proc.returncode == 2 and "field 'depth'" in out and "Traceback" not in out
    assert seen, "no early server process was started"
    assert not seen & spares()  # ended by the command itself, not left to finish importing Prefect's server
    assert not (tmp_path / "prefect-home").exists() or list((tmp_path / "prefect-home").iterdir()) == []
