"""A listwise row's reranking of one dataset: the plan (each variant's candidate list, identical lists once), its
chunks (groups of lists on the model runner) and the ranking, in the shapes the pointwise stage uses
(`terazi.rerank.stage`), so the flow runs both alike.

A chunk walks its lists' windows in step, each window's answer paid for once through the score store
(`terazi.rerank.listwise.windows`); the ranking turns each list's final order into strictly decreasing scores.
"""

from __future__ import annotations

import logging
import shutil
import time
import uuid
from pathlib import Path

import numpy as np
import polars as pl

from terazi.base.paths import inside, write_atomic
from terazi.base.progress import progress
from terazi.data.corpus import CorpusTable
from terazi.data.loading import dataset_corpus, read_variants
from terazi.models.costs import CostStore, add_listwise, combine
from terazi.rerank.backends import make_scorer, shared_scorer
from terazi.rerank.listwise import core
from terazi.rerank.listwise.windows import Windows, rerank_lists
from terazi.rerank.plan_inputs import plan_inputs, plan_result, planned_scorer, prepare, stored_plan
from terazi.rerank.ranking import write_ranking
from terazi.rerank.store import Scores
from terazi.schemas import (
    CandidateSet,
    ChunkResult,
    DatasetManifest,
    ListwiseCost,
    ModelCost,
    RerankPlan,
    RerankResult,
    ScaleSpec,
    VariantSet,
)
from terazi.schemas.layout import RunLayout
from terazi.schemas.tables import VARIANT
from terazi.store import derived

log = logging.getLogger("terazi.rerank")


