"""The reranking stage of one row (a reranker on one dataset, every condition at once): the plan, its chunks, the
ranking; the first stage's own row; and fusions of rows.

Scoring all conditions of a dataset together lets identical (query, document) pairs, e.g. a query that a corruption
left unchanged, be scored once; the score store makes that hold across runs (and across concurrent runs) too. The
plan (pairs, their keys, what the store knows, the work list cut into chunks) and the ranking run in the flow; each
chunk is a task on the model runner, so a cluster of W workers scores W chunks at once. Chunks exchange nothing but
the plan's file paths.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
import uuid
from pathlib import Path

import numpy as np
import polars as pl

from terazi.base.paths import link
from terazi.base.progress import progress
from terazi.base.ties import tied_conditions
from terazi.data.corpus import CorpusTable
from terazi.data.loading import dataset_corpus, read_variants
from terazi.rerank import metering
from terazi.rerank.backends import make_scorer, shared_scorer
from terazi.rerank.listwise import listwise_stage as listwise
from terazi.rerank.pair_keys import (
    block_size,
    document_keys,
    model_key,
    pair_ids,
    rescored,
    run_ids,
    store_keys,
    variant_keys,
)
from terazi.rerank.plan_inputs import plan_inputs, plan_result, planned_scorer, prepare, stored_plan
from terazi.rerank.ranking import pair_scores, write_fusion, write_ranking, write_sweep
from terazi.rerank.store import ModelKey, Scores, empty_scores
from terazi.rerank.work import chunk_bounds, score_rows, score_unstored, write_work_list
from terazi.schemas import (
    FIRST_STAGE,
    CandidateSet,
    ChunkResult,
    DatasetManifest,
    RerankerSpec,
    RerankPlan,
    RerankResult,
    ScaleSpec,
    VariantSet,
)
from terazi.schemas.layout import RunLayout
from terazi.store import derived
from terazi.store.layout import CacheLayout

log = logging.getLogger("terazi.rerank")


def first_stage_ranking(
    dataset: DatasetManifest, candidates: CandidateSet, out_dir: str, cache_dir: str | None = None
) -> RerankResult:
    """The first stage alone, as a leaderboard row ("no rerank"); a warning when its scores tell no candidates apart
    under some query set (its row would score only the tie order of the document ids). Whether they do is kept with
    the stored outputs under the candidates' fingerprint: a warm run does not read the candidates for it."""
    key = derived.key("tied", candidates.fingerprint, maker="terazi.base.ties")
    tied = json.loads(derived.text(cache_dir, key, lambda: json.dumps(tied_conditions(candidates.path))))
    if tied:
        log.warning(
            "first stage %s on %s: every query's candidates have one score under %s: its ranking (the "
            "first-stage row, and what the rerankers are given) is only the tie order of the document ids; "
            "are the texts empty?",
            candidates.encoder,
            dataset.name,
            ", ".join(tied),
        )
    path = RunLayout(out_dir).ranking(dataset.name, FIRST_STAGE)
    link(candidates.path, path)  # the candidates as they are: linked, not copied
    return RerankResult(
        system=FIRST_STAGE,
        dataset=dataset.name,
        identity=candidates.encoder_identity,
        candidates=candidates.fingerprint,
        path=str(path),
    )


