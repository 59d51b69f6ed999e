"""What each row of a run cost: the first stage's encoding and every reranker's scoring, over the datasets
(costs.csv, the cost columns and the Cost section)."""

from __future__ import annotations

import polars as pl

from terazi.models import costs
from terazi.schemas import FIRST_STAGE, CandidateSet, ListwiseCost, RerankResult

# costs.csv's columns taken from a system's cost record as they are (None where the system has none), in order
COST_COLUMNS = {
    "params": pl.Int64,
    "size_bytes": pl.Int64,
    "device": pl.Utf8,
    "precision": pl.Utf8,
    "batch_size": pl.Int64,
    "unit": pl.Utf8,
    "items": pl.Int64,
    "seconds": pl.Float64,
    "per_second": pl.Float64,
    "latency_p50_ms": pl.Float64,
    "latency_p95_ms": pl.Float64,
    "cached": pl.Boolean,
}


def system_costs(candidates: list[CandidateSet], reranks: list[RerankResult]) -> dict:
    """Per system, its cost over the datasets (costs.combine); the first stage's from the frozen
    candidates (cached when they were reused)."""
    first = [c.cost.model_copy(update={"cached": True}) if c.reused and c.cost else c.cost for c in candidates]
    by: dict[str, list] = {FIRST_STAGE: first}
    for r in reranks:
        if r.system != FIRST_STAGE:
            by.setdefault(r.system, []).append(r.cost)
    return {s: costs.combine(cs) for s, cs in by.items()}


def costs_frame(costs: dict, kinds: dict[str, str], order: list[str]) -> pl.DataFrame:
    """costs.csv: one row per system, full precision; with a reranker served over HTTP, its requests too (requests,
    retries, p50 and p95 ms per request); with a listwise reranker, its windows, the windows asked in this run
    (windows_requests), their tokens and the answers' outcomes (ok, wrong_format, repetition, missing_documents)."""
    rows = [
        {"system": s, "kind": kinds.get(s), **{f: c and getattr(c, f) for f in COST_COLUMNS}}
        for s in order
        for c in [costs.get(s)]
    ]
    frame = pl.DataFrame(rows, schema={"system": pl.Utf8, "kind": pl.Utf8, **COST_COLUMNS})
    if any(c and c.requests for c in costs.values()):
        served = [costs.get(s) and costs[s].requests for s in order]
        frame = frame.with_columns(
            pl.Series("requests", [r and r.requests for r in served], dtype=pl.Int64),
            pl.Series("retries", [r and r.retries for r in served], dtype=pl.Int64),
            pl.Series("request_p50_ms", [r and r.p50_ms for r in served], dtype=pl.Float64),
            pl.Series("request_p95_ms", [r and r.p95_ms for r in served], dtype=pl.Float64),
        )
    if any(c and c.listwise for c in costs.values()):
        answers = [costs.get(s) and costs[s].listwise for s in order]
        frame = frame.with_columns(
            pl.Series(f"windows_{f}" if f == "requests" else f, [a and getattr(a, f) for a in answers], dtype=pl.Int64)
            for f in ListwiseCost.model_fields
        )
    return frame
