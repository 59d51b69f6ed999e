"""The evaluation flow: datasets → corruptions → frozen first stage → cached reranking → metrics → leaderboard.

`evaluation()` is the recipe; it runs inside whichever flow started it (`terazi-evaluate` for the CLI, the Python API
and the ad-hoc deployment, `terazi-nightly` for the schedule), so every task, log line and artifact belongs to the run
the user opens. Every step goes through `Steps` (flows/steps.py): Prefect's in a flow, plain calls in a test that runs
the whole recipe in its process. Tasks exchange manifests only (terazi.schemas); the heavy stages are cut into shards
and chunks (`config.scale`) that go to the model runner (flows/runners.py), so W workers run W at once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from prefect import flow

from terazi.analysis.identity import identity as benchmark_identity
from terazi.base.paths import writable_folder
from terazi.config.policy import enforce_if_served
from terazi.flows.lifecycle import results_folder
from terazi.flows.runtime import artifact_prefix, crash_stale_runs, refusals_as_failed, run_kind
from terazi.flows.steps import PREFECT, Steps
from terazi.results.run_folder import check_outputs
from terazi.schemas import (
    FIRST_STAGE,
    BenchmarkIdentity,
    CandidateSet,
    DatasetManifest,
    DepthSet,
    EncoderSpec,
    EvalConfig,
    FirstStageSpec,
    LeaderboardRow,
    RerankResult,
    RunManifest,
    ScaleSpec,
    ScoreSet,
    SharedPairs,
    VariantSet,
)
from terazi.schemas.layout import RunLayout
from terazi.tasks.corrupt import corrupt_queries_task
from terazi.tasks.export import export_task
from terazi.tasks.isolate import isolate_task
from terazi.tasks.preflight import preflight_task
from terazi.tasks.rerank import (
    first_stage_task,
    fuse_task,
    rerank_chunk_task,
    rerank_finish_task,
    rerank_plan_task,
    shared_pairs_task,
)
from terazi.tasks.results import aggregate_task, protocol_task
from terazi.tasks.retrieve import (
    bm25_retrieval_task,
    encode_shard_task,
    publish_candidates_task,
    retrieval_plan_task,
    search_task,
)
from terazi.tasks.score import ceiling_task, score_task, sweep_task

log = logging.getLogger("terazi.flow")


def evaluation(config: EvalConfig, kind: str, steps: Steps = PREFECT) -> RunManifest:
    """The whole evaluation, inside the calling flow (each step through `steps`); writes and returns the results
    folder's manifest. With several first stages, each one's rows are ranked, scored and aggregated as a run with that
    first stage alone would (the first one's into the results folder, each other's into first-stages/<name>/), then
    compared (protocol.md)."""
    check_outputs(config)  # before anything is written: outputs never overlap inputs, the folder is free
    crash_stale_runs(config.out_dir)
    cache = str(writable_folder(config.cache_dir, "cache folder"))
    prefix = artifact_prefix(config, kind)
    with results_folder(config.out_dir, config.run_name, kind, prefix, cache, steps.post) as run:
        out = str(run.path)
        log.info("results folder: %s (incomplete until the manifest is written)", out)
        datasets = steps.run(preflight_task, config)  # every check that can run before heavy work, one line each
        roots = {n: str(p) for n, p in RunLayout(out).first_stage_roots([s.name for s in config.stages]).items()}
        variants, stages = [], {s.name: FirstStageResults() for s in config.stages}
        with steps.models(config) as heavy:  # the model runner, open while the datasets are ranked and scored
            for ds in datasets:
                # 1. the query variants of every condition
                conditions = [
                    heavy.spawn(corrupt_queries_task, ds, c, config.corruption, config.seed, out, cache)
                    for c in config.conditions
                ]
                ds_variants = [f.result() for f in conditions]
                variants += ds_variants
                for spec in config.stages:
                    o, done = roots[spec.name], stages[spec.name]
                    # 2. the first stage, frozen under its fingerprint
                    frozen = first_stage(heavy, ds, ds_variants, spec, config, cache)
                    # 3. what every row reorders: the frozen candidates, and the isolated setting's pseudo-conditions
                    pool, pool_variants = heavy.run(isolate_task, ds, frozen, ds_variants, config.robustness, o, cache)
                    # 4. every row's rankings; 5. their per-query values
                    ranked = rank_rows(heavy, ds, pool, pool_variants, config, cache, o)
                    per_query = [
                        heavy.spawn(
                            score_task, ds, r, pool_variants, config.metrics, o, cache_dir=cache, ties=config.ties
                        )
                        for r in ranked
                    ]
                    sweeps = depth_sweep(heavy, ds, pool, ranked, config, o)
                    done.scores += [f.result() for f in per_query]
                    done.depths += [f.result() for f in sweeps]
                    done.candidates.append(frozen)
                    done.rankings += ranked
                    done.pools.append((pool, pool_variants))
        # 6. the results of each first stage but the first: a results folder each, as a run with it alone writes
        for spec in config.stages[1:]:
            results(steps, datasets, variants, stages[spec.name], config.alone(spec), roots[spec.name], cache)
        main = stages[config.stages[0].name]
        identity, board = results(steps, datasets, variants, main, config, out, cache)
        shared: list[SharedPairs] = []
        if len(config.stages) > 1:  # the pairs the first stages share (scored once), then whether the order holds
            for i, ds in enumerate(datasets):
                shared += steps.run(shared_pairs_task, ds, {n: s.pools[i] for n, s in stages.items()}, config, cache)
            steps.run(protocol_task, roots, datasets, config, out, shared)
        run.finish(
            config,
            benchmark=identity,
            datasets=datasets,
            variants=variants,
            candidates=main.candidates,
            reranks=main.rankings,
            scores=main.scores,
            leaderboard=board,
            shared_pairs=shared,
        )
    log.info("finished in %.1fs: %s", run.manifest.seconds, out)
    return run.manifest


@dataclass
class FirstStageResults:
    """What one first stage produced, dataset by dataset."""

    candidates: list[CandidateSet] = field(default_factory=list)
    rankings: list[RerankResult] = field(default_factory=list)
    scores: list[ScoreSet] = field(default_factory=list)
    depths: list[DepthSet] = field(default_factory=list)
    pools: list[tuple[CandidateSet, list[VariantSet]]] = field(default_factory=list)  # what the rows reordered


def results(
    steps: Steps,
    datasets: list[DatasetManifest],
    variants: list[VariantSet],
    done: FirstStageResults,
    config: EvalConfig,
    out: str,
    cache: str,
) -> tuple[BenchmarkIdentity, list[LeaderboardRow]]:
    """One first stage's results in `out`: the statistics and every table, runs/ for every TREC tool, the frozen
    candidates. The statistics and the runs one after the other: side by side, the statistics' per-query tables and
    the runs' blocks add up (benchmarks/bench_scale_up.py), for no time on a machine whose cores each already use."""
    identity = benchmark_identity(config, datasets, done.candidates)
    board = steps.run(
        aggregate_task,
        datasets,
        variants,
        done.candidates,
        done.scores,
        config,
        out,
        identity,
        reranks=done.rankings,
        depths=done.depths,
        cache_dir=cache,
    )
    steps.run(export_task, datasets, variants, done.rankings, out, cache)
    for cs in done.candidates:
        steps.run(publish_candidates_task, cs, out)
    return identity, board