def plan_rerank(
    dataset: DatasetManifest,
    candidates: CandidateSet,
    variant_sets: list[VariantSet],
    spec: RerankerSpec,
    rerank_depth: int,
    cache_dir: str,
    scale: ScaleSpec = ScaleSpec(),
    offline: bool = False,
    sweep_depth: int | None = None,
    ties: str = "trec",
) -> RerankPlan:
    """The pairs to rescore and their keys, the scores the store already has, and the rest cut into chunks; nothing
    at all when the ranking of the same candidates, variants, corpus, model, depths and tie rule is stored
    (terazi.store.derived). `sweep_depth`: a depth sweep's deepest depth, whose clean pairs are scored too
    (`keys.rescored`); `ties`: how the head's tied scores are ordered (`terazi.metrics.contracts.TIES`). A listwise row
    reranks whole lists, not pairs (`terazi.rerank.listwise.listwise_stage`): no depth sweep, its order at one depth
    is not at another."""
    if spec.kind == "listwise":
        return listwise.plan(dataset, candidates, variant_sets, spec, rerank_depth, cache_dir, scale, offline, ties)
    started = time.time()
    prepare(spec, offline)
    corpus = dataset_corpus(dataset, cache_dir)
    scorer = make_scorer(spec, corpus, dataset.corpus_fingerprint, offline, cache_dir)  # loads nothing yet
    model = model_key(scorer)
    output = derived.key(
        "ranking",
        dataset.name,
        spec.name,
        model.identity,
        model.max_length,
        dataset.corpus_fingerprint,
        rerank_depth,
        sweep_depth,
        Path(candidates.path),
        [Path(v.path) for v in variant_sets],
        ties,
        maker=__name__,
    )
    inputs = (dataset, candidates, variant_sets, spec, str(corpus.path), cache_dir, scale, offline, rerank_depth, ties)
    common = dict(
        **plan_inputs(*inputs),
        identity=model.identity,
        max_length=model.max_length,
        sweep_depth=sweep_depth,
        block=block_size(scorer),
        started=started,
        output=output,
    )
    if (meta := derived.stored(cache_dir, output)) is not None:
        log.info(
            "%s on %s: the ranking of these candidates and variants is stored (%d pairs, all scored before)",
            spec.name,
            dataset.name,
            meta["needed"],
        )
        return stored_plan(common, meta)
    cands = pl.scan_parquet(candidates.path)
    var = variant_keys(read_variants(variant_sets))
    docs = document_keys(
        corpus.keys(cands.filter(rescored(rerank_depth, sweep_depth)).select("doc_id").unique().collect()["doc_id"])
    )
    pairs = pair_ids(cands, var, docs, rerank_depth, sweep_depth)
    unique = pairs.unique(maintain_order=True)
    in_store = getattr(scorer, "in_store", True)
    found = (
        Scores(cache_dir, scale.score_store).get_many(model, store_keys(unique, var, docs))
        if in_store
        else empty_scores()
    )
    known = run_ids(found, var, docs)
    work = CacheLayout(cache_dir).part("work", f"rerank-{uuid.uuid4().hex}")
    work.mkdir(parents=True)
    pairs.to_frame().write_parquet(work / "pairs.parquet")
    known.write_parquet(work / "known.parquet")
    todo = write_work_list(work / "todo.parquet", unique, known, var, docs, by_query=getattr(scorer, "remote", False))
    chunks = chunk_bounds(todo, scale.chunk_pairs, common["block"])
    log.info(
        "%s on %s: %d pairs, %d unique, %d in the score store, %d to score in %d chunk(s)",
        spec.name,
        dataset.name,
        pairs.len(),
        unique.len(),
        known.height,
        todo,
        len(chunks),
    )
    return RerankPlan(
        **common,
        work=str(work),
        chunks=chunks,
        needed=pairs.len(),
        unique=unique.len(),
        cached=known.height,
        in_store=in_store,
    )


def score_chunk(plan: RerankPlan, chunk: int) -> ChunkResult:
    """Score one chunk of the work list (pairs stored meanwhile, e.g. before a retry, are skipped)."""
    if plan.spec.kind == "listwise":
        return listwise.score_chunk(plan, chunk)
    start = time.perf_counter()
    a, z = plan.chunks[chunk]
    corpus, scorer, lock = planned_scorer(plan)
    rows = pl.scan_parquet(Path(plan.work) / "todo.parquet").slice(a, z - a).collect()
    meter = metering.Meter(scorer)  # warm speed inside the scoring calls, this chunk only (terazi/rerank/metering.py)
    with progress(f"{plan.system} on {plan.dataset}, chunk {chunk + 1}/{len(plan.chunks)}") as on_progress:
        if plan.in_store:
            scores = Scores.for_worker(plan.cache_dir, plan.score_store)
            scored, _ = score_rows(rows, corpus, scorer, scores, plan.block, lock, on_progress)
        else:
            scored = score_unstored(rows, scorer, plan.block, _chunk_scores(plan, chunk), lock, on_progress)
    if scored and chunk == len(plan.chunks) - 1:  # latency per query, on the worker that holds the model
        with lock:
            metering.probe_latency(scorer, Path(plan.candidates_path), plan.variants, corpus, plan.rerank_depth)
    return ChunkResult(
        system=plan.system,
        dataset=plan.dataset,
        chunk=chunk,
        pairs=rows.height,
        scored=scored,
        seconds=round(time.perf_counter() - start, 3),
        cost=meter.result(),
    )


def _chunk_scores(plan: RerankPlan, chunk: int) -> Path:
    """Where a chunk of a scorer that bypasses the score store keeps its scores (q, d, score) for the ranking."""
    return Path(plan.work) / f"scores-{chunk}.parquet"


