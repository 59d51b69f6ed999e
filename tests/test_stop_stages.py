"""SIGTERM in every heavy stage: `terazi run` is gone within 10 s and its results folder is marked stopped.

Each run has one stage made slow (tests/slowly.py: every forward pass or BM25 query sleeps) so the signal lands
inside it, on a dataset of 12 passages and 40 queries whose first stage comes from TREC runs (no encoding unless
the encoding is the stage under test). Prefect installs its own SIGTERM handler inside a flow, which alone would
stop only the main thread and leave a task's worker thread scoring; these tests are what shows that it no longer
does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from terazi.data.beir import write_beir
from tests.conftest import TINY_DOCS

ROOT = Path(__file__).resolve().parents[1]
QUERIES = [(f"q{i}", f"soru {i}: {TINY_DOCS[i % 12][1]} {TINY_DOCS[(3 * i) % 12][2][:30]}") for i in range(40)]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """The dataset, with `runs/clean.trec`: every passage for every query, a first stage without a model."""
    root = tmp_path_factory.mktemp("stop")
    write_beir(
        root / "ds",
        [{"_id": i, "title": t, "text": x} for i, t, x in TINY_DOCS],
        [{"_id": q, "text": x} for q, x in QUERIES],
        [(q, TINY_DOCS[i % 12][0], 1) for i, (q, _) in enumerate(QUERIES)],
    )
    lines = [f"{q} Q0 {d} {r + 1} {12 - r} runs" for q, _ in QUERIES for r, (d, _, _) in enumerate(TINY_DOCS)]
    (root / "runs").mkdir()
    (root / "runs" / "clean.trec").write_text("\n".join(lines) + "\n")
    return root


def stop_during(
    stage: str,
    data: Path,
    tmp: Path,
    rerankers: list[dict],
    seconds: float = 1.0,
    extra: dict | None = None,
    flags: tuple[str, ...] = (),
    signum: int = signal.SIGTERM,
) -> float:
    """Run with `stage` slowed, `signum` once it is running; the seconds until the process was gone."""
    dataset = {"path": str(data / "ds"), "name": "stop"}
    if stage != "encoding":
        dataset["first_stage_runs"] = str(data / "runs")
    config = {
        "datasets": [dataset],
        "conditions": ["clean"],
        "rerankers": rerankers,
        "depth": 12,
        "rerank_depth": 12,
        "robustness": "end-to-end",
        "encoder": {"batch_size": 1},
        **(extra or {}),
    }
    (tmp / "config.yaml").write_text(yaml.safe_dump(config))
    mark, run = tmp / "running", tmp / "results" / "run"
    env = {**os.environ, "PREFECT_API_URL": os.environ["PREFECT_API_URL"]}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.slowly",
            stage,
            str(mark),
            str(seconds),
            "run",
            "--config",
            str(tmp / "config.yaml"),
            "--out",
            str(run),
            "--cache",
            str(tmp / "cache"),
            "--offline",
            *flags,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not mark.exists():
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline, f"{stage} did not start"
        time.sleep(0.1)
    time.sleep(0.3)  # inside the stage's loop
    sent = time.monotonic()
    proc.send_signal(signum)
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"terazi run was still running 30 s after signal {signum} during {stage}") from None
    took = time.monotonic() - sent
    assert proc.returncode != 0, out
    assert "Traceback" not in out, out
    marker = json.loads((run / ".terazi-incomplete").read_text())
    assert marker["status"] == "stopped" and "signal" in marker["reason"], marker
    assert not (run / "manifest.json").exists()
    # the stop ended the run's own processes only: the server it ran against still answers
    assert httpx.get(env["PREFECT_API_URL"].rstrip("/") + "/health", timeout=10).status_code == 200
    return took


@pytest.fixture
def api(prefect_server):
    from prefect.settings import PREFECT_API_URL

    os.environ["PREFECT_API_URL"] = PREFECT_API_URL.value()
    yield
    os.environ.pop("PREFECT_API_URL")


CASES = {
    "encoding": lambda m: [{"name": "bm25", "kind": "bm25"}],
    "cross-encoder": lambda m: [{"name": "ce", "kind": "cross-encoder", "model": m["ce"], "batch_size": 1}],
    "bi-encoder": lambda m: [{"name": "bi", "kind": "bi-encoder", "model": m["minilm"], "batch_size": 1}],
    "llm": lambda m: [{"name": "llm", "kind": "llm-reranker", "model": m["llm"], "batch_size": 1}],
    "bm25": lambda m: [{"name": "bm25", "kind": "bm25"}],
}


@pytest.mark.parametrize("stage", list(CASES))
def test_sigterm_while_a_model_stage_runs(stage, api, data, tmp_path, minilm_path, tiny_cross_encoder, tiny_llm):
    models = {"minilm": minilm_path, "ce": tiny_cross_encoder, "llm": tiny_llm}
    took = stop_during(stage, data, tmp_path, CASES[stage](models))
    assert took < 10, f"{stage}: {took:.1f}s after SIGTERM"


def test_ctrl_c_while_the_bi_encoder_scores(api, data, tmp_path, minilm_path):
    """SIGINT, which Prefect leaves alone: the same stop (the issue's run took 25 s)."""
    took = stop_during("bi-encoder", data, tmp_path, CASES["bi-encoder"]({"minilm": minilm_path}), signum=signal.SIGINT)
    assert took < 10, f"Ctrl-C: {took:.1f}s"


def test_sigterm_during_the_bootstrap(api, data, tmp_path):
    """Millions of resamples (allowed with --no-limits): the statistics stop too."""
    took = stop_during(
        "bootstrap",
        data,
        tmp_path,
        [{"name": "bm25", "kind": "bm25"}],
        seconds=0,
        extra={"bootstrap_resamples": 3_000_000},
        flags=("--no-limits",),
    )
    assert took < 10, f"bootstrap: {took:.1f}s after SIGTERM"


def test_serve_ends_on_sigterm_after_its_server_was_killed(prefect_server, tmp_path):
    """A Prefect server of its own (a copy of the session's migrated database), killed while `terazi serve` serves;
    the runner alone keeps retrying the dead server, so only the relayed watchdog ends it."""
    import shutil
    import socket
    import urllib.request

    from prefect.settings import PREFECT_SERVER_DATABASE_CONNECTION_URL

    shutil.copy(PREFECT_SERVER_DATABASE_CONNECTION_URL.value().split("///", 1)[1], tmp_path / "prefect.db")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    api = f"http://127.0.0.1:{port}/api"
    env = {
        **os.environ,
        "PREFECT_HOME": str(tmp_path),
        "PREFECT_SERVER_API_PORT": str(port),
        "PREFECT_API_URL": api,
        "PREFECT_SERVER_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{tmp_path / 'prefect.db'}",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    served = None
    try:

        def up(path: str) -> bool:
            try:
                return urllib.request.urlopen(api + path, timeout=2).status == 200
            except OSError:
                return False

        deadline = time.monotonic() + 120
        while not up("/health"):
            assert server.poll() is None and time.monotonic() < deadline, "the Prefect server did not start"
            time.sleep(0.5)
        served = subprocess.Popen(
            [sys.executable, "-m", "terazi.cli", "serve"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        while not up("/deployments/name/terazi-nightly/nightly"):
            assert served.poll() is None, served.stdout.read()
            assert time.monotonic() < deadline, "terazi serve did not register its deployments"
            time.sleep(0.5)
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        time.sleep(2)  # the runner polls a server that is gone
        sent = time.monotonic()
        served.send_signal(signal.SIGTERM)
        served.communicate(timeout=30)
        assert time.monotonic() - sent < 10, f"terazi serve took {time.monotonic() - sent:.1f}s after SIGTERM"
    finally:
        for p in (served, server):
            if p is not None and p.poll() is None:
                p.kill()


def test_a_stop_in_the_python_api_ends_the_run_not_the_process():
    """`terazi.evaluate()` in a notebook, Ctrl-C: the flow's relay stops its worker loops (STOP) and raises in the
    main thread, but arms no watchdog (which would end the kernel), and the next run starts with STOP clear."""
    import threading

    from terazi.base import shutdown

    seen, before = [], set(threading.enumerate())
    previous = signal.signal(
        signal.SIGINT, signal.default_int_handler
    )  # a notebook's; an earlier test may leave another
    try:
        with pytest.raises(KeyboardInterrupt):
            with shutdown.relayed():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
                seen.append("not interrupted")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert not seen and not shutdown.STOP.is_set()
    assert set(threading.enumerate()) - before == set()  # no watchdog thread