@flow(name="terazi-evaluate", validate_parameters=True)
def evaluate(config: EvalConfig) -> RunManifest:
    """Evaluate the configured rerankers on the configured datasets and write a results folder.

    Served as the ad-hoc deployment; the CLI and `terazi.evaluate()` run it too.
    """
    return refusals_as_failed(lambda: evaluation(enforce_if_served(config), run_kind()))


def first_stage(
    steps: Steps, ds: DatasetManifest, variants: list[VariantSet], spec: FirstStageSpec, config: EvalConfig, cache: str
) -> CandidateSet:
    """Frozen candidates of one dataset: BM25 over the whole corpus (a bm25 first stage), else `dense_first_stage`
    (reused, imported from the dataset's `first_stage_runs`, or encoded and searched)."""
    if spec.kind == "bm25":
        return steps.run(bm25_retrieval_task, ds, variants, spec, config.depth, cache)
    external = {d.label: d.first_stage_runs for d in config.datasets}.get(ds.name)
    return dense_first_stage(
        steps,
        ds,
        variants,
        spec.encoder or config.encoder,
        config.depth,
        cache,
        config.offline,
        config.candidates.get(ds.name),
        config.scale,
        external,
    )


def dense_first_stage(
    steps: Steps,
    ds: DatasetManifest,
    variants: list[VariantSet],
    encoder: EncoderSpec,
    depth: int,
    cache: str,
    offline: bool,
    frozen: str | None,
    scale: ScaleSpec,
    external: str | None,
) -> CandidateSet:
    """An encoder's frozen candidates: reused, imported from TREC runs made elsewhere, or named (`frozen`), else
    encoded shard by shard on the model runner, then searched."""
    plan = steps.run(retrieval_plan_task, ds, variants, encoder, depth, cache, offline, frozen, scale, external)
    if plan.frozen:
        return plan.frozen
    encode = encode_shard_task
    corpus = [steps.model(encode, plan=plan, part="corpus", shard=i) for i in range(len(plan.corpus_shards))]
    queries = [steps.model(encode, plan=plan, part="queries", shard=i) for i in range(len(plan.query_shards))]
    return steps.run(search_task, plan, ds, variants, [f.result() for f in corpus], [f.result() for f in queries])


