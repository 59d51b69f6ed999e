"""Running terazi as a service: served deployments under a policy, everything on the run the user opens,
retries, a nightly that compares like with like, one set of defaults (Dask scale-out: tests/test_scale.py).

All against the session's temporary Prefect server (tests/conftest.py: a real server on loopback with
telemetry off); subprocesses reach it through PREFECT_API_URL.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import pytest
import yaml

from terazi.schemas import EvalConfig
from tests.conftest import TINY_FLAGS, tiny_config

ROOT = Path(__file__).resolve().parents[1]


def service_config(tmp_path, dataset, **extra) -> dict:
    """The tiny run a served deployment makes: BM25 and its fusion with the first stage."""
    rerankers = [{"name": "bm25", "kind": "bm25"}, {"name": "hybrid", "kind": "rrf", "fuse": ["first-stage", "bm25"]}]
    return tiny_config(tmp_path, dataset, rerankers=rerankers, bootstrap_resamples=200, **extra)


def api_url() -> str:
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value()


def test_task_failing_twice_succeeds_on_retry(prefect_server, tmp_path, tiny_dataset, monkeypatch):
    import terazi.data.loading as loading
    from terazi.flows.evaluate import evaluate

    real, failures = loading.load_beir, []

    def flaky(*args, **kwargs):
        if len(failures) < 2:
            failures.append(1)
            raise OSError("injected: disk not ready")
        return real(*args, **kwargs)

    monkeypatch.setattr(loading, "load_beir", flaky)
    manifest = evaluate(EvalConfig.model_validate(service_config(tmp_path, tiny_dataset, run_name="retry")))
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


@contextmanager
def served(tmp_path, config: dict, *options: str):
    """`terazi serve --config …` in a subprocess until the block ends."""
    cfg_file = tmp_path / f"serve-{time.monotonic_ns()}.yaml"
    cfg_file.write_text(yaml.safe_dump(config))
    env = {
        **os.environ,
        "PREFECT_API_URL": api_url(),
        "HF_HUB_OFFLINE": "1",
        "PREFECT_RUNNER_POLL_FREQUENCY": "1",
    }  # a triggered run starts within a second, not Prefect's 10
    log = open(tmp_path / "serve.log", "w+")
    server = subprocess.Popen(
        [sys.executable, "-m", "terazi.cli", "serve", "--config", str(cfg_file), "--limit", "2", *options],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        try:
            asyncio.run(_wait_for_deployment("terazi-evaluate/ad-hoc", 120))
            asyncio.run(_wait_for_deployment("terazi-nightly/nightly", 10))
        except TimeoutError:
            server.kill()
            log.seek(0)
            pytest.fail("terazi serve did not register its deployments:\n" + log.read()[-3000:])
        yield
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


async def _on_run(flow_run_id):
    """Artifacts and log lines that belong to one flow run."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, LogFilter, LogFilterFlowRunId

    async with get_client() as client:
        artifacts = await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )
        logs = await client.read_logs(
            log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])), limit=200
        )
    return artifacts, logs


