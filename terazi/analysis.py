"""Intervals, groups, pairwise comparisons and retention with intervals, from the per-query table.

Input: per-query rows (dataset, system, condition, query_id, measure, value, changed) of one
measure. All systems are scored on the same queries (same frozen candidates), so values are
aligned by (dataset, query_id) and every comparison is paired.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import polars as pl

from terazi.stats import Interval, holm, interval, paired_difference, significance_groups


def _aligned(pq: pl.DataFrame, system: str, condition: str, datasets: list[str],
             only: pl.DataFrame | None = None) -> dict[str, np.ndarray]:
    """dataset -> values of `system` under `condition`, sorted by query id (optionally a query subset)."""
    rows = pq.filter((pl.col("system") == system) & (pl.col("condition") == condition) & pl.col("dataset").is_in(datasets))
    if only is not None:
        rows = rows.join(only, on=["dataset", "query_id"], how="semi")
    rows = rows.sort("dataset", "query_id")
    return {d: part["value"].to_numpy() for (d,), part in rows.group_by("dataset", maintain_order=True)}


def system_intervals(pq: pl.DataFrame, datasets: list[str], resamples: int, seed: int, confidence: float) -> pl.DataFrame:
    """Headline (clean) mean of each system with its interval and significance group, best first."""
    systems = pq["system"].unique(maintain_order=True).to_list()
    cis = {s: interval(_aligned(pq, s, "clean", datasets), resamples, seed, confidence) for s in systems}
    ordered = sorted(systems, key=lambda s: -cis[s].estimate)
    adjacent = [paired_difference(_aligned(pq, a, "clean", datasets), _aligned(pq, b, "clean", datasets),
                                  resamples, seed, confidence).significant for a, b in zip(ordered, ordered[1:])]
    groups = significance_groups(ordered, adjacent)
    return pl.DataFrame({
        "system": ordered,
        "mean": [cis[s].estimate for s in ordered],
        "ci_low": [cis[s].low for s in ordered],
        "ci_high": [cis[s].high for s in ordered],
        "group": [groups[s] for s in ordered],
    })


def pairwise(pq: pl.DataFrame, datasets: list[str], conditions: list[str], resamples: int, seed: int,
             confidence: float, correct: bool) -> pl.DataFrame:
    """Every pair of systems on every dataset × condition cell: better / no difference / worse.

    With `correct`, Holm's correction is applied across the cells of each pair.
    """
    systems = pq["system"].unique(maintain_order=True).to_list()
    rows = []
    for a, b in combinations(systems, 2):
        cells = []
        for d in datasets:
            for c in conditions:
                ci = paired_difference(_aligned(pq, a, c, [d]), _aligned(pq, b, c, [d]), resamples, seed, confidence)
                cells.append((d, c, ci))
        rejected = holm([ci.p_value for *_, ci in cells], 1 - confidence) if correct else [ci.significant for *_, ci in cells]
        for (d, c, ci), sig in zip(cells, rejected):
            verdict = "no difference" if not sig else ("better" if ci.estimate > 0 else "worse")
            rows.append((a, b, d, c, ci.estimate, ci.low, ci.high, ci.p_value, verdict))
    return pl.DataFrame(rows, schema=["system", "versus", "dataset", "condition", "delta", "ci_low", "ci_high",
                                      "p_value", "verdict"], orient="row")


def pairwise_summary(cells: pl.DataFrame) -> pl.DataFrame:
    """Counts of better / no difference / worse cells per pair, with the mean delta of significant cells."""
    return cells.group_by("system", "versus", maintain_order=True).agg(
        (pl.col("verdict") == "better").sum().alias("better"),
        (pl.col("verdict") == "no difference").sum().alias("no_difference"),
        (pl.col("verdict") == "worse").sum().alias("worse"),
        pl.col("delta").filter(pl.col("verdict") != "no difference").mean().alias("mean_significant_delta"),
    )


def retention_intervals(pq: pl.DataFrame, datasets: list[str], conditions: list[str], resamples: int, seed: int,
                        confidence: float) -> pl.DataFrame:
    """Per system × condition: clean and corrupted means over the changed queries, retention, and an
    interval on the difference (corrupted − clean), balanced by dataset."""
    systems = pq["system"].unique(maintain_order=True).to_list()
    rows = []
    for c in conditions:
        if c == "clean":
            continue
        changed = pq.filter((pl.col("condition") == c) & pl.col("changed") & pl.col("dataset").is_in(datasets)) \
            .select("dataset", "query_id").unique()
        n_all = pq.filter((pl.col("condition") == c) & pl.col("dataset").is_in(datasets)).select("dataset", "query_id").unique().height
        for s in systems:
            if changed.height == 0:
                rows.append((s, c, 0, 0.0, None, None, None, None, None, None))
                continue
            corrupted = _aligned(pq, s, c, datasets, changed)
            clean = _aligned(pq, s, "clean", datasets, changed)
            ci: Interval = paired_difference(corrupted, clean, resamples, seed, confidence)
            m_clean = float(np.mean([v.mean() for v in clean.values()]))
            m_corr = float(np.mean([v.mean() for v in corrupted.values()]))
            rows.append((s, c, changed.height, changed.height / n_all if n_all else 0.0, m_clean, m_corr,
                         m_corr / m_clean if m_clean > 0 else None, ci.estimate, ci.low, ci.high))
    return pl.DataFrame(rows, schema={"system": pl.Utf8, "condition": pl.Utf8, "changed_queries": pl.Int64,
                                      "share_changed": pl.Float64, "clean": pl.Float64, "corrupted": pl.Float64,
                                      "retention": pl.Float64, "delta": pl.Float64, "ci_low": pl.Float64,
                                      "ci_high": pl.Float64}, orient="row")
