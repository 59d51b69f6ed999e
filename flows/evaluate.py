"""The evaluation flow: datasets → corruptions → frozen first stage → cached reranking → metrics → leaderboard.

`evaluation()` is the recipe; it runs inside whichever flow started it (`terazi-evaluate` for the CLI
and the ad-hoc deployment, `terazi-nightly` for the schedule), so every task, log line and artifact
belongs to the run the user opens. The heavy stages are cut into shards and chunks (`config.scale`):
corpus and query encoding one task per shard, reranking one task per chunk of pairs; those model tasks
go to the task runner the config names (threads, or a Dask/Ray cluster entered here), so W workers run
W at once. Plans, searches, rankings and everything else run on the flow's own threads. Tasks exchange
manifests only.
"""

from __future__ import annotations

import json
import logging
import time
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import Callable, Iterator

from prefect import flow

from terazi.schemas import FIRST_STAGE, CandidateSet, DatasetManifest, EvalConfig, RunManifest, VariantSet
from terazi.tasks.aggregate import aggregate_task, publish
from terazi.tasks.corrupt import corrupt_queries_task
from terazi.tasks.export import export_task
from terazi.tasks.isolate import isolate_task
from terazi.tasks.preflight import preflight_task
from terazi.tasks.rerank import first_stage_task, fuse_task, rerank_chunk_task, rerank_finish_task, rerank_plan_task
from terazi.tasks.retrieve import encode_shard_task, publish_candidates_task, retrieval_plan_task, search_task
from terazi.tasks.score import score_task
from terazi import __version__
from terazi.analysis import identity as benchmark
from terazi.results import folder as results
from terazi.paths import writable_folder

log = logging.getLogger("terazi.flow")
Submit = Callable[..., object]


def make_task_runner(config: EvalConfig):
    """A Dask or Ray task runner for the model tasks, as the config asks."""
    if config.task_runner == "dask":
        from prefect_dask import DaskTaskRunner

        if config.task_runner_address:
            return DaskTaskRunner(address=config.task_runner_address)
        return DaskTaskRunner(cluster_kwargs={"n_workers": config.task_runner_workers, "threads_per_worker": 1,
                                              "processes": True, "resources": config.scale.worker_resources or None})
    from prefect_ray import RayTaskRunner

    return RayTaskRunner(address=config.task_runner_address) if config.task_runner_address else RayTaskRunner()


def ray_options(resources: dict[str, float]) -> dict:
    """Worker resources as Ray remote options: GPU and CPU counts, any other name a custom resource."""
    extra = {k: v for k, v in resources.items() if k not in ("GPU", "CPU")}
    return {**({"num_gpus": resources["GPU"]} if "GPU" in resources else {}),
            **({"num_cpus": resources["CPU"]} if "CPU" in resources else {}), **({"resources": extra} if extra else {})}


def resource_context(kind: str, resources: dict[str, float]):
    """Where model tasks may run: Dask worker resources (`dask worker --resources GPU=1`) or Ray remote options."""
    if not resources:
        return nullcontext()
    if kind == "dask":
        import dask

        return dask.annotate(resources=resources)
    from prefect_ray.context import remote_options

    return remote_options(**ray_options(resources))


@contextmanager
def model_runner(config: EvalConfig) -> Iterator[Submit]:
    """`submit(task, **parameters)` for model tasks: one thread of the flow process, or a Dask/Ray cluster (on
    workers that have `config.scale.worker_resources`). On one machine the model tasks take turns on a single
    thread, as on a one-thread worker: the models use every core anyway, and the process holds one shard or
    chunk at a time instead of one per thread."""
    if config.task_runner == "thread":
        from prefect.task_runners import ThreadPoolTaskRunner

        with ThreadPoolTaskRunner(max_workers=1) as one:
            yield lambda task, **params: one.submit(task, parameters=params)
        return

    def submit(task, **params):
        with resource_context(config.task_runner, config.scale.worker_resources):
            return runner.submit(task, parameters=params)

    with make_task_runner(config) as runner:
        yield submit


CALLER: ContextVar[str] = ContextVar("terazi_caller", default="cli")  # the Python API sets "python"


def run_kind() -> str:
    """'ad-hoc' for a deployment's run, else who called: 'cli' or 'python'."""
    from prefect.runtime import deployment

    return "ad-hoc" if deployment.id else CALLER.get()


def current_flow_run_id() -> str | None:
    from prefect.runtime import flow_run

    return flow_run.id


def crash_stale_runs(out_dir: str) -> None:
    """Runs under `out_dir` whose process died without a word (kill -9, power loss): say so in their folder
    and mark their Prefect flow runs crashed instead of leaving them "Running" for good."""
    from prefect.client.orchestration import get_client
    from prefect.states import Crashed

    for folder, flow_run_id in results.stale_runs(out_dir):
        log.warning("run %s was interrupted earlier (its process is gone): marked incomplete", folder)
        if not flow_run_id:
            continue
        try:
            with get_client(sync_client=True) as client:
                if client.read_flow_run(flow_run_id).state.is_running():
                    client.set_flow_run_state(flow_run_id, Crashed(message=f"process gone; results {folder} incomplete"),
                                              force=True)
        except Exception as e:  # another server's run, or no longer known: the folder marker is what matters
            log.debug("could not mark flow run %s crashed: %s", flow_run_id, e)


