"""SIGTERM to a running `terazi run`: it stops, leaves no process behind (its temporary Prefect server
included), and its results folder says incomplete."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import make_tiny

ROOT = Path(__file__).resolve().parents[1]


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def slow_run(ds, run, cache, env: dict, **output) -> subprocess.Popen:
    """`terazi run` in a process of its own, long enough (20 samples of each variant) to be stopped halfway."""
    command = ["run", "--dataset", str(ds), "--out", str(run), "--cache", str(cache), "--offline", "--samples", "20"]
    return subprocess.Popen([sys.executable, "-m", "terazi.cli", *command], cwd=ROOT, env=env, **output)


def test_sigterm_stops_the_run_and_everything_it_started(tmp_path):
    ds = make_tiny(tmp_path / "tiny")
    run = tmp_path / "results" / "run"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}  # a temporary server of its own
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")
    proc = slow_run(ds, run, tmp_path / "cache", env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 180
    while not (run / ".terazi-incomplete").exists():  # the flow has started: the server is up
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline, "the run did not start"
        time.sleep(0.2)
    family = [proc.pid] + [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
    assert len(family) >= 2, "expected the temporary Prefect server as a child process"
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("terazi run was still running 30 s after SIGTERM") from None
    while not all(gone(p) for p in family) and time.monotonic() - sent < 30:
        time.sleep(0.2)
    assert all(gone(p) for p in family), [p for p in family if not gone(p)]
    assert proc.returncode != 0
    assert "Traceback" not in out
    marker = json.loads((run / ".terazi-incomplete").read_text())
    assert marker["status"] == "stopped" and re.search(r"signal|Termination|Interrupt", marker["reason"]), marker
    assert not (run / "manifest.json").exists()


def test_a_signal_landing_in_a_callback_prints_no_traceback(monkeypatch, capsys):
    """A SIGTERM that arrives while the main thread runs a weakref's callback raises its KeyboardInterrupt there, where
    Python can only print it (seen under load: a traceback on a stopped run's terminal); `STOP` carries the stop. Any
    other exception a callback raises is still printed."""
    import weakref

    from terazi.base import shutdown

    class Thing:
        pass

    def landed(_):
        raise KeyboardInterrupt("stopped by signal 15")

    def failed(_):
        raise RuntimeError("a real bug")

    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)  # Python's own, printing to sys.stderr
    try:
        with shutdown.graceful():
            shutdown.STOP.set()  # what the signal handler sets (without arming the watchdog)
            a, b = Thing(), Thing()
            refs = [weakref.ref(a, landed), weakref.ref(b, failed)]
            del a, b
    finally:
        shutdown.STOP.clear()
    assert all(r() is None for r in refs) and sys.unraisablehook is sys.__unraisablehook__
    printed = capsys.readouterr().err
    assert "KeyboardInterrupt" not in printed and "RuntimeError: a real bug" in printed


def test_a_stop_that_surfaces_as_another_error_is_recorded_as_the_stop(tmp_path):
    """A signal can land where Prefect turns it into an error of its own (seen under load: "ValueError: Task run is
    not set" as a SIGTERMed run's reason); the folder still says which signal stopped it. The next run's own error is
    recorded as it is."""
    from terazi.base import shutdown
    from terazi.flows.lifecycle import results_folder

    def reason(name: str, error: Exception, signum: int | None) -> str:
        with pytest.raises(type(error)):
            with results_folder(str(tmp_path), name, "cli", "x"):
                if signum:
                    shutdown.request_stop(signum)  # what the handler does first (outside a command: no watchdog)
                raise error
        return json.loads((tmp_path / name / ".terazi-incomplete").read_text())["reason"]

    assert (
        reason("a", ValueError("Task run is not set"), 15) == "stopped by signal 15 (ValueError: Task run is not set)"
    )
    assert reason("b", shutdown.Stopped("stop requested"), 2) == "stopped by signal 2"
    assert reason("c", ValueError("boom"), None) == "ValueError: boom" and not shutdown.STOP.is_set()


def test_a_killed_run_is_marked_crashed_by_the_next_run(prefect_server, tmp_path):
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL

    from terazi.flows.evaluate import evaluate
    from terazi.schemas import EvalConfig

    ds = make_tiny(tmp_path / "tiny")
    run = tmp_path / "results" / "killed"
    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value()}
    proc = slow_run(ds, run, tmp_path / "cache", env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (run / ".terazi-incomplete").exists() or not json.loads((run / ".terazi-incomplete").read_text()).get(
        "flow_run_id"
    ):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.2)
    flow_run_id = json.loads((run / ".terazi-incomplete").read_text())["flow_run_id"]
    proc.kill()
    proc.wait()

    async def state():
        async with get_client() as client:
            return (await client.read_flow_run(flow_run_id)).state

    assert asyncio.run(state()).is_running()  # nobody told the server
    evaluate(
        EvalConfig.model_validate(
            {
                "datasets": [{"path": str(ds)}],
                "conditions": ["clean"],
                "depth": 10,
                "rerank_depth": 5,
                "out_dir": str(tmp_path / "results"),
                "run_name": "next",
                "cache_dir": str(tmp_path / "cache"),
                "offline": True,
            }
        )
    )
    assert asyncio.run(state()).is_crashed()
    marker = json.loads((run / ".terazi-incomplete").read_text())
    assert marker["status"] == "stopped" and "process that ran it is gone" in marker["reason"]
