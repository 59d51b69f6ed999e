"""The tests a reviewer of IR results asks for beside the bootstrap interval: the paired randomization test, Holm and
Benjamini–Hochberg adjustment across many comparisons, the effect size and the minimum detectable effect.

- **Randomization test** (Fisher's sign-flip test, the field's default for a pair of systems: Smucker et al. 2007):
  under "the two systems are exchangeable" each query's difference is as likely to have either sign. The statistic is
  the estimate itself, the dataset-balanced mean difference (each dataset weighs the same, as in the bootstrap), so a
  query of dataset k weighs 1 / (K · n_k). Its two-sided p-value is scipy's `permutation_test` convention
  (2 × the smaller tail, at most 1); every sign pattern is enumerated when that is no more work than the resamples
  (queries whose difference is 0 flip nothing and are left out of the enumeration), otherwise `n_resamples` random
  patterns are drawn, with (count + 1) / (resamples + 1) so that a p-value is never 0.
- **Adjustment**: Holm's step-down (controls the family-wise error) and Benjamini–Hochberg's step-up (controls the
  false discovery rate), as statsmodels' `multipletests` computes them.
- **Minimum detectable effect**: the smallest true mean difference a two-sided paired t-test at level α detects with
  the given power: the standardised effect for the number of queries (statsmodels' `TTestPower` solved for the
  effect size) times the differences' standard deviation.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from terazi.analysis.stats import Scores
from terazi.base.shutdown import check
from terazi.schemas.statistics import Statistics
from terazi.store.bootstraps import by_content

Correction = Literal["none", "holm", "bh"]
CHUNK_CELLS = 4_000_000
_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.float64)  # byte value -> its 8 bits


@dataclass(frozen=True)
class Randomization:
    p_value: float
    exact: bool


def balanced_weights(values: Scores) -> np.ndarray:
    """The per-query differences of `values` (datasets in sorted order) each divided by K · n_k: their sum is the
    dataset-balanced mean."""
    names = sorted(values)
    parts = [np.asarray(values[n], dtype=np.float64) for n in names]
    for name, v in zip(names, parts):
        if v.size == 0:
            raise ValueError(f"dataset {name!r} has no queries to test")
    if not all(np.isfinite(v).all() for v in parts):
        raise ValueError("per-query values to test must be finite")
    return np.concatenate([v / (len(parts) * v.size) for v in parts]) if parts else np.zeros(0)


class _Signs:
    """Random sign patterns, drawn once per (queries, resamples, seed) and shared by every test of a run (each cell of
    one dataset flips the same queries' signs): packed eight to a byte, least recently used first out past
    `budget` bytes."""

    def __init__(self, budget: int = 64 * 2**20):
        self.budget, self.kept, self.lock = budget, OrderedDict(), threading.Lock()

    def __call__(self, n: int, n_resamples: int, seed: int) -> np.ndarray:
        key = (n, n_resamples, seed)
        with self.lock:
            if key in self.kept:
                self.kept.move_to_end(key)
                return self.kept[key]
        rng = np.random.default_rng(seed)
        width = -(-n // 8)
        step = max(1, CHUNK_CELLS // max(1, width))
        packed = np.concatenate(
            [
                rng.integers(0, 256, size=(min(n_resamples, start + step) - start, width), dtype=np.uint8)
                for start in range(0, n_resamples, step)
            ]
        )
        with self.lock:
            self.kept[key] = packed
            while len(self.kept) > 1 and sum(p.nbytes for p in self.kept.values()) > self.budget:
                self.kept.popitem(last=False)
        return packed


signs = _Signs()


def _kept_sums(packed: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Per row of `packed` (bit j of the row set: query j keeps its sign), the sum of the kept queries' `v`: a table
    of the 256 partial sums of each byte's 8 queries, then one look-up per byte instead of eight products."""
    width = packed.shape[1]
    table = _BYTE_BITS @ np.pad(v, (0, 8 * width - v.size)).reshape(width, 8).T  # 256 × bytes
    flat, offsets = table.T.ravel(), np.arange(width) * 256
    out = np.empty(packed.shape[0])
    step = max(1, CHUNK_CELLS // max(1, width))
    for start in range(0, packed.shape[0], step):
        check()
        out[start : start + step] = flat[packed[start : start + step] + offsets].sum(axis=1)
    return out


def _two_sided(null: np.ndarray, observed: float, tolerance: float, adjustment: int) -> float:
    """scipy's two-sided p: twice the smaller tail, ties within `tolerance` counted in both tails, at most 1."""
    greater = (np.count_nonzero(null >= observed - tolerance) + adjustment) / (null.size + adjustment)
    less = (np.count_nonzero(null <= observed + tolerance) + adjustment) / (null.size + adjustment)
    return float(min(1.0, 2 * min(greater, less)))


@by_content(Randomization)
def randomization(values: Scores, n_resamples: int = 10_000, seed: int = 13) -> Randomization:
    """Two-sided p-value of the paired randomization (sign-flip) test of per-query differences `values` (dataset ->
    differences), balanced by dataset. A keyword `known` (`by_content`): a store of results to find it in or keep it
    in."""
    v = balanced_weights(values)
    observed, moving = float(v.sum()), v[v != 0]
    if moving.size == 0:
        return Randomization(1.0, True)
    tolerance = 1e-10 * float(np.abs(moving).sum())  # the same sum added in another order
    if 2**moving.size <= n_resamples:
        bits = (np.arange(2**moving.size)[:, None] >> np.arange(moving.size)) & 1
        return Randomization(_two_sided((2 * bits - 1) @ moving, observed, tolerance, 0), True)
    null = 2 * _kept_sums(signs(v.size, n_resamples, seed), v) - observed
    return Randomization(_two_sided(null, observed, tolerance, 1), False)


def adjust(p_values: Sequence[float], correction: Correction) -> np.ndarray:
    """Adjusted p-values of one family: `holm` (step-down, family-wise error) or `bh` (Benjamini–Hochberg step-up,
    false discovery rate), as statsmodels' `multipletests` (methods 'holm', 'fdr_bh'); `none` gives them back."""
    p = np.asarray(p_values, dtype=np.float64)
    if correction == "none" or p.size == 0:
        return p.copy()
    order = np.argsort(p)
    m, ranked = p.size, p[order]
    if correction == "holm":
        adjusted = np.maximum.accumulate(ranked * np.arange(m, 0, -1))
    elif correction == "bh":
        adjusted = np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[::-1])[::-1]
    else:
        raise ValueError(f"unknown correction {correction!r}")
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out


def adjust_families(p_values: Sequence[float], families: Sequence[object], correction: Correction) -> np.ndarray:
    """`adjust` within each family (rows with the same `families` label), e.g. one system pair's cells."""
    p, labels = np.asarray(p_values, dtype=np.float64), list(families)
    out = np.empty(p.size)
    for label in dict.fromkeys(labels):
        rows = np.array([i for i, x in enumerate(labels) if x == label])
        out[rows] = adjust(p[rows], correction)
    return out


def significant(
    p_bootstrap: Sequence[float], p_adjusted: Sequence[float], pairs: Sequence[object], statistics: Statistics
) -> list[bool | None]:
    """Which comparisons are significant, for `Interval.verdict` (None: its own interval decides): with `verdict: p`,
    p_adjusted < α; with the older `holm: true`, the bootstrap p-values Holm-adjusted across each pair's cells
    (`pairs`: each comparison's pair) ≤ α, as before; else the interval."""
    if statistics.verdict == "p":
        return [bool(q < statistics.alpha) for q in p_adjusted]
    if statistics.holm:
        return [bool(q <= statistics.alpha) for q in adjust_families(p_bootstrap, pairs, "holm")]
    return [None] * len(p_adjusted)


def effect_size(differences: np.ndarray) -> float | None:
    """Mean paired difference over its standard deviation (Cohen's d_z); None when every difference is the same."""
    d = np.asarray(differences, dtype=np.float64)
    sd = float(d.std(ddof=1)) if d.size > 1 else 0.0
    return float(d.mean()) / sd if sd > 0 else None


@dataclass(frozen=True)
class Detectable:
    effect: float | None


@by_content(Detectable)
def detectable_effect(n: int, alpha: float, power: float = 0.8) -> Detectable:
    """The standardised effect (mean / sd of the differences) that a two-sided paired t-test at level `alpha` on `n`
    queries detects with probability `power` (None below 2 queries): the power equation solved by bisection. A
    keyword `known` (`by_content`): a warm run finds it there instead of loading scipy again."""
    if n < 2:
        return Detectable(None)
    from scipy import special  # a dependency of sentence-transformers; loaded only where power is asked

    df, root = n - 1, np.sqrt(n)
    upper = special.stdtrit(df, 1 - alpha / 2)

    def shortfall(d: float) -> float:  # the power at effect d (both tails), less the wanted power
        return 1 - special.nctdtr(df, d * root, upper) + special.nctdtr(df, d * root, -upper) - power

    low, high = 0.0, 2 * (special.ndtri(1 - alpha / 2) + special.ndtri(power)) / root  # twice the normal approximation
    while shortfall(high) < 0:
        low, high = high, 2 * high
    while high - low > 1e-13 * high:
        mid = (low + high) / 2
        low, high = (mid, high) if shortfall(mid) < 0 else (low, mid)
    return Detectable(float((low + high) / 2))