def finish_rerank(plan: RerankPlan, chunks: list[ChunkResult], out_dir: str) -> RerankResult:
    """The system's rankings from the plan's pairs and their scores (or linked from the stored outputs when the
    plan found them there); the plan's work files are removed."""
    if plan.spec.kind == "listwise":
        return listwise.finish(plan, chunks, out_dir)
    work = Path(plan.work)

    def write(root: Path) -> dict:
        path = RunLayout(root).ranking(plan.dataset, plan.system)
        path.parent.mkdir(parents=True, exist_ok=True)
        head = _head_scores(plan)
        if plan.sweep_depth is not None:  # the sweep's clean pairs kept apart, the ranking's own scores passed on
            sweep = RunLayout(root).sweep_scores(plan.dataset, plan.system)
            sweep.parent.mkdir(parents=True, exist_ok=True)
            head = write_sweep(sweep, Path(plan.candidates_path), head, plan.rerank_depth, plan.sweep_depth)
        write_ranking(path, Path(plan.candidates_path), head, plan.rerank_depth, plan.ties)
        return {"needed": plan.needed, "unique": plan.unique}

    derived.reuse(plan.cache_dir, plan.output, out_dir, write)
    path = RunLayout(out_dir).ranking(plan.dataset, plan.system)
    scored = sum(c.scored for c in chunks)
    cost = metering.settle(
        plan.identity,
        [c.cost for c in chunks if c.cost],
        scored,
        plan.cache_dir,
        lambda: shared_scorer(
            plan.spec, CorpusTable(Path(plan.corpus)), plan.corpus_fingerprint, plan.offline, plan.cache_dir
        )[0],
    )
    result = plan_result(plan, path, scored, cost=cost)
    if not plan.stored:
        shutil.rmtree(work, ignore_errors=True)  # last: a retry of this task (e.g. the cost step failed) still has it
    log.info(
        "%s on %s: %d pairs needed, %d duplicates across conditions, %d cached, %d scored in %.1fs",
        plan.system,
        plan.dataset,
        result.pairs_needed,
        result.pairs_needed - result.pairs_unique,
        result.pairs_cached,
        result.pairs_scored,
        result.seconds,
    )
    return result


def _head_scores(plan: RerankPlan) -> np.ndarray:
    """The score of every pair the plan rescores, in candidate order: those the store had, and those the chunks
    scored."""
    work = Path(plan.work)
    found = pl.concat([pl.read_parquet(work / "known.parquet"), _new_scores(plan)]).sort("pid")
    return pair_scores(work / "pairs.parquet", found)


def _new_scores(plan: RerankPlan) -> pl.DataFrame:
    """(pid, score) of the pairs the chunks scored: read back from the store, or from the chunks' files, which follow
    the work list's order."""
    work = Path(plan.work)
    if plan.in_store:
        todo = pl.read_parquet(work / "todo.parquet", columns=["pid", "q", "d"])
        scored = Scores(plan.cache_dir, plan.score_store).get_many(
            ModelKey(plan.identity, plan.max_length), todo.select("q", "d")
        )
        return todo.join(scored, on=["q", "d"]).select("pid", "score")
    parts = [pl.read_parquet(_chunk_scores(plan, i), columns=["score"]) for i in range(len(plan.chunks))]
    scores = pl.concat(parts) if parts else pl.DataFrame(schema={"score": pl.Float64})
    return pl.read_parquet(work / "todo.parquet", columns=["pid"]).hstack(scores)


def fuse_systems(
    dataset: DatasetManifest,
    spec: RerankerSpec,
    parts: list[RerankResult],
    rerank_depth: int,
    out_dir: str,
    cache_dir: str | None = None,
    ties: str = "trec",
) -> RerankResult:
    """Reciprocal-rank fusion of other rows' rankings (no model); linked from the stored outputs when the same
    rankings were fused before (terazi.store.derived)."""
    by_name = {p.system: p for p in parts}

    def write(root: Path) -> dict:
        path = RunLayout(root).ranking(dataset.name, spec.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_fusion(path, [Path(by_name[n].path) for n in spec.fuse], rerank_depth, spec.rrf_k, ties)
        return {}

    key = derived.key(
        "fusion",
        dataset.name,
        spec.name,
        spec.rrf_k,
        rerank_depth,
        [Path(by_name[n].path) for n in spec.fuse],
        ties,
        maker=__name__,
    )
    derived.reuse(cache_dir, key, out_dir, write)
    return RerankResult(
        system=spec.name,
        dataset=dataset.name,
        identity=f"rrf(k={spec.rrf_k}):{'+'.join(spec.fuse)}",
        candidates=parts[0].candidates,
        path=str(RunLayout(out_dir).ranking(dataset.name, spec.name)),
        rerank_depth=rerank_depth,
    )
