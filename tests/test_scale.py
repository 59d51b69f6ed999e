"""Sharded stages on a cluster: encoding shards and rerank chunks as tasks on Dask (and Ray) workers give the
thread runner's results bit for bit; a worker killed mid-chunk costs no pair twice; sharded search is exact."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from terazi.schemas import EvalConfig
from tests.scale_runs import DieOnceMidChunk, same_results, scale_config, task_run_names


@pytest.fixture(scope="module")
def dask_cluster(prefect_server):
    """A LocalCluster of two worker processes, used through its scheduler address as an external cluster would be.
    Its workers must reach the test's Prefect API, so the variable is set before they start."""
    from distributed import LocalCluster
    from prefect.settings import PREFECT_API_URL

    old = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = PREFECT_API_URL.value()
    # the workers' models see the run's pairs only (no latency probe): set by each nanny, so that a worker it starts
    # again after the killed-worker test's kill has it too (one inheriting this process's environment then probed)
    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        resources={"GPU": 1},
        env={"TERAZI_LATENCY_QUERIES": "0"},
    )
    yield cluster
    cluster.close()
    if old is None:
        os.environ.pop("PREFECT_API_URL", None)
    else:
        os.environ["PREFECT_API_URL"] = old


@pytest.fixture(scope="module")
def thread_run(prefect_server, tmp_path_factory, tiny_cross_encoder):
    from terazi.flows.evaluate import evaluate as run_evaluation
    from tests.conftest import make_tiny

    tmp = tmp_path_factory.mktemp("threads")
    data = make_tiny(tmp / "tiny")
    manifest = run_evaluation(scale_config(tmp, data, tiny_cross_encoder, "threads"))
    return data, manifest


def test_dask_workers_give_the_thread_runners_results(
    prefect_server, thread_run, tmp_path, tiny_cross_encoder, monkeypatch
):
    """On the cluster terazi starts itself (`task_runner_workers`, workers declaring the resources the model tasks
    ask for); the external cluster's address is used by the killed-worker test below."""
    from prefect.settings import PREFECT_API_URL

    from terazi.flows.evaluate import evaluate as run_evaluation

    data, threads = thread_run
    ce = next(r for r in threads.reranks if r.system == "tiny-ce")
    assert threads.candidates[0].shards == 3 and ce.pairs_unique == 40
    monkeypatch.setenv("PREFECT_API_URL", PREFECT_API_URL.value())  # the workers must reach the test's server
    monkeypatch.setenv("TERAZI_LATENCY_QUERIES", "0")  # their models see the run's pairs only (no latency probe)
    dask = run_evaluation(
        scale_config(
            tmp_path,
            data,
            tiny_cross_encoder,
            "dask",
            task_runner="dask",
            task_runner_workers=2,
            scale={"shard_size": 5, "query_shard_size": 4, "chunk_pairs": 8, "worker_resources": {"GPU": 1}},
        )
    )  # workers declare one GPU each
    same_results(Path(threads.run_dir), Path(dask.run_dir))
    assert dask.candidates[0].fingerprint == threads.candidates[0].fingerprint
    assert all(r.pairs_scored == r.pairs_unique for r in dask.reranks if r.system in ("bm25", "tiny-ce"))
    names = task_run_names(dask.flow_run_id)
    assert sum("tiny-ce chunk" in n for n in names) == 5, names  # 40 pairs, chunks of one 8-pair block
    assert sum(n.startswith("encode tiny corpus") for n in names) == 3
    assert sum(n.startswith("encode tiny queries") for n in names) >= 2


def test_a_worker_killed_mid_chunk_costs_no_pair_twice(dask_cluster, thread_run, tmp_path, tiny_cross_encoder):
    from distributed import Client

    from terazi.flows.evaluate import evaluate as run_evaluation
    from terazi.rerank.store import SQLiteStore

    data, threads = thread_run
    marker, log = tmp_path / "die", tmp_path / "scored.log"
    marker.touch()
    log.touch()
    with Client(dask_cluster.scheduler_address) as client:
        client.register_plugin(DieOnceMidChunk(str(marker), str(log)), name="die-once")
        try:
            run = run_evaluation(
                scale_config(
                    tmp_path,
                    data,
                    tiny_cross_encoder,
                    "killed",
                    task_runner="dask",
                    task_runner_address=dask_cluster.scheduler_address,
                    scale={"shard_size": 5, "query_shard_size": 4, "chunk_pairs": 24},
                )
            )
        finally:
            client.unregister_worker_plugin("die-once")
    assert not marker.exists()  # a worker did die mid-chunk
    ce = next(r for r in run.reranks if r.system == "tiny-ce")
    scored_by_model = sum(int(x) for x in log.read_text().split())
    assert scored_by_model == ce.pairs_unique == 40  # each pair reached the model once, the dead worker's block too
    store = SQLiteStore(Path(run.config["cache_dir"]) / "scores.sqlite")
    assert store.count() == 40  # tiny-ce's pairs, each stored once (bm25 bypasses the store)
    same_results(Path(threads.run_dir), Path(run.run_dir))


