"""Does the rerankers' order hold across first stages? Kendall's τ-b between their clean headlines on two first
stages, with a paired percentile interval (the queries resampled within each dataset, the same draws for both first
stages and every reranker, datasets weighted equally), and the pairwise verdicts that flip."""

from __future__ import annotations

import math

import numpy as np
import polars as pl


def kendall_tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's τ-b of two scorings of the same items (ties as scipy.stats.kendalltau counts them); NaN when
    either scoring is all ties."""
    i, j = np.triu_indices(len(a), 1)
    da, db = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
    n0 = len(i)
    denominator = math.sqrt((n0 - int((da == 0).sum())) * (n0 - int((db == 0).sum())))
    return float((da * db).sum() / denominator) if denominator else math.nan


def tau_interval(
    first: dict[str, np.ndarray],
    second: dict[str, np.ndarray],
    resamples: int,
    seed: int,
    confidence: float,
    chunk: int = 100,
) -> tuple[float, float | None, float | None]:
    """τ between the dataset-balanced means of two (systems × queries) matrices per dataset (same systems, same
    queries, in the same order), and its percentile interval."""
    names = sorted(first)
    point = kendall_tau(*(np.mean([m[d].mean(axis=1) for d in names], axis=0) for m in (first, second)))
    rng, taus = np.random.default_rng(seed), []
    for start in range(0, resamples, chunk):
        n = min(chunk, resamples - start)
        sums = [np.zeros((first[names[0]].shape[0], n)) for _ in range(2)]
        for d in names:
            idx = rng.integers(0, first[d].shape[1], size=(n, first[d].shape[1]))
            for s, m in zip(sums, (first, second)):
                s += m[d][:, idx].mean(axis=2)
        taus += [kendall_tau(sums[0][:, r], sums[1][:, r]) for r in range(n)]
    taus = np.asarray(taus)
    taus = taus[np.isfinite(taus)]
    if not taus.size:
        return point, None, None
    alpha = 1 - confidence
    low, high = np.quantile(taus, [alpha / 2, 1 - alpha / 2])
    return point, float(low), float(high)


def flips(first: pl.DataFrame, second: pl.DataFrame) -> pl.DataFrame:
    """The clean pairwise verdicts (comparisons.csv rows: system, versus, dataset, verdict) that differ."""
    on = ["system", "versus", "dataset"]
    return (
        first.select(*on, "verdict")
        .join(second.select(*on, "verdict"), on=on, suffix="_other")
        .filter(pl.col("verdict") != pl.col("verdict_other"))
    )
