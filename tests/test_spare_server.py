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
