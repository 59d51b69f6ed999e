"""The reranking stage: collect pairs over all conditions, skip what is cached, score the rest.

Rankings are tables with columns (condition, sample, query_id, rank, doc_id, score). A reranked
list holds the `rerank_depth` rescored candidates, then the remaining first-stage candidates in
their first-stage order, so deeper measures (R@100) still see the whole candidate list.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import polars as pl

from terazi.rerankers import Pair, PairScorer, pair_key
from terazi.score_cache import ScoreCache

log = logging.getLogger("terazi.rerank")
VARIANT = ["condition", "sample", "query_id"]


@dataclass
class PairStats:
    needed: int = 0
    unique: int = 0
    cached: int = 0
    scored: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        return (f"{self.needed} pairs needed, {self.needed - self.unique} duplicates across conditions, "
                f"{self.cached} cached, {self.scored} scored in {self.seconds:.1f}s")


def score_pairs(
    pairs: list[Pair],
    scorer: PairScorer,
    cache: ScoreCache,
    chunk: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[tuple[str, str, str], float], PairStats]:
    """Scores of all pairs; only pairs absent from the cache reach the model.

    Pairs to score are sorted by length (less padding) and scored in chunks of a few batches;
    each chunk is committed to the cache before the next starts.
    """
    stats = PairStats(needed=len(pairs))
    unique: dict[tuple[str, str, str], Pair] = {}
    for p in pairs:
        unique.setdefault(pair_key(p.query, p.doc_id, p.doc), p)
    stats.unique = len(unique)
    known = cache.get(scorer.identity, scorer.max_length, unique)
    stats.cached = len(known)
    todo = sorted((k for k in unique if k not in known), key=lambda k: len(unique[k].query) + len(unique[k].doc))
    chunk = chunk or scorer.batch_size * 8
    start = time.perf_counter()
    for i in range(0, len(todo), chunk):
        keys = todo[i : i + chunk]
        scores = scorer.score([unique[k] for k in keys])
        fresh = list(zip(keys, scores.tolist()))
        cache.put(scorer.identity, scorer.max_length, fresh)
        known.update(fresh)
        stats.scored += len(keys)
        if on_progress:
            on_progress(stats.scored, len(todo))
    stats.seconds = time.perf_counter() - start
    return known, stats


def rerank(
    candidates: pl.DataFrame,
    variants: pl.DataFrame,
    docs: dict[str, str],
    scorer: PairScorer,
    cache: ScoreCache,
    rerank_depth: int,
    on_progress: Callable[[int, int], None] | None = None,
) -> tuple[pl.DataFrame, PairStats]:
    """Rescore the top `rerank_depth` candidates of every variant; return the new rankings."""
    top = candidates.filter(pl.col("rank") <= rerank_depth).join(
        variants.select(*VARIANT, "text"), on=VARIANT, how="left")
    texts = top["text"].to_list()
    doc_ids = top["doc_id"].to_list()
    pairs = [Pair(t, d, docs[d]) for t, d in zip(texts, doc_ids)]
    scores, stats = score_pairs(pairs, scorer, cache, on_progress=on_progress)
    keys = (pair_key(p.query, p.doc_id, p.doc) for p in pairs)
    top = top.with_columns(pl.Series("score", np.fromiter((scores[k] for k in keys), dtype=np.float64, count=len(pairs))))
    return _reorder(top, candidates, rerank_depth), stats


def _reorder(top: pl.DataFrame, candidates: pl.DataFrame, rerank_depth: int) -> pl.DataFrame:
    """New order of the rescored head (ties keep first-stage order), then the untouched tail."""
    head = top.sort([*VARIANT, "score", "rank"], descending=[False, False, False, True, False]).with_columns(
        pl.int_range(1, pl.len() + 1).over(VARIANT).cast(pl.Int64).alias("rank"))
    tail = candidates.filter(pl.col("rank") > rerank_depth)
    cols = [*VARIANT, "rank", "doc_id", "score"]
    return pl.concat([head.select(cols), tail.select(cols).with_columns(pl.col("rank").cast(pl.Int64))]).sort(
        [*VARIANT, "rank"])


def reciprocal_rank_fusion(rankings: list[pl.DataFrame], rerank_depth: int, k: int = 60) -> pl.DataFrame:
    """RRF over the head of several rankings of the same candidates: Σ 1 / (k + rank)."""
    base = rankings[0]
    fused = pl.concat([r.filter(pl.col("rank") <= rerank_depth).select(*VARIANT, "doc_id", "rank") for r in rankings])
    fused = fused.group_by([*VARIANT, "doc_id"]).agg((1.0 / (k + pl.col("rank"))).sum().alias("score"))
    first = base.filter(pl.col("rank") <= rerank_depth).select(*VARIANT, "doc_id", "rank")
    top = first.join(fused, on=[*VARIANT, "doc_id"], how="left")
    return _reorder(top, base, rerank_depth)
