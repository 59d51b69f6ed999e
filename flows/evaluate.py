"""The evaluation flow: datasets → corruptions → frozen first stage → cached reranking → metrics → leaderboard.

Tasks are coarse (one per dataset × condition for corruption, per dataset for the first stage,
per dataset × system for reranking and scoring) and exchange manifests only.
"""

from __future__ import annotations

import json
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path

from prefect import flow

from schemas import FIRST_STAGE, EvalConfig, RunManifest
from tasks.aggregate import aggregate_task, publish_task
from tasks.corrupt import corrupt_queries_task
from tasks.load import load_dataset_task
from tasks.rerank import first_stage_task, fuse_task, rerank_task
from tasks.retrieve import retrieve_task
from tasks.score import score_task
from terazi import __version__


def run_folder(config: EvalConfig) -> Path:
    name = config.run_name or datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    path = (Path(config.out_dir) / name).resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def task_runner(config: EvalConfig):
    """The runner the config asks for: threads by default, Dask or Ray to spread model tasks out."""
    if config.task_runner == "dask":
        from prefect_dask import DaskTaskRunner

        if config.task_runner_address:
            return DaskTaskRunner(address=config.task_runner_address)
        return DaskTaskRunner(cluster_kwargs={"n_workers": config.task_runner_workers, "threads_per_worker": 1,
                                              "processes": True})
    if config.task_runner == "ray":
        from prefect_ray import RayTaskRunner

        return RayTaskRunner(address=config.task_runner_address) if config.task_runner_address else RayTaskRunner()
    from prefect.task_runners import ThreadPoolTaskRunner

    return ThreadPoolTaskRunner()


def run_evaluation(config: EvalConfig) -> RunManifest:
    """Run the flow with the task runner named in the config."""
    return evaluate.with_options(task_runner=task_runner(config))(config)


@flow(name="terazi-evaluate", log_prints=True, validate_parameters=True)
def evaluate(config: EvalConfig) -> RunManifest:
    """Evaluate the configured rerankers on the configured datasets and write a results folder."""
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    run_dir = run_folder(config)
    out, cache = str(run_dir), str(Path(config.cache_dir).resolve())

    datasets = [load_dataset_task(spec) for spec in config.datasets]
    variants, candidates, rankings, scores = [], [], [], []
    for ds in datasets:
        futures = [corrupt_queries_task.submit(ds, c, config.corruption, config.seed, out) for c in config.conditions]
        vs = [f.result() for f in futures]
        variants += vs
        cs = retrieve_task(ds, vs, config.encoder, config.depth, cache, config.offline,
                           config.candidates.get(ds.name))
        candidates.append(cs)
        # model rows go to the task runner (threads, or Dask/Ray workers); fusion waits for its inputs
        systems = {FIRST_STAGE: first_stage_task.submit(ds, cs, out)}
        for spec in config.rerankers:
            if spec.kind != "rrf":
                systems[spec.name] = rerank_task.submit(ds, cs, vs, spec, config.rerank_depth, cache, out, config.offline)
        for spec in config.rerankers:
            if spec.kind == "rrf":
                systems[spec.name] = fuse_task.submit(ds, spec, [systems[n] for n in spec.fuse], config.rerank_depth, out)
        score_futures = [score_task.submit(ds, r, vs, config.metrics, out) for r in systems.values()]
        rankings += [f.result() for f in systems.values()]
        scores += [f.result() for f in score_futures]

    board = aggregate_task(datasets, variants, candidates, scores, config, out)
    publish_task(board, out)
    manifest = RunManifest(
        terazi_version=__version__, run_dir=out, started=started, seconds=round(time.perf_counter() - t0, 2),
        config=json.loads(config.model_dump_json()), datasets=datasets, variants=variants, candidates=candidates,
        reranks=rankings, scores=scores, leaderboard=board,
    )
    (run_dir / "manifest.json").write_text(manifest.model_dump_json(indent=2))
    for cs in candidates:  # the frozen candidates travel with the results, as TREC runs
        target = run_dir / "candidates" / cs.dataset
        target.mkdir(parents=True, exist_ok=True)
        for f in Path(cs.trec_dir).glob("*.trec"):
            shutil.copyfile(f, target / f.name)
    return manifest

