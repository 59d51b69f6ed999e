"""Intervals, groups, pairwise comparisons and retention with intervals, from the per-query table.

Input: per-query rows (dataset, system, condition, query_id, measure, value, changed) of one
measure. All systems are scored on the same queries (same frozen candidates), so values are
aligned by (dataset, query_id) and every comparison is paired.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import polars as pl

from terazi.analysis.hypotheses import (
    adjust,
    adjust_families,
    detectable_effect,
    effect_size,
    randomization,
    significant,
)
from terazi.analysis.stats import (
    differences,
    interval,
    paired_difference,
    significance_groups,
)
from terazi.schemas.statistics import Statistics
from terazi.schemas.tables import CLEAN
from terazi.store.bootstraps import BootstrapStore

Cells = dict[tuple[str, str], dict[str, tuple[pl.Series, np.ndarray]]]
Subset = dict[str, pl.Series]


def by_cell(pq: pl.DataFrame, datasets: list[str]) -> Cells:
    """(system, condition) -> dataset -> its query ids and values, sorted by query id, datasets in sorted order: the
    table is filtered, sorted and split once, and every comparison after that takes arrays (a warm demo's statistics
    made a thousand small polars queries here, one group-by per comparison)."""
    rows = pq.filter(pl.col("dataset").is_in(datasets)).select("system", "condition", "dataset", "query_id", "value")
    cells: Cells = {}
    for (s, c, d), part in (
        rows.sort("dataset", "query_id")
        .partition_by("system", "condition", "dataset", as_dict=True, include_key=False, maintain_order=True)
        .items()
    ):
        cells.setdefault((s, c), {})[d] = (part["query_id"], part["value"].to_numpy())
    return cells


def aligned(
    cells: Cells, system: str, condition: str, datasets: list[str] | None = None, only: Subset | None = None
) -> dict[str, np.ndarray]:
    """dataset -> values of `system` under `condition`, sorted by query id (optionally some datasets, a query subset:
    `_subset`); a dataset with no value left is left out."""
    out = {}
    for d, (ids, values) in cells.get((system, condition), {}).items():
        if datasets is not None and d not in datasets:
            continue
        if only is not None:
            values = values[ids.is_in(only[d].implode()).to_numpy()] if d in only else values[:0]
        if values.size:
            out[d] = values
    return out


def system_intervals(
    pq: pl.DataFrame, datasets: list[str], statistics: Statistics, *, known: BootstrapStore | None = None
) -> pl.DataFrame:
    """Headline (clean) mean of each system with its interval and significance group, best first (`known`: where
    intervals computed before are found, terazi.store.bootstraps; as in every function here). Adjacent systems are in
    one group unless their difference is significant: its interval excludes 0, or (`verdict: p`) the randomization
    test's p-value, adjusted across the adjacent pairs (`correction`; scope `pair`: each alone), is below α."""
    resamples, seed, confidence = statistics.bootstrap_resamples, statistics.seed, statistics.confidence
    systems = pq["system"].unique(maintain_order=True).to_list()
    cells = by_cell(pq.filter(pl.col("condition") == CLEAN), datasets)
    cis = {s: interval(aligned(cells, s, CLEAN), resamples, seed, confidence, known=known) for s in systems}
    ordered = sorted(systems, key=lambda s: -cis[s].estimate)
    neighbours = list(zip(ordered, ordered[1:]))
    if statistics.verdict == "p":
        p = [
            randomization(
                differences(aligned(cells, a, CLEAN), aligned(cells, b, CLEAN)),
                statistics.randomization_resamples,
                seed,
                known=known,
            ).p_value
            for a, b in neighbours
        ]
        correction = statistics.correction if statistics.correction_scope == "table" else "none"
        adjacent = list(adjust(p, correction) < statistics.alpha)
    else:
        adjacent = [
            paired_difference(
                aligned(cells, a, CLEAN), aligned(cells, b, CLEAN), resamples, seed, confidence, known=known
            ).significant
            for a, b in neighbours
        ]
    groups = significance_groups(ordered, adjacent)
    return pl.DataFrame(
        {
            "system": ordered,
            "mean": [cis[s].estimate for s in ordered],
            "ci_low": [cis[s].low for s in ordered],
            "ci_high": [cis[s].high for s in ordered],
            "group": [groups[s] for s in ordered],
        }
    )


PAIRS_SCHEMA = {
    "system": pl.Utf8,
    "versus": pl.Utf8,
    "dataset": pl.Utf8,
    "condition": pl.Utf8,
    "delta": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "p_value": pl.Float64,
    "verdict": pl.Utf8,
    "p_randomization": pl.Float64,
    "p_adjusted": pl.Float64,
    "effect_size": pl.Float64,
}


