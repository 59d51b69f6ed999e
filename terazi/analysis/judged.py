"""Judged variants: is a cheaper copy of a model (int8, ONNX, another precision) as good as the original?

As the Kalbur card judges its int8 file: on a seeded subset of the benchmark's clean queries, the headline
difference (variant − base) with its paired-bootstrap interval (at the run's confidence), beside the speed and
size ratios. "No significant difference" is not "as good": a difference that is not significant is *equivalent
within δ* when the two one-sided tests at level α agree (the bootstrap's 1 − 2α interval inside [−δ, δ], δ the
pair's or the run's `equivalence_margin`), else *not shown equivalent*.

The subset is drawn uniformly from the (dataset, query) pairs of the ranked datasets, so the difference is the plain
mean over the subset's queries, and the bootstrap resamples those queries with both rows paired.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from terazi.analysis import stats
from terazi.analysis.hypotheses import randomization
from terazi.schemas import EvalConfig, ModelCost, Statistics
from terazi.schemas.tables import CLEAN
from terazi.store.bootstraps import BootstrapStore


@dataclass(frozen=True)
class Judgement:
    base: str
    variant: str
    label: str
    measure: str
    queries: int
    delta: float
    low: float
    high: float
    margin: float
    verdict: str
    base_cost: ModelCost | None = None
    variant_cost: ModelCost | None = None

    @property
    def speed_ratio(self) -> float | None:
        b, v = self.base_cost, self.variant_cost
        if not (b and v and b.per_second and v.per_second) or b.unit != v.unit:
            return None
        return v.per_second / b.per_second

    @property
    def size_ratio(self) -> float | None:
        b, v = self.base_cost, self.variant_cost
        return v.size_bytes / b.size_bytes if b and v and b.size_bytes and v.size_bytes else None


def subset(values: pl.DataFrame, n: int | None, seed: int) -> pl.DataFrame:
    """A seeded sample of `n` (dataset, query_id) rows of `values` (all of them when n is None or larger)."""
    keys = values.select("dataset", "query_id").unique().sort("dataset", "query_id")
    if n is None or n >= keys.height:
        return keys
    rows = np.sort(np.random.default_rng(seed).choice(keys.height, size=n, replace=False))
    return keys[rows.tolist()]


def judge(
    per_query: pl.DataFrame,
    base: str,
    variant: str,
    measure: str,
    datasets: list[str],
    n: int | None,
    statistics: Statistics,
    label: str | None = None,
    costs: dict[str, ModelCost | None] | None = None,
    margin: float | None = None,
    *,
    known: BootstrapStore | None = None,
) -> Judgement:
    """`variant` against `base` on a seeded subset of the clean queries of `datasets` (per_query: dataset, system,
    condition, query_id, measure, value), at `margin` (default: `statistics.equivalence_margin`); `known`: where
    intervals computed before are found (terazi.store.bootstraps)."""
    clean = per_query.filter(
        (pl.col("condition") == CLEAN) & (pl.col("measure") == measure) & pl.col("dataset").is_in(datasets)
    )
    a = clean.filter(pl.col("system") == base).select("dataset", "query_id", pl.col("value").alias("base"))
    b = clean.filter(pl.col("system") == variant).select("dataset", "query_id", pl.col("value").alias("variant"))
    both = a.join(b, on=["dataset", "query_id"], how="inner")
    if not both.height:
        raise ValueError(f"variants: {variant!r} and {base!r} share no clean queries to compare")
    if both.height < max(a.height, b.height):
        raise ValueError(
            f"variants: {variant!r} and {base!r} were evaluated on different queries ({b.height} vs {a.height})"
        )
    seed = statistics.seed
    chosen = both.join(subset(both, n, seed), on=["dataset", "query_id"], how="semi").sort("dataset", "query_id")
    a, b = {"subset": chosen["variant"].to_numpy()}, {"subset": chosen["base"].to_numpy()}
    iv = stats.paired_difference(a, b, statistics.bootstrap_resamples, seed, statistics.confidence, known=known)
    significant = None
    if statistics.verdict == "p":  # one test per judged pair: nothing to adjust over
        p = randomization(stats.differences(a, b), statistics.randomization_resamples, seed, known=known).p_value
        significant = p < statistics.alpha
    margin = statistics.equivalence_margin if margin is None else margin
    costs = costs or {}
    return Judgement(
        base,
        variant,
        label or f"{variant} vs {base}",
        measure,
        chosen.height,
        iv.estimate,
        iv.low,
        iv.high,
        margin,
        iv.judged(margin, significant),
        costs.get(base),
        costs.get(variant),
    )


def judge_variants(
    per_query: pl.DataFrame, ranked: list[str], config: EvalConfig, costs: dict, known: BootstrapStore | None = None
) -> list[Judgement]:
    """Every variant the run's configuration names (`variants`), judged against its base (`judge`)."""
    return [
        judge(
            per_query,
            v.base,
            v.variant,
            config.headline,
            ranked,
            config.subset,
            config,
            v.label,
            costs,
            v.equivalence_margin,
            known=known,
        )
        for v in config.variants
    ]