def rank_rows(
    steps: Steps,
    ds: DatasetManifest,
    pool: CandidateSet,
    pool_variants: list[VariantSet],
    config: EvalConfig,
    cache: str,
    out: str,
) -> list[RerankResult]:
    """The first stage's own row, each model row (a plan, its chunks on the model runner, the ranking), then each
    fusion of rows listed above it, in the config's order."""
    rows = {FIRST_STAGE: steps.spawn(first_stage_task, ds, pool, out, cache)}
    plans = [
        steps.spawn(
            rerank_plan_task,
            ds,
            pool,
            pool_variants,
            spec,
            config.rerank_depth,
            cache,
            config.scale,
            config.offline,
            config.sweep_depth,
            config.ties,
        )
        for spec in config.rerankers
        if spec.kind != "rrf"
    ]
    chunks = {}
    for plan in (p.result() for p in plans):
        chunks[plan.system] = [steps.model(rerank_chunk_task, plan=plan, chunk=i) for i in range(len(plan.chunks))]
        rows[plan.system] = steps.spawn(rerank_finish_task, plan, chunks[plan.system], out)
    for future in (f for row in chunks.values() for f in row):
        future.result()  # a failed chunk raises its own error here (its row's ranking would only say "not ready")
    ranked = {name: future.result() for name, future in rows.items()}  # a fusion waits for the rows it fuses
    for spec in config.rerankers:
        if spec.kind == "rrf":
            ranked[spec.name] = steps.run(
                fuse_task, ds, spec, [ranked[n] for n in spec.fuse], config.rerank_depth, out, cache, config.ties
            )
    return list(ranked.values())


def depth_sweep(
    steps: Steps, ds: DatasetManifest, pool: CandidateSet, ranked: list[RerankResult], config: EvalConfig, out: str
) -> list[Any]:
    """With `rerank_depths`: the first stage's ceiling and each model row's headline at every depth (fusions and the
    first stage's own row have no scores of their own to sweep, listwise rows no score of a pair alone); nothing
    without."""
    if not config.rerank_depths:
        return []
    # a listwise row's order at one depth is not its order at another: it is not swept (terazi.rerank.listwise)
    models = {spec.name for spec in config.rerankers if spec.kind not in ("rrf", "listwise")}
    return [
        steps.spawn(ceiling_task, ds, pool, config.rerank_depths, config.headline, out, config.ties),
        *(
            steps.spawn(sweep_task, ds, r, pool, config.rerank_depths, config.headline, out, config.ties)
            for r in ranked
            if r.system in models
        ),
    ]