def test_served_ad_hoc_run_carries_its_results_logs_and_policy(
    prefect_server, tmp_path, tiny_dataset, tiny_cross_encoder
):
    from prefect.deployments import run_deployment

    served_cfg = service_config(tmp_path, tiny_dataset)
    with served(tmp_path, served_cfg):
        cfg = service_config(tmp_path, tiny_dataset, run_name="served", benchmark="tiny-bench")
        del cfg["bootstrap_resamples"]  # the default, as the CLI uses below
        flow_run = run_deployment("terazi-evaluate/ad-hoc", parameters={"config": cfg}, timeout=300)
        assert flow_run.state.is_completed(), flow_run.state
        run_dir = tmp_path / "results" / "served"
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["kind"] == "ad-hoc" and manifest["flow_run_id"] == str(flow_run.id)

        # everything is on the run the user opens: artifacts and terazi's own log lines
        deadline, texts, keys = time.monotonic() + 20, "", set()
        while time.monotonic() < deadline:
            artifacts, logs = asyncio.run(_on_run(flow_run.id))
            keys, texts = {a.key for a in artifacts}, "\n".join(r.message for r in logs)
            if "tiny-bench-leaderboard" in keys and "scored" in texts:
                break
            time.sleep(1)
        assert {"tiny-bench-leaderboard", "tiny-bench-report", "tiny-bench-retention", "tiny-bench-comparisons"} <= keys
        fingerprint = manifest["datasets"][0]["fingerprint"]
        assert f"fingerprint {fingerprint}" in texts
        assert "bm25 on tiny:" in texts and "scored" in texts
        board = next(a for a in artifacts if a.key == "tiny-bench-leaderboard")
        assert "95% CI" in json.dumps(board.data) and "group" in (board.description or "")
        report = next(a for a in artifacts if a.key == "tiny-bench-report")
        assert str(run_dir / "report.html") in report.data

        # the form cannot reach outside the server's roots, nor switch on remote code
        cfg_code = service_config(tmp_path, tiny_dataset, run_name="refused")
        cfg_code["rerankers"] = [
            {"name": "ce", "kind": "cross-encoder", "model": tiny_cross_encoder, "trust_remote_code": True}
        ]
        cfg_out = service_config(tmp_path, tiny_dataset, run_name="refused", out_dir=str(tmp_path / "elsewhere"))
        for cfg_bad, words in (
            (cfg_code, ["rerankers.ce.trust_remote_code: refused by the service policy", "--allow-remote-code"]),
            (cfg_out, ["out_dir", "outside the service's results root"]),
        ):
            refused = run_deployment("terazi-evaluate/ad-hoc", parameters={"config": cfg_bad}, timeout=120)
            assert refused.state.is_failed(), refused.state
            # one line that says what to change, as the CLI says it: no exception name, no traceback in the run's log
            message = refused.state.message
            assert message.startswith(words[0].split(":")[0]) and "\n" not in message and "Error" not in message
            assert all(w in message for w in words), message
            deadline, logs = time.monotonic() + 20, ""
            while message not in logs and time.monotonic() < deadline:  # log lines reach the API in batches
                time.sleep(1)
                logs = "\n".join(r.message for r in asyncio.run(_on_run(refused.id))[1])
            assert message in logs and "Traceback" not in logs, logs
        assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "results" / "refused").exists()

        bad = service_config(tmp_path, tiny_dataset, depth=-5)
        with pytest.raises(Exception) as info:
            run_deployment("terazi-evaluate/ad-hoc", parameters={"config": bad}, timeout=60)
        assert "depth" in str(info.value)

    # the same evaluation from CLI flags and from a config file gives the same leaderboard
    from typer.testing import CliRunner

    from terazi.cli import app

    served_board = pl.read_csv(run_dir / "leaderboard.csv")
    flags = CliRunner().invoke(
        app,
        [
            "run",
            "--dataset",
            str(tiny_dataset),
            "--reranker",
            "bm25",
            "--reranker",
            "rrf:first-stage+bm25=hybrid",
            *TINY_FLAGS,
            "--out",
            str(tmp_path / "cli" / "flags"),
            "--cache",
            str(tmp_path / "cache"),
            "--offline",
        ],
    )
    assert flags.exit_code == 0, flags.output
    file_cfg = {k: v for k, v in cfg.items() if k not in ("out_dir", "run_name")}
    (tmp_path / "eval.json").write_text(json.dumps(file_cfg))
    from_file = CliRunner().invoke(
        app, ["run", "--config", str(tmp_path / "eval.json"), "--out", str(tmp_path / "cli" / "file")]
    )
    assert from_file.exit_code == 0, from_file.output
    for folder in ("flags", "file"):
        assert pl.read_csv(tmp_path / "cli" / folder / "leaderboard.csv").equals(served_board), folder


def test_10_the_forms_defaults_lie_inside_the_servers_roots(prefect_server, tmp_path, tiny_dataset):
    """`terazi serve --results-root R` with a config whose out_dir lies elsewhere: pressing Run with the form's
    defaults (no parameters) writes into R, and the cache into --cache-root, instead of being refused (issue 37)."""
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment

    root, cache = tmp_path / "served-results", tmp_path / "served-cache"
    with served(
        tmp_path,
        service_config(tmp_path, tiny_dataset, conditions=["clean"]),
        "--results-root",
        str(root),
        "--cache-root",
        str(cache),
    ):

        async def defaults():  # once this server has registered it (an earlier test's may still be there)
            async with get_client() as client:
                for _ in range(60):
                    form = (await client.read_deployment_by_name("terazi-evaluate/ad-hoc")).parameters["config"]
                    if form["out_dir"].startswith(str(tmp_path)):
                        return form
                    await asyncio.sleep(1)
            return form

        form = asyncio.run(defaults())
        assert (form["out_dir"], form["cache_dir"]) == (str(root), str(cache))
        run = run_deployment("terazi-evaluate/ad-hoc", timeout=300)  # Run, with every default as the form shows it
        assert run.state.is_completed(), run.state
    manifest = json.loads(next(root.glob("*/manifest.json")).read_text())
    assert manifest["kind"] == "ad-hoc" and Path(manifest["run_dir"]).parent == root
    assert (cache / "candidates").is_dir() and not (tmp_path / "results").exists()


