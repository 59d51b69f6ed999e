"""What a reranking row costs: each chunk's share of its scorer's meter, the latency per query, and the figure a row
reports (this run's, stored for later runs; or the stored one, marked cached).

The latency is one query's `rerank_depth` candidates scored as one call, for a few queries after the run's scoring,
on the worker that holds the model.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from terazi.models.costs import CostStore, combine
from terazi.rerank.pairs import Pair
from terazi.schemas import ModelCost
from terazi.schemas.tables import CLEAN

LATENCY_QUERIES = int(os.environ.get("TERAZI_LATENCY_QUERIES", "20"))  # 0: no latency probe


class Meter:
    """This chunk's share of a metered scorer's figures (a scorer lives on across chunks and runs in a process)."""

    def __init__(self, scorer):
        self.scorer = scorer if hasattr(scorer, "cost") else None
        if self.scorer is not None:
            self.items, self.seconds, self.latencies = scorer.items, scorer.seconds, len(scorer.latencies_ms)
            self.log = getattr(scorer, "request_log", None)  # a scorer served over HTTP
            self.requests = self.log.mark() if self.log else None

    def result(self) -> ModelCost | None:
        if self.scorer is None:
            return None
        total = self.scorer.cost()
        lat = np.asarray(self.scorer.latencies_ms[self.latencies :])
        return total.model_copy(
            update={
                "items": total.items - self.items,
                "seconds": round(total.seconds - self.seconds, 6),
                "latency_p50_ms": round(float(np.percentile(lat, 50)), 3) if lat.size else None,
                "latency_p95_ms": round(float(np.percentile(lat, 95)), 3) if lat.size else None,
                "latency_queries": int(lat.size),
                "requests": self.log.since(self.requests) if self.log else None,
            }
        )


def query_groups(
    candidates: Path, variants: list[str], corpus, rerank_depth: int, n: int = LATENCY_QUERIES
) -> list[list[Pair]]:
    """The first `n` clean queries' top `rerank_depth` candidates as pairs, one list per query."""
    top = (
        pl.scan_parquet(candidates)
        .filter((pl.col("condition") == CLEAN) & (pl.col("sample") == 0) & (pl.col("rank") <= rerank_depth))
        .collect()
    )
    ids = top["query_id"].unique(maintain_order=True).head(n)
    texts = pl.concat([pl.read_parquet(v, columns=["condition", "sample", "query_id", "text"]) for v in variants])
    top = top.filter(pl.col("query_id").is_in(ids.implode())).join(
        texts.filter(pl.col("condition") == CLEAN).select("sample", "query_id", "text"), on=["sample", "query_id"]
    )
    docs = corpus.texts(top["doc_id"].unique().to_list())
    groups: dict[str, list[Pair]] = {}
    for q, text, d in top.sort("query_id", "rank").select("query_id", "text", "doc_id").iter_rows():
        groups.setdefault(q, []).append(Pair(text, d, docs[d]))
    return list(groups.values())


MIN_PROBE_S = 1.0  # the latency probe's least time budget


def probe_latency(scorer, candidates: Path, variants: list[str], corpus, rerank_depth: int) -> None:
    """Time up to `LATENCY_QUERIES` queries one at a time (within 10% of the scoring time, at least MIN_PROBE_S)."""
    if hasattr(scorer, "time_queries") and variants and LATENCY_QUERIES:
        scorer.time_queries(
            query_groups(candidates, variants, corpus, rerank_depth), budget_s=max(MIN_PROBE_S, 0.1 * scorer.seconds)
        )


def settle(
    identity: str, chunk_costs: list[ModelCost], scored: int, cache_dir: str, scorer: Callable[[], object]
) -> ModelCost | None:
    """The row's cost for its RerankResult: this run's warm figures summed over its chunks (stored for later runs)
    when it scored pairs, else the stored figures marked cached (or size only, when no run has scored with this
    identity yet; `scorer()` gives an unloaded scorer to describe)."""
    store = CostStore(cache_dir)
    cost = combine(chunk_costs) if scored else None
    if cost is not None and not cost.cached:
        store.add(identity, cost)
        return cost
    earlier = store.get(identity)
    if earlier is not None:
        return earlier.model_copy(update={"cached": True})
    fresh = scorer()
    return fresh.cost(cached=True) if hasattr(fresh, "cost") else None