def first_stage(submit: Submit, ds: DatasetManifest, vs: list[VariantSet], config: EvalConfig, cache: str,
                external: str | None = None) -> CandidateSet:
    """Frozen candidates of one dataset: reused, imported from TREC runs made elsewhere (`external`), or encoded
    shard by shard on the model runner, then searched."""
    plan = retrieval_plan_task(ds, vs, config.encoder, config.depth, cache, config.offline,
                               config.candidates.get(ds.name), config.scale, external)
    if plan.frozen:
        return plan.frozen
    corpus = [submit(encode_shard_task, plan=plan, part="corpus", shard=i) for i in range(len(plan.corpus_shards))]
    queries = [submit(encode_shard_task, plan=plan, part="queries", shard=i) for i in range(len(plan.query_shards))]
    return search_task(plan, ds, vs, [f.result() for f in corpus], [f.result() for f in queries])


def rerank_rows(submit: Submit, ds: DatasetManifest, cs: CandidateSet, vs: list[VariantSet], config: EvalConfig,
                cache: str, out: str) -> dict:
    """Each model row's reranking: a plan, its chunks on the model runner, then the ranking (futures by name)."""
    plans = [rerank_plan_task.submit(ds, cs, vs, spec, config.rerank_depth, cache, config.scale, config.offline)
             for spec in config.rerankers if spec.kind != "rrf"]
    rows = {}
    for plan in (p.result() for p in plans):
        chunks = [submit(rerank_chunk_task, plan=plan, chunk=i) for i in range(len(plan.chunks))]
        rows[plan.system] = rerank_finish_task.submit(plan, chunks, out)
    return rows


def evaluation(config: EvalConfig, kind: str) -> RunManifest:
    """The whole evaluation, inside the calling flow; writes and returns the results folder's manifest."""
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    crash_stale_runs(config.out_dir)
    run_dir = results.start(config.out_dir, config.run_name, kind, current_flow_run_id())
    out, cache = str(run_dir), str(writable_folder(config.cache_dir, "cache folder"))
    log.info("results folder: %s (incomplete until the manifest is written)", run_dir)
    try:
        datasets = preflight_task(config)
        variants, candidates, rankings, scores = [], [], [], []
        first_stage_runs = {d.label: d.first_stage_runs for d in config.datasets if d.first_stage_runs}
        with model_runner(config) as submit:
            for ds in datasets:
                futures = [corrupt_queries_task.submit(ds, c, config.corruption, config.seed, out) for c in config.conditions]
                vs = [f.result() for f in futures]
                variants += vs
                cs = first_stage(submit, ds, vs, config, cache, first_stage_runs.get(ds.name))
                candidates.append(cs)
                cs, vs = isolate_task(ds, cs, vs, config.robustness, out)  # isolated robustness setting (analysis)
                systems = {FIRST_STAGE: first_stage_task.submit(ds, cs, out), **rerank_rows(submit, ds, cs, vs, config,
                                                                                             cache, out)}
                ranked = {}
                for name, future in systems.items():  # a fusion waits for the rows it fuses
                    ranked[name] = future.result()
                for spec in config.rerankers:
                    if spec.kind == "rrf":
                        ranked[spec.name] = fuse_task(ds, spec, [ranked[n] for n in spec.fuse], config.rerank_depth, out)
                score_futures = [score_task.submit(ds, r, vs, config.metrics, out) for r in ranked.values()]
                rankings += list(ranked.values())
                scores += [f.result() for f in score_futures]

        export = export_task.submit(datasets, variants, rankings, out)  # runs/, qrels/, changed/: TREC for everyone
        identity = benchmark.identity(config, datasets, candidates)
        board = aggregate_task(datasets, variants, candidates, scores, config, out, identity, reranks=rankings)
        for cs in candidates:  # the frozen candidates travel with the results, as TREC runs (linked, checked)
            publish_candidates_task(cs, out)
        export.result()
        manifest = RunManifest(
            terazi_version=__version__, run_dir=out, kind=kind, flow_run_id=current_flow_run_id(), benchmark=identity,
            started=started, seconds=round(time.perf_counter() - t0, 2), config=json.loads(config.model_dump_json()),
            datasets=datasets, variants=variants, candidates=candidates, reranks=rankings, scores=scores, leaderboard=board,
        )
        results.finish(run_dir, manifest.model_dump_json(indent=2))
    except BaseException as e:
        signum = getattr(e, "signal", None)  # Prefect's TerminationSignal (SIGTERM)
        results.mark_stopped(run_dir, f"stopped by signal {signum}" if signum else f"{type(e).__name__}: {e}")
        raise
    # in the flow itself, so the artifacts are the run's; after the results are complete, so a failed upload
    # fails the run without making its (usable) results folder look stopped
    publish(out, artifact_prefix(config, kind))
    log.info("finished in %.1fs: %s", manifest.seconds, run_dir)
    return manifest


def artifact_prefix(config: EvalConfig, kind: str) -> str:
    """Artifact keys name the benchmark, so each key's history is one benchmark's (nightly runs apart)."""
    return f"{config.benchmark}-nightly" if kind == "nightly" else config.benchmark


@flow(name="terazi-evaluate", validate_parameters=True)
def evaluate(config: EvalConfig) -> RunManifest:
    """Evaluate the configured rerankers on the configured datasets and write a results folder.

    Served as the ad-hoc deployment; the CLI and `terazi.evaluate()` run it too.
    """
    from terazi.policy import enforce_if_served

    return evaluation(enforce_if_served(config), run_kind())


def run_evaluation(config: EvalConfig) -> RunManifest:
    """Run the evaluation flow (the CLI's entry point)."""
    return evaluate(config)