def test_remote_code_is_allowed_only_when_the_server_says_so(
    prefect_server, tmp_path, tiny_dataset, tiny_cross_encoder
):
    from prefect.deployments import run_deployment

    cfg = service_config(tmp_path, tiny_dataset, run_name="remote-code", conditions=["clean"])
    cfg["rerankers"] = [
        {
            "name": "ce",
            "kind": "cross-encoder",
            "model": tiny_cross_encoder,
            "max_length": 64,
            "trust_remote_code": True,
        }
    ]
    # (refused without --allow-remote-code: the ad-hoc test above)
    with served(
        tmp_path, service_config(tmp_path, tiny_dataset), "--allow-model", tiny_cross_encoder, "--allow-remote-code"
    ):
        allowed = run_deployment("terazi-evaluate/ad-hoc", parameters={"config": cfg}, timeout=300)
        assert allowed.state.is_completed(), allowed.state
    assert (tmp_path / "results" / "remote-code" / "manifest.json").is_file()


def test_nightly_compares_with_the_previous_nightly_of_the_same_benchmark(prefect_server, tmp_path, tiny_dataset):
    from terazi.flows.evaluate import evaluate
    from terazi.flows.nightly import nightly

    cfg = EvalConfig.model_validate(service_config(tmp_path, tiny_dataset, benchmark="tiny-nightly"))
    first = nightly(cfg)
    assert "first nightly run of benchmark `tiny-nightly`" in first
    # an ad-hoc run with other systems, into the same results folder, in between
    evaluate(cfg.model_copy(update={"rerankers": cfg.rerankers[:1], "run_name": "adhoc"}))
    time.sleep(1.1)  # run folders are named by the second
    second = nightly(cfg)
    runs = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert len(runs) == 3
    nightlies = [r for r in runs if r != "adhoc"]
    assert f"changes from {nightlies[0]} to {nightlies[1]}" in second
    assert "systems gone" not in second and "new systems" not in second and "benchmark itself changed" not in second
    assert (tmp_path / "results" / nightlies[1] / "changes.md").read_text() == second

    # a changed benchmark (another encoder depth) is said plainly, not as systems gone
    time.sleep(1.1)
    third = nightly(cfg.model_copy(update={"depth": 8, "rerankers": cfg.rerankers[:1]}))
    assert "the benchmark itself changed**: first stage" in third

    from tests.conftest import artifacts_of

    wanted = ["tiny-nightly-nightly-changes", "tiny-nightly-nightly-leaderboard"]
    assert set(wanted) <= set(artifacts_of(keys=wanted))


def test_interrupted_run_is_never_a_baseline(prefect_server, tmp_path, tiny_dataset, monkeypatch):
    import terazi.tasks.results as aggregate
    from terazi.flows.nightly import nightly
    from terazi.results import run_folder as results
    from terazi.schemas.layout import RunLayout

    cfg = EvalConfig.model_validate(service_config(tmp_path, tiny_dataset, benchmark="tiny-crash"))
    nightly(cfg)

    def crash(*args, **kwargs):
        raise RuntimeError("injected crash while aggregating")

    monkeypatch.setattr(aggregate.aggregate_task, "fn", crash)
    time.sleep(1.1)
    with pytest.raises(RuntimeError, match="injected crash"):
        nightly(cfg)
    crashed = max((tmp_path / "results").iterdir(), key=lambda p: p.name)
    assert not RunLayout(crashed).is_complete() and not (crashed / "manifest.json").exists()
    assert "injected crash" in json.loads((crashed / results.MARKER).read_text())["reason"]
    monkeypatch.undo()
    time.sleep(1.1)
    third = nightly(cfg)
    assert crashed.name not in third  # compared with the first, completed nightly