def test_a_chunk_that_fails_is_retried_and_scores_only_what_is_missing(
    thread_run, tmp_path, tiny_cross_encoder, monkeypatch
):
    """On the thread runner: a chunk raises after its first block; Prefect retries it; nothing is scored twice."""
    import terazi.tasks.rerank as rerank_tasks
    from terazi.flows.evaluate import evaluate as run_evaluation
    from terazi.rerank import metering
    from terazi.rerank.backends.torch_cross import TorchCrossEncoder

    data, threads = thread_run
    monkeypatch.setattr(rerank_tasks.rerank_chunk_task, "retry_delay_seconds", [0, 0])
    monkeypatch.setattr(metering, "LATENCY_QUERIES", 0)  # the model sees the run's pairs only (no latency probe)
    real, seen, failed = TorchCrossEncoder.score, [], []

    def flaky(scorer, pairs):
        if len(seen) == 1 and not failed:
            failed.append(1)
            raise OSError("injected: GPU fell over")
        seen.append(len(pairs))
        return real(scorer, pairs)

    monkeypatch.setattr(TorchCrossEncoder, "score", flaky)
    run = run_evaluation(
        scale_config(
            tmp_path,
            data,
            tiny_cross_encoder,
            "retried",
            scale={"shard_size": 5, "query_shard_size": 4, "chunk_pairs": 40},
        )
    )
    assert failed and sum(seen) == 40
    same_results(Path(threads.run_dir), Path(run.run_dir))


def test_worker_resources_become_dask_annotations_and_ray_options():
    import dask

    from terazi.flows.runners import ray_options, resource_context

    with resource_context("dask", {"GPU": 1}):
        assert dask.get_annotations() == {"resources": {"GPU": 1}}
    assert ray_options({"GPU": 1, "CPU": 2, "big-memory": 1}) == {
        "num_gpus": 1,
        "num_cpus": 2,
        "resources": {"big-memory": 1},
    }
    assert ray_options({}) == {}


