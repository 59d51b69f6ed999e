"""Running terazi as a service: served deployments, parameter validation, retries, Dask scale-out.

All against the session's temporary Prefect server (tests/conftest.py), which the test harness
starts and stops; subprocesses reach it through PREFECT_API_URL.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from schemas import EvalConfig

ROOT = Path(__file__).resolve().parents[1]


def tiny_config(tmp_path, dataset, **extra) -> dict:
    return {
        "datasets": [{"path": str(dataset), "name": "tiny"}],
        "rerankers": [{"name": "bm25", "kind": "bm25"}, {"name": "hybrid", "kind": "rrf", "fuse": ["first-stage", "bm25"]}],
        "conditions": ["clean", "upper"], "depth": 10, "rerank_depth": 5, "bootstrap_resamples": 200,
        "out_dir": str(tmp_path / "results"), "cache_dir": str(tmp_path / "cache"), "offline": True, **extra,
    }


def api_url() -> str:
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value()


def test_task_failing_twice_succeeds_on_retry(prefect_server, tmp_path, tiny_dataset, monkeypatch):
    import tasks.load
    from flows.evaluate import evaluate

    real, failures = tasks.load.load_beir, []

    def flaky(*args, **kwargs):
        if len(failures) < 2:
            failures.append(1)
            raise OSError("injected: disk not ready")
        return real(*args, **kwargs)

    monkeypatch.setattr(tasks.load, "load_beir", flaky)
    manifest = evaluate(EvalConfig.model_validate(tiny_config(tmp_path, tiny_dataset, run_name="retry")))
    assert len(failures) == 2
    assert (Path(manifest.run_dir) / "leaderboard.csv").is_file()


async def _wait_for_deployment(name: str, timeout: float):
    from prefect.client.orchestration import get_client

    deadline = time.monotonic() + timeout
    async with get_client() as client:
        while time.monotonic() < deadline:
            try:
                return await client.read_deployment_by_name(name)
            except Exception:
                await asyncio.sleep(1)
    raise TimeoutError(f"deployment {name} not registered within {timeout}s")


def test_served_deployment_runs_with_parameters_and_rejects_bad_ones(prefect_server, tmp_path, tiny_dataset):
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment

    env = {**os.environ, "PREFECT_API_URL": api_url(), "HF_HUB_OFFLINE": "1"}
    log = open(tmp_path / "serve.log", "w+")
    server = subprocess.Popen([sys.executable, "-m", "terazi.cli", "serve", "--limit", "2"], cwd=ROOT, env=env,
                              stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        try:
            asyncio.run(_wait_for_deployment("terazi-run/ad-hoc", 120))
        except TimeoutError:
            server.kill()
            log.seek(0)
            pytest.fail("terazi serve did not register its deployments:\n" + log.read()[-3000:])
        asyncio.run(_wait_for_deployment("terazi-nightly/nightly", 10))
        cfg = tiny_config(tmp_path, tiny_dataset, run_name="served")
        flow_run = run_deployment("terazi-run/ad-hoc", parameters={"config": cfg}, timeout=300)
        assert flow_run.state.is_completed(), flow_run.state
        assert (tmp_path / "results" / "served" / "leaderboard.csv").is_file()

        async def leaderboard_artifacts():
            async with get_client() as client:
                return [a for a in await client.read_artifacts() if a.key == "terazi-leaderboard"]

        assert any(str(tmp_path / "results" / "served") in (a.description or "") for a in asyncio.run(leaderboard_artifacts()))

        bad = tiny_config(tmp_path, tiny_dataset, depth=-5)
        with pytest.raises(Exception) as info:
            run_deployment("terazi-run/ad-hoc", parameters={"config": bad}, timeout=60)
        assert "depth" in str(info.value)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    assert server.returncode is not None


def test_dask_runner_gives_identical_results(prefect_server, tmp_path, tiny_dataset, monkeypatch):
    from flows.evaluate import run_evaluation

    monkeypatch.setenv("PREFECT_API_URL", api_url())  # worker processes must reach the same server
    threads = run_evaluation(EvalConfig.model_validate(tiny_config(tmp_path / "t", tiny_dataset, run_name="threads")))
    dask = run_evaluation(EvalConfig.model_validate(tiny_config(tmp_path / "d", tiny_dataset, run_name="dask",
                                                                 task_runner="dask", task_runner_workers=2)))
    a = pl.read_csv(Path(threads.run_dir) / "leaderboard.csv")
    b = pl.read_csv(Path(dask.run_dir) / "leaderboard.csv")
    assert a.equals(b)
    assert all(r.pairs_scored > 0 for r in dask.reranks if r.system == "bm25")  # scored afresh on the workers


def test_nightly_publishes_what_changed(prefect_server, tmp_path, tiny_dataset):
    from prefect.client.orchestration import get_client

    from flows.service import nightly

    cfg = EvalConfig.model_validate(tiny_config(tmp_path, tiny_dataset))
    first = nightly(cfg)
    assert "first nightly run" in first
    time.sleep(1.1)  # run folders are named by the second
    second_cfg = cfg.model_copy(update={"rerankers": cfg.rerankers[:1]})  # tonight the hybrid row is gone
    second = nightly(second_cfg)
    assert "systems gone: hybrid" in second
    runs = sorted((tmp_path / "results").iterdir())
    assert len(runs) == 2 and (runs[-1] / "changes.md").read_text() == second

    async def keys():
        async with get_client() as client:
            return {a.key for a in await client.read_artifacts()}

    assert "terazi-nightly-changes" in asyncio.run(keys())
