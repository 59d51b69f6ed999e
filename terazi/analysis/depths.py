"""The depth sweep's numbers: per reranker and depth, the headline on clean queries with its interval, the paired
difference to the deepest depth, the pairs and model seconds per query, and the share of the first stage's ceiling;
per depth, the ceiling itself (recall@depth, the oracle's headline). "Enough depth" is the smallest depth whose
headline is not significantly below the deepest's (the paired bootstrap of terazi.analysis.stats)."""

from __future__ import annotations

import numpy as np
import polars as pl

from terazi.analysis.stats import balanced_mean, interval, paired_difference
from terazi.schemas import FIRST_STAGE, ModelCost
from terazi.store.bootstraps import BootstrapStore


def _by_dataset(frame: pl.DataFrame, column: str, datasets: list[str]) -> dict[str, np.ndarray]:
    """{dataset: values in query order}: aligned across depths and systems of the same clean queries."""
    return {
        d: frame.filter(pl.col("dataset") == d).sort("query_id")[column].to_numpy()
        for d in datasets
        if frame.filter(pl.col("dataset") == d).height
    }


def ceiling_table(
    ceiling: pl.DataFrame,
    datasets: list[str],
    resamples: int,
    seed: int,
    confidence: float,
    *,
    known: BootstrapStore | None = None,
) -> pl.DataFrame:
    """ceiling.csv: per first stage and depth, recall@depth and the oracle's headline with their intervals (`known`:
    where intervals computed before are found, terazi.store.bootstraps; as in `depth_table`)."""
    rows = []
    for (stage, depth), part in ceiling.sort("depth").group_by("system", "depth", maintain_order=True):
        recall, oracle = (
            interval(_by_dataset(part, c, datasets), resamples, seed, confidence, known=known)
            for c in ("recall", "oracle")
        )
        rows.append(
            {
                "first_stage": stage,
                "depth": depth,
                "recall": recall.estimate,
                "recall_low": recall.low,
                "recall_high": recall.high,
                "oracle": oracle.estimate,
                "oracle_low": oracle.low,
                "oracle_high": oracle.high,
            }
        )
    return pl.DataFrame(rows)


def depth_table(
    sweep: pl.DataFrame,
    ceiling: pl.DataFrame,
    datasets: list[str],
    order: list[str],
    costs: dict[str, ModelCost | None],
    resamples: int,
    seed: int,
    confidence: float,
    *,
    known: BootstrapStore | None = None,
) -> pl.DataFrame:
    """depths.csv: per reranker (leaderboard order) and depth, its headline and interval, Δ to the deepest depth
    with its paired interval and verdict, `enough` (this depth is the smallest not significantly below the deepest),
    pairs and model seconds per query (pairs / warm pairs per second), and the share of the oracle's headline."""
    oracle = {d: balanced_mean(_by_dataset(part, "oracle", datasets)) for (d,), part in ceiling.group_by("depth")}
    rows = []
    for system in [s for s in order if s in set(sweep["system"])]:
        part = sweep.filter(pl.col("system") == system)
        depths = sorted(set(part["depth"]))
        at = {d: _by_dataset(part.filter(pl.col("depth") == d), "value", datasets) for d in depths}
        deepest, speed = at[depths[-1]], (c.per_second if (c := costs.get(system)) else None)
        found = []
        for d in depths:
            iv, diff = (
                interval(at[d], resamples, seed, confidence, known=known),
                paired_difference(at[d], deepest, resamples, seed, confidence, known=known),
            )
            pairs = balanced_mean(_by_dataset(part.filter(pl.col("depth") == d), "pairs", datasets))
            found.append(
                {
                    "first_stage": FIRST_STAGE,
                    "system": system,
                    "depth": d,
                    "mean": iv.estimate,
                    "ci_low": iv.low,
                    "ci_high": iv.high,
                    "delta_deepest": diff.estimate,
                    "delta_low": diff.low,
                    "delta_high": diff.high,
                    "verdict": "no difference" if d == depths[-1] else diff.verdict(),
                    "pairs_per_query": pairs,
                    "seconds_per_query": pairs / speed if speed else None,
                    "oracle": oracle.get(d),
                    "share_of_ceiling": iv.estimate / oracle[d] if oracle.get(d) else None,
                }
            )
        enough = next(r["depth"] for r in found if r["verdict"] != "worse")
        rows += [{**r, "enough": r["depth"] == enough} for r in found]
    return pl.DataFrame(
        rows, schema_overrides={"seconds_per_query": pl.Float64, "oracle": pl.Float64, "share_of_ceiling": pl.Float64}
    )