def test_shard_by_shard_search_is_exact(tmp_path):
    """Per-shard top-k merged equals FAISS over the whole corpus (a corpus with exact duplicates included)."""
    import faiss

    from terazi.base.ties import id_order
    from terazi.models.vectors import save_array
    from terazi.retrieval.dense import exact_search, shard_bounds, shard_path, shards

    rng = np.random.default_rng(0)
    emb = rng.normal(size=(1000, 16)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    queries = emb[rng.integers(0, 1000, 50)] + 0.01 * rng.normal(size=(50, 16)).astype(np.float32)
    bounds = shard_bounds(len(emb), 300)
    for a, z in bounds:
        save_array(shard_path(tmp_path, a, z), emb[a:z])
    index = faiss.IndexFlatIP(16)
    index.add(emb)
    want_s, want_i = index.search(queries, 20)
    order = id_order(pl.Series([f"d{i:04d}" for i in range(len(emb))]))  # no tied scores: FAISS's order is the rule's
    got_s, got_i = exact_search(shards(tmp_path, bounds), queries, 20, order)
    assert np.array_equal(got_i, want_i)
    exact = np.take_along_axis(queries.astype(np.float64) @ emb.T.astype(np.float64), got_i, axis=1)
    assert np.abs(got_s - exact).max() < 1e-6 and np.abs(want_s - exact).max() < 1e-6  # both float32 products
    one_s, one_i = exact_search(shards(tmp_path, [(0, 300)]), queries, 500, order)  # depth beyond a shard
    assert one_i.shape == (50, 300)


def test_approximate_index_records_its_recall(tmp_path):
    from terazi.base.ties import id_order
    from terazi.models.vectors import save_array
    from terazi.retrieval.dense import (
        build_index,
        exact_search,
        recall_against_exact,
        search_index,
        shard_bounds,
        shard_path,
        shards,
    )

    rng = np.random.default_rng(1)
    emb = rng.normal(size=(30_000, 8)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    bounds = shard_bounds(len(emb), 12_000)
    for a, z in bounds:
        save_array(shard_path(tmp_path, a, z), emb[a:z])
    index, params = build_index(lambda: shards(tmp_path, bounds), len(emb), 8, "ivf", nprobe=8)
    assert params == {"type": "IndexIVFFlat", "nlist": int(4 * np.sqrt(30_000)), "nprobe": 8}  # 4·√n lists
    order = id_order(pl.Series([str(i) for i in range(len(emb))]))
    _, approx = search_index(index, emb[:100], 10, order, shards(tmp_path, bounds))
    _, exact = exact_search(shards(tmp_path, bounds), emb[:100], 10, order)
    recall = recall_against_exact(approx, exact)
    assert 0.3 < recall < 1.0 and recall_against_exact(exact, exact) == 1.0


@pytest.mark.ray
def test_ray_local_instance_gives_the_thread_runners_results(thread_run, tmp_path, tiny_cross_encoder):
    """`task_runner: ray` on a local Ray instance (prefect-ray, the `ray` extra; skipped without it)."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("prefect_ray")
    from prefect.settings import PREFECT_API_URL

    from terazi.flows.evaluate import evaluate as run_evaluation

    data, threads = thread_run
    env = {
        "PREFECT_API_URL": PREFECT_API_URL.value(),
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        **{k: os.environ[k] for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "PREFECT_HOME") if k in os.environ},
    }
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
    try:
        run = run_evaluation(scale_config(tmp_path, data, tiny_cross_encoder, "ray", task_runner="ray"))
    finally:
        ray.shutdown()
    same_results(Path(threads.run_dir), Path(run.run_dir))
    assert sum("tiny-ce chunk" in n for n in task_run_names(run.flow_run_id)) == 5


def test_two_concurrent_cli_runs_on_one_cache_score_each_pair_once(
    prefect_server, tmp_path, tiny_dataset, tiny_cross_encoder
):
    """Two `terazi run` processes started together on one cache: the pairs their manifests say they scored add up
    to the unique pairs of the cross-encoder (BM25 bypasses the store: a run scores all of its pairs or finds the
    other's ranking stored), and their leaderboards are identical."""
    import json
    import subprocess
    import sys

    from prefect.settings import PREFECT_API_URL

    env = {
        **os.environ,
        "PREFECT_API_URL": PREFECT_API_URL.value(),
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }
    args = [
        "--dataset",
        str(tiny_dataset),
        "--cache",
        str(tmp_path / "cache"),
        "--reranker",
        "bm25",
        "--reranker",
        f"cross-encoder:{tiny_cross_encoder}=tiny-ce",
        "--condition",
        "upper",
        "--depth",
        "10",
        "--rerank-depth",
        "8",
        "--offline",
    ]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "terazi.cli", "run", *args, "--out", str(tmp_path / name)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in "ab"
    ]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-2000:]
    manifests = [json.loads((tmp_path / name / "manifest.json").read_text()) for name in "ab"]
    for system in ("bm25", "tiny-ce"):
        a, b = ([r for r in m["reranks"] if r["system"] == system][0] for m in manifests)
        # 4 queries × 8 candidates, clean and upper, plus the isolated setting's pairs the two do not share
        assert a["pairs_unique"] == b["pairs_unique"] >= 64
        if (
            system == "bm25"
        ):  # each run scores all, unless the other's ranking was stored by then (terazi.store.derived)
            assert {a["pairs_scored"], b["pairs_scored"]} <= {0, a["pairs_unique"]}
            assert max(a["pairs_scored"], b["pairs_scored"]) == a["pairs_unique"]
        else:
            assert a["pairs_scored"] + b["pairs_scored"] == a["pairs_unique"]
    assert (tmp_path / "a" / "leaderboard.csv").read_bytes() == (tmp_path / "b" / "leaderboard.csv").read_bytes()


def test_a_served_run_may_use_only_the_servers_score_store(tmp_path, tiny_dataset):
    """A shared score store is a place workers write to: from the deployment form, only the server's own."""
    from terazi.base.errors import PolicyError
    from terazi.config.policy import ServicePolicy

    raw = {
        "datasets": [{"path": str(tiny_dataset)}],
        "out_dir": str(tmp_path / "r"),
        "cache_dir": str(tmp_path / "c"),
        "scale": {"score_store": "s3://team-bucket/terazi-scores"},
    }
    policy = ServicePolicy.for_service(EvalConfig.model_validate(raw))
    assert policy.apply(EvalConfig.model_validate(raw)).scale.score_store == "s3://team-bucket/terazi-scores"
    with pytest.raises(PolicyError, match="scale.score_store 's3://elsewhere/x': not the service's own"):
        policy.apply(EvalConfig.model_validate({**raw, "scale": {"score_store": "s3://elsewhere/x"}}))