def pairwise(
    pq: pl.DataFrame,
    datasets: list[str],
    conditions: list[str],
    statistics: Statistics,
    *,
    known: BootstrapStore | None = None,
) -> pl.DataFrame:
    """Every pair of systems on every dataset × condition cell: the bootstrap interval of the difference, the paired
    randomization test's p-value, adjusted (`correction` over `correction_scope`), the effect size, and the verdict
    (better / no difference / worse) from the interval or, with `verdict: p`, from the adjusted p-value."""
    resamples, seed, confidence = statistics.bootstrap_resamples, statistics.seed, statistics.confidence
    systems = pq["system"].unique(maintain_order=True).to_list()
    by = by_cell(pq, datasets)
    rows = []
    for a, b in combinations(systems, 2):
        for d in datasets:
            for c in conditions:
                x, y = aligned(by, a, c, [d]), aligned(by, b, c, [d])
                ci = paired_difference(x, y, resamples, seed, confidence, known=known)
                diffs = differences(x, y)
                p = randomization(diffs, statistics.randomization_resamples, seed, known=known).p_value
                rows.append(((a, b), d, c, ci, p, effect_size(np.concatenate(list(diffs.values())))))
    pairs = [pair for pair, *_ in rows]
    families = pairs if statistics.correction_scope == "pair" else [None] * len(rows)
    adjusted = adjust_families([p for *_, p, _ in rows], families, statistics.correction)
    flags = significant([r[3].p_value for r in rows], adjusted, pairs, statistics)
    out = [
        (*pair, d, c, ci.estimate, ci.low, ci.high, ci.p_value, ci.verdict(flag), p, float(q), es)
        for (pair, d, c, ci, p, es), q, flag in zip(rows, adjusted, flags)
    ]
    return pl.DataFrame(out, schema=PAIRS_SCHEMA, orient="row")  # typed: one system has no pair, and no rows


def detectable_differences(
    pq: pl.DataFrame,
    datasets: list[str],
    order: list[str],
    alpha: float,
    power: float = 0.8,
    *,
    known: BootstrapStore | None = None,
) -> pl.DataFrame:
    """Per dataset, the minimum detectable effect of a two-sided paired t-test at level `alpha` with `power`, in the
    headline's units, from the clean paired differences: of the top two systems of `order` (`mde`), and the median
    over every pair of systems (`mde_median`); None with fewer than two systems or queries."""
    cells = by_cell(pq.filter(pl.col("condition") == CLEAN), datasets)
    rows = []
    for d in datasets:
        values = {s: cells[(s, CLEAN)][d][1] for s in order if d in cells.get((s, CLEAN), {})}
        systems = list(values)
        effect = detectable_effect(len(values[systems[0]]), alpha, power, known=known).effect if systems else None
        sds = [float(np.std(values[a] - values[b], ddof=1)) for a, b in combinations(systems, 2)]
        if effect is None or not sds:
            rows.append((d, None, None))
        else:
            rows.append((d, effect * sds[0], effect * float(np.median(sds))))
    return pl.DataFrame(rows, schema={"dataset": pl.Utf8, "mde": pl.Float64, "mde_median": pl.Float64}, orient="row")


def uninformative_cells(pairs: pl.DataFrame, detectable: pl.DataFrame) -> pl.DataFrame:
    """Per dataset, the "no difference" cells (comparisons.csv) whose dataset's minimum detectable effect exceeds
    their interval's width (`cells`), and how many "no difference" cells it has (`of`)."""
    same = pairs.filter(pl.col("verdict") == "no difference").join(detectable, on="dataset", how="inner")
    return same.group_by("dataset", maintain_order=True).agg(
        (pl.col("mde") > pl.col("ci_high") - pl.col("ci_low")).sum().alias("cells"),
        pl.len().alias("of"),
        pl.col("mde").first(),
    )


def featured_cells(cells: pl.DataFrame, system: str) -> pl.DataFrame:
    """Every cell of `system` against each other system, from `system`'s side (delta = system − versus)."""
    flip = {"better": "worse", "worse": "better", "no difference": "no difference"}
    mine = cells.filter(pl.col("system") == system)
    theirs = cells.filter(pl.col("versus") == system).select(
        pl.lit(system).alias("system"),
        pl.col("system").alias("versus"),
        "dataset",
        "condition",
        -pl.col("delta"),
        -pl.col("ci_high").alias("ci_low"),
        -pl.col("ci_low").alias("ci_high"),
        "p_value",
        pl.col("verdict").replace_strict(flip),
        "p_randomization",
        "p_adjusted",
        -pl.col("effect_size"),
    )
    return pl.concat([mine, theirs.select(mine.columns)])


def pairwise_summary(cells: pl.DataFrame) -> pl.DataFrame:
    """Counts of better / no difference / worse cells per pair, with the mean delta of significant cells."""
    return cells.group_by("system", "versus", maintain_order=True).agg(
        (pl.col("verdict") == "better").sum().alias("better"),
        (pl.col("verdict") == "no difference").sum().alias("no_difference"),
        (pl.col("verdict") == "worse").sum().alias("worse"),
        pl.col("delta").filter(pl.col("verdict") != "no difference").mean().alias("mean_significant_delta"),
    )