def plan(
    dataset: DatasetManifest,
    candidates: CandidateSet,
    variant_sets: list[VariantSet],
    spec,
    rerank_depth: int,
    cache_dir: str,
    scale: ScaleSpec,
    offline: bool,
    ties: str,
) -> RerankPlan:
    """Each variant's list (its top `rerank_depth` candidates in first-stage order), identical lists once, cut into
    chunks; nothing at all when the ranking of the same inputs is stored (terazi.store.derived)."""
    started = time.time()
    prepare(spec, offline)
    corpus = dataset_corpus(dataset, cache_dir)
    answerer = make_scorer(spec, corpus, dataset.corpus_fingerprint, offline, cache_dir)
    identity = answerer.identity  # a served row asks its server what it serves, once
    output = derived.key(
        "listwise",
        dataset.name,
        spec.name,
        identity,
        spec.window,
        spec.stride,
        dataset.corpus_fingerprint,
        rerank_depth,
        Path(candidates.path),
        [Path(v.path) for v in variant_sets],
        maker=__name__,
    )
    inputs = (dataset, candidates, variant_sets, spec, str(corpus.path), cache_dir, scale, offline, rerank_depth, ties)
    common = dict(
        **plan_inputs(*inputs),
        identity=identity,
        max_length=0,
        block=rerank_depth,
        started=started,
        output=output,
        in_store=False,
    )
    if (meta := derived.stored(cache_dir, output)) is not None:
        log.info("%s on %s: the ranking of these candidates and variants is stored", spec.name, dataset.name)
        return stored_plan(common, meta, listwise=ListwiseCost.model_validate({**meta["listwise"], "requests": 0}))
    head = (
        pl.scan_parquet(candidates.path)
        .filter(pl.col("rank") <= rerank_depth)
        .select(*VARIANT, "rank", "doc_id")
        .collect()
    )
    texts = read_variants(variant_sets).select(*VARIANT, "text")
    lists = (
        head.sort([*VARIANT, "rank"])
        .group_by(VARIANT, maintain_order=True)
        .agg(pl.col("doc_id"))
        .join(texts, on=VARIANT, how="left", maintain_order="left")
    )
    unique = lists.select("text", "doc_id").unique(maintain_order=True).with_row_index("li")
    work = inside(cache_dir, "work", f"listwise-{uuid.uuid4().hex}")
    work.mkdir(parents=True)
    unique.write_parquet(work / "lists.parquet")
    lists.join(unique, on=["text", "doc_id"], how="left", maintain_order="left").select(*VARIANT, "li").write_parquet(
        work / "assign.parquet"
    )
    size = max(1, scale.chunk_pairs // max(rerank_depth, 1))
    chunks = [(a, min(a + size, unique.height)) for a in range(0, unique.height, size)]
    n_unique = int(unique["doc_id"].list.len().sum() or 0)
    log.info(
        "%s on %s: %d lists (%d distinct) of up to %d passages, windows of %d by %d, in %d chunk(s)",
        spec.name,
        dataset.name,
        lists.height,
        unique.height,
        rerank_depth,
        spec.window,
        spec.stride,
        len(chunks),
    )
    return RerankPlan(**common, work=str(work), chunks=chunks, needed=head.height, unique=n_unique, cached=0)


def score_chunk(plan: RerankPlan, chunk: int) -> ChunkResult:
    """Rerank one chunk of the plan's lists; their final scores go to the work folder for the ranking."""
    start = time.perf_counter()
    a, z = plan.chunks[chunk]
    corpus, answerer, lock = planned_scorer(plan)
    lists = pl.scan_parquet(Path(plan.work) / "lists.parquet").slice(a, z - a).collect()
    pairs = [(t, ids) for t, ids in zip(lists["text"].to_list(), lists["doc_id"].to_list())]
    texts = corpus.texts(sorted({d for _, ids in pairs for d in ids}))
    log_mark = answerer.request_log.mark() if hasattr(answerer, "request_log") else None
    windows = Windows(Scores.for_worker(plan.cache_dir, plan.score_store), plan.identity)
    label = f"{plan.system} on {plan.dataset}, chunk {chunk + 1}/{len(plan.chunks)}"
    with progress(label, unit="windows") as on_progress, lock:
        walk = rerank_lists(pairs, texts, answerer, windows, plan.spec, on_progress)
    windows.scores.flush() if windows.scores.shared is not None else None
    out = pl.DataFrame(
        {"li": lists["li"], "scores": [core.final_scores(o).tolist() for o in walk.orders]},
        schema={"li": pl.UInt32, "scores": pl.List(pl.Float64)},
    )
    write_atomic(_orders(plan, chunk), out.write_parquet)
    described = {k: v for k, v in answerer.describe().items() if k != "requests"}
    cost = ModelCost(
        **described,
        items=walk.passages,
        seconds=round(walk.seconds, 6),
        requests=answerer.request_log.since(log_mark) if log_mark is not None else None,
        listwise=walk.answers,
    )
    return ChunkResult(
        system=plan.system,
        dataset=plan.dataset,
        chunk=chunk,
        pairs=sum(len(ids) for _, ids in pairs),
        scored=sum(len(ids) for (_, ids), f in zip(pairs, walk.fresh) if f),
        seconds=round(time.perf_counter() - start, 3),
        cost=cost,
    )


def _orders(plan: RerankPlan, chunk: int) -> Path:
    return Path(plan.work) / f"orders-{chunk}.parquet"


def _head_scores(plan: RerankPlan) -> np.ndarray:
    """The new score of every candidate ranked ≤ rerank_depth, in the candidate file's order."""
    work = Path(plan.work)
    orders = pl.concat([pl.read_parquet(_orders(plan, i)) for i in range(len(plan.chunks))])
    head = (
        pl.scan_parquet(plan.candidates_path)
        .filter(pl.col("rank") <= plan.rerank_depth)
        .select(*VARIANT, "rank")
        .collect()
        .with_columns((pl.col("rank").rank("ordinal").over(VARIANT) - 1).cast(pl.Int64).alias("at"))
        .join(pl.read_parquet(work / "assign.parquet"), on=VARIANT, how="left", maintain_order="left")
        .join(orders, on="li", how="left", maintain_order="left")
    )
    values = head.select(pl.col("scores").list.get(pl.col("at"), null_on_oob=True))
    if values.null_count().item():
        raise RuntimeError(f"{values.null_count().item()} candidates have no listwise score after every chunk")
    return values.to_series().to_numpy().astype(np.float64)


def answers_of(plan: RerankPlan, chunks: list[ChunkResult]) -> ListwiseCost:
    """The answers the ranking rests on, over its chunks (or as the run that stored the ranking counted them)."""
    if plan.stored and plan.listwise is not None:
        return plan.listwise
    return add_listwise([c.cost.listwise for c in chunks if c.cost]) or ListwiseCost()


def finish(plan: RerankPlan, chunks: list[ChunkResult], out_dir: str) -> RerankResult:
    """The row's rankings from its lists' final orders (or linked from the stored outputs); the work files removed.
    The reranked head's scores strictly decrease down each list, so no tie rule reorders it."""
    answers = answers_of(plan, chunks)

    def write(root: Path) -> dict:
        path = RunLayout(root).ranking(plan.dataset, plan.system)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_ranking(path, Path(plan.candidates_path), _head_scores(plan), plan.rerank_depth, plan.ties)
        return {"needed": plan.needed, "unique": plan.unique, "listwise": answers.model_dump()}

    derived.reuse(plan.cache_dir, plan.output, out_dir, write)
    scored = sum(c.scored for c in chunks)
    path = RunLayout(out_dir).ranking(plan.dataset, plan.system)
    result = plan_result(plan, path, scored, cost=_settle(plan, chunks, answers))
    if not plan.stored:
        shutil.rmtree(plan.work, ignore_errors=True)
    log.info(
        "%s on %s: %d windows (%d asked now): %d ok, %d wrong format, %d repetition, %d missing documents",
        plan.system,
        plan.dataset,
        answers.windows,
        answers.requests,
        answers.ok,
        answers.wrong_format,
        answers.repetition,
        answers.missing_documents,
    )
    return result


def _settle(plan: RerankPlan, chunks: list[ChunkResult], answers: ListwiseCost) -> ModelCost | None:
    """This run's figures when it asked for windows (stored for later runs), else the stored ones marked cached;
    either way with the answers this ranking rests on."""
    store = CostStore(plan.cache_dir)
    if answers.requests:
        cost = store.add(plan.identity, combine([c.cost for c in chunks]))
    else:
        earlier = store.get(plan.identity)
        if earlier is None:
            answerer = shared_scorer(
                plan.spec, CorpusTable(Path(plan.corpus)), plan.corpus_fingerprint, plan.offline, plan.cache_dir
            )[0]
            earlier = ModelCost(**{k: v for k, v in answerer.describe().items() if k != "requests"})
        cost = earlier.model_copy(update={"cached": True, "requests": None})
    return cost.model_copy(update={"listwise": answers})
