"""Retention's two-level bootstrap: with several samples of a stochastic condition per query (the typo sampler's
draws), how much of the retention's uncertainty is the sampler's luck rather than the choice of queries.

Each resample draws the queries with replacement within each dataset (the very draws of `stats.ratio_interval`, so the
two intervals differ only by the samples), then, for each drawn query, its samples with replacement; the corrupted
value of a drawn query is the mean of its drawn samples (Davison & Hinkley 1997, §3.8, hierarchical data: resampling
at both stages). The samples' share of the variance follows the law of total variance over the two stages:
Var(θ*) = Var(E[θ* | queries]) + E[Var(θ* | queries)], the first term being the queries-only bootstrap's variance
(each query's samples averaged, as per_query.parquet holds them). So the share is 1 − V_queries / V_two-level on the
same query draws: 0 when a query's samples are all equal, near 1 when the queries are alike and the samples are not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from terazi.analysis.stats import Aggregation, Counts, Scores, draws, ratios, resampled_means
from terazi.base.shutdown import check
from terazi.store.bootstraps import by_content


@dataclass(frozen=True)
class TwoLevel:
    """The retention's percentile interval from the two-level bootstrap, and the share of that bootstrap's variance
    due to resampling the samples (`share`, in [0, 1]); None where the ratio is undefined in most resamples."""

    low: float | None
    high: float | None
    share: float | None


def within_means(values: np.ndarray, counts: Counts, rng: np.random.Generator, chunk_cells: int) -> np.ndarray:
    """Per resample of `counts` (how often each query was drawn), the mean over the drawn queries of the mean of
    each one's samples drawn with replacement: `values` is queries × samples; every drawn copy of a query draws its
    own samples."""
    n, b = values.shape
    flat = np.ascontiguousarray(values).ravel()  # query q's sample s at q × b + s
    out = np.empty(counts.shape[0])
    step = max(1, chunk_cells // (n * b))
    for start in range(0, counts.shape[0], step):
        check()
        block = counts.rows(start, start + step).astype(np.int64)
        rows = block.shape[0]
        drawn = np.repeat(np.tile(np.arange(n) * b, rows), block.ravel())  # each row draws n queries: rows × n copies
        picks = rng.integers(0, b, size=(b, drawn.size), dtype=np.min_scalar_type(b))  # each copy's b picks: a column
        total = np.zeros(drawn.size)
        for k in range(b):  # one contiguous gather per pick: a reduction over a short axis is slow
            total += flat[drawn + picks[k]]
        out[start : start + rows] = total.reshape(rows, n).sum(axis=1) / (n * b)
    return out


@by_content(TwoLevel)
def two_level_ratio(
    num: Mapping[str, np.ndarray],
    den: Scores,
    n_resamples: int,
    seed: int,
    confidence: float,
    aggregation: Aggregation = "macro",
    chunk_cells: int = 4_000_000,
) -> TwoLevel:
    """Retention = corrupted (`num`: dataset -> queries × samples) over clean (`den`: dataset -> per-query values,
    the same queries in the same order), aggregated as `stats.ratio_interval` does, with its two-level interval and
    the samples' share of its variance (module docstring). The queries are drawn as `ratio_interval` draws them
    (`seed`); the samples from a child of `seed`'s sequence. A keyword `known` (`by_content`): a store of results."""
    if set(num) != set(den):
        raise ValueError(f"corrupted and clean cover different datasets: {sorted(num)} vs {sorted(den)}")
    names = sorted(num)
    pairs = [(np.asarray(num[name], dtype=np.float64), np.asarray(den[name], dtype=np.float64)) for name in names]
    for name, (x, y) in zip(names, pairs):
        if x.ndim != 2 or x.shape[0] != y.size or x.size == 0 or not np.isfinite(x).all():
            raise ValueError(f"dataset {name!r}: corrupted values {x.shape} for {y.size} clean; need queries × samples")
    if not names:
        return TwoLevel(None, None, None)
    queries = np.zeros((n_resamples, len(names)))
    both, clean = np.zeros_like(queries), np.zeros_like(queries)
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    counts = draws(tuple(y.size for _, y in pairs), n_resamples, seed, chunk_cells)
    for j, ((x, y), c) in enumerate(zip(pairs, counts)):
        queries[:, j], clean[:, j] = resampled_means([x.mean(axis=1), y], c, chunk_cells)
        both[:, j] = within_means(x, c, rng, chunk_cells)
    one, two = ratios(queries, clean, aggregation), ratios(both, clean, aggregation)
    ok = np.isfinite(one) & np.isfinite(two)
    if ok.sum() < n_resamples / 2:  # the ratio is undefined in most resamples: no honest interval
        return TwoLevel(None, None, None)
    alpha = 1 - confidence
    low, high = np.quantile(two[ok], [alpha / 2, 1 - alpha / 2])
    v_one, v_two = float(np.var(one[ok])), float(np.var(two[ok]))
    noise = (1e-12 * max(1.0, float(np.abs(two[ok]).max()))) ** 2  # the same sums rounded in another order
    share = 0.0 if v_two <= noise else min(1.0, max(0.0, 1 - v_one / v_two))
    return TwoLevel(float(low), float(high), share)
