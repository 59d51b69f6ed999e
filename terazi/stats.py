"""Is a difference real? Paired bootstrap balanced by dataset, significance groups, Holm.

Balanced by dataset (docs/method.md §7): each resample draws queries with replacement *within* each
dataset, averages per dataset, then averages the datasets with equal weight, so a large dataset
does not drown a small one. Pairing: both systems are evaluated on the same resampled queries,
which removes the between-query variance that dominates IR scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

Scores = Mapping[str, np.ndarray]  # dataset -> per-query values, aligned across systems


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float
    p_value: float

    @property
    def significant(self) -> bool:
        return self.low > 0 or self.high < 0


def balanced_bootstrap(values: Scores, n_resamples: int = 2000, seed: int = 0, chunk_cells: int = 4_000_000) -> np.ndarray:
    """`n_resamples` dataset-balanced means of `values` (per-query numbers, e.g. paired differences)."""
    rng = np.random.default_rng(seed)
    total = np.zeros(n_resamples)
    for name in sorted(values):
        v = np.asarray(values[name], dtype=np.float64)
        if v.size == 0:
            raise ValueError(f"dataset {name!r} has no queries to resample")
        step = max(1, chunk_cells // v.size)
        for start in range(0, n_resamples, step):
            stop = min(n_resamples, start + step)
            idx = rng.integers(0, v.size, size=(stop - start, v.size))
            total[start:stop] += v[idx].mean(axis=1)
    return total / len(values)


def balanced_mean(values: Scores) -> float:
    return float(np.mean([np.mean(v) for v in values.values()]))


def interval(values: Scores, n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> Interval:
    """Percentile interval of the balanced mean, with a two-sided bootstrap p-value against 0."""
    boot = balanced_bootstrap(values, n_resamples, seed)
    alpha = 1 - confidence
    low, high = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    p = min(1.0, 2 * min(np.mean(boot <= 0), np.mean(boot >= 0)))
    return Interval(balanced_mean(values), float(low), float(high), float(p))


def paired_difference(a: Scores, b: Scores, n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> Interval:
    """Interval of mean(a) − mean(b) over the same queries, balanced by dataset."""
    if set(a) != set(b):
        raise ValueError(f"systems cover different datasets: {sorted(a)} vs {sorted(b)}")
    diffs = {}
    for d in a:
        x, y = np.asarray(a[d], dtype=np.float64), np.asarray(b[d], dtype=np.float64)
        if x.shape != y.shape:
            raise ValueError(f"dataset {d!r}: {x.size} vs {y.size} queries; paired scores must be aligned")
        diffs[d] = x - y
    return interval(diffs, n_resamples, seed, confidence)


def holm(p_values: Sequence[float], alpha: float = 0.05) -> list[bool]:
    """Holm–Bonferroni step-down: which hypotheses are rejected at family-wise level `alpha`."""
    order = np.argsort(p_values)
    m = len(p_values)
    rejected = [False] * m
    for rank, i in enumerate(order):
        if p_values[i] > alpha / (m - rank):
            break
        rejected[i] = True
    return rejected


def significance_groups(ordered: Sequence[str], adjacent_significant: Sequence[bool]) -> dict[str, int]:
    """Group 1 at the top; a system joins its upper neighbour's group unless their difference is significant."""
    if len(adjacent_significant) != max(0, len(ordered) - 1):
        raise ValueError("need one significance flag per adjacent pair")
    groups, g = {}, 1
    for i, system in enumerate(ordered):
        if i and adjacent_significant[i - 1]:
            g += 1
        groups[system] = g
    return groups
