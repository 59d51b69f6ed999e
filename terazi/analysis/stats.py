"""Is a difference real? Paired bootstrap balanced by dataset, significance groups, equivalence, retention ratios.

Balanced by dataset (docs/method.md §7): each resample draws queries with replacement *within* each
dataset, averages per dataset, then averages the datasets with equal weight, so a large dataset
does not drown a small one. Pairing: both systems are evaluated on the same resampled queries,
which removes the between-query variance that dominates IR scores.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from terazi.base.shutdown import check
from terazi.schemas.statistics import DEFAULTS
from terazi.store.bootstraps import BootstrapStore, by_content

Scores = Mapping[str, np.ndarray]  # dataset -> per-query values, aligned across systems
Aggregation = Literal["macro", "pooled"]


EQUIVALENT, NOT_EQUIVALENT = "equivalent within δ", "not shown equivalent"


@dataclass(frozen=True)
class Interval:
    """The estimate with its percentile interval and bootstrap p-value; `tost_low`/`tost_high` are the same
    resamples' 1 − 2α interval, the one two one-sided tests at level α read (`equivalent`)."""

    estimate: float
    low: float
    high: float
    p_value: float
    tost_low: float
    tost_high: float

    @property
    def significant(self) -> bool:
        return self.low > 0 or self.high < 0

    def equivalent(self, margin: float) -> bool:
        """Two one-sided tests on the paired bootstrap: the 1 − 2α interval lies inside [−margin, margin]."""
        return -margin <= self.tost_low and self.tost_high <= margin

    def verdict(self, significant: bool | None = None) -> str:
        """better / worse / no difference; `significant` overrides the interval's own test (an adjusted p-value)."""
        if not (self.significant if significant is None else significant):
            return "no difference"
        return "better" if self.estimate > 0 else "worse"

    def judged(self, margin: float, significant: bool | None = None) -> str:
        """`verdict`, with "no difference" told apart: equivalent within the margin, or not shown equivalent."""
        verdict = self.verdict(significant)
        if verdict != "no difference":
            return verdict
        return EQUIVALENT if self.equivalent(margin) else NOT_EQUIVALENT


class _Draws:
    """The resamples of a run, drawn once per (seed, resamples, dataset sizes) and shared by every interval.

    Every interval of a run resamples the same datasets with the same seed, so it draws the same queries: drawing them
    once and keeping each dataset's draws as counts (how often each query is in each resample: `Counts`, half a byte
    each, so 2000 × 10,000 queries is 10 MB) turns an interval into one matrix product per dataset instead of drawing
    and gathering resamples × queries values again. The generator is called exactly as an interval drawing its own
    would (seeded with `seed`, datasets in the caller's order, chunks of about `chunk_cells` indexes), so the
    resamples are the same queries as before. Kept up to `budget` bytes, least recently used first out.
    """

    def __init__(self, budget: int = 256 * 2**20):
        self.budget, self.kept, self.lock = budget, OrderedDict(), threading.Lock()

    def __call__(self, sizes: tuple[int, ...], n_resamples: int, seed: int, chunk_cells: int) -> list[Counts]:
        key = (sizes, n_resamples, seed, chunk_cells)
        with self.lock:
            if key in self.kept:
                self.kept.move_to_end(key)
                return self.kept[key]
        rng = np.random.default_rng(seed)
        counts = [self._counts(rng, size, n_resamples, chunk_cells) for size in sizes]
        with self.lock:
            self.kept[key] = counts
            while len(self.kept) > 1 and sum(c.nbytes for v in self.kept.values() for c in v) > self.budget:
                self.kept.popitem(last=False)
        return counts

    @staticmethod
    def _counts(rng: np.random.Generator, size: int, n_resamples: int, chunk_cells: int) -> Counts:
        if size == 0:
            raise ValueError("a dataset has no queries to resample")
        step = max(1, chunk_cells // size)
        counts = Counts(size)
        for start in range(0, n_resamples, step):
            check()
            rows = min(n_resamples, start + step) - start
            idx = rng.integers(0, size, size=(rows, size))
            idx += np.arange(rows)[:, None] * size  # row r's queries counted in r's own block of `size` bins
            counts.add(np.bincount(idx.ravel(), minlength=rows * size).reshape(rows, size))
        return counts


class Counts:
    """How often each query is in each resample (resamples × queries), kept in the blocks of rows it was drawn in:
    two counts to a byte in a block whose counts are all below 16 (every block but in theory: a count is about
    Poisson(1)), else the smallest unsigned type that holds them. `rows` gives them back as floats."""

    def __init__(self, size: int):
        self.size, self.blocks, self.starts = size, [], [0]

    def add(self, c: np.ndarray) -> None:
        top, rows = int(c.max()), c.shape[0]
        c = c.astype(np.min_scalar_type(top))
        if top < 16:
            c = np.pad(c, ((0, 0), (0, c.shape[1] % 2)))
            c = c[:, 0::2] | c[:, 1::2] << 4
        self.blocks.append((top < 16, c))
        self.starts.append(self.starts[-1] + rows)

    @property
    def shape(self) -> tuple[int, int]:
        return self.starts[-1], self.size

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for _, b in self.blocks)

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Rows `start` to `stop` (resamples), as one C-ordered float64 matrix."""
        out = np.empty((max(0, min(stop, self.shape[0]) - start), self.size))
        for (packed, block), a, z in zip(self.blocks, self.starts, self.starts[1:]):
            lo, hi = max(start, a), min(stop, z)
            if lo >= hi:
                continue
            part, into = block[lo - a : hi - a], out[lo - start : hi - start]
            if packed:
                into[:, 0::2] = part & 15
                into[:, 1::2] = (part >> 4)[:, : self.size // 2]
            else:
                into[:] = part
        return out


draws = _Draws()


def resampled_means(arrays: Sequence[np.ndarray], counts: Counts, chunk_cells: int = 4_000_000) -> list[np.ndarray]:
    """The mean of each of one dataset's aligned `arrays` in each resample of `counts` (resamples × queries: how
    often each query was drawn; the same queries for every array: paired), in blocks of rows of about `chunk_cells`
    cells so that memory stays bounded whatever the query count."""
    values = np.column_stack([np.asarray(a, dtype=np.float64) for a in arrays])
    if values.shape[0] != counts.shape[1]:
        raise ValueError(f"{values.shape[0]} values for resamples of {counts.shape[1]} queries")
    if not np.isfinite(values).all():  # 0 × NaN would spoil every resample, not only those that drew it
        raise ValueError("per-query values to resample must be finite")
    out = np.empty((counts.shape[0], values.shape[1]))
    step = max(1, chunk_cells // max(1, counts.shape[1]))
    for start in range(0, counts.shape[0], step):
        check()
        block = counts.rows(start, start + step)
        for j in range(values.shape[1]):  # one product per array: its means do not depend on what it is paired with
            out[start : start + step, j] = block @ values[:, j]
    out /= counts.shape[1]
    return list(out.T)


def balanced_bootstrap(
    values: Scores, n_resamples: int = DEFAULTS.bootstrap_resamples, seed: int = 0, chunk_cells: int = 4_000_000
) -> np.ndarray:
    """`n_resamples` dataset-balanced means of `values` (per-query numbers, e.g. paired differences)."""
    names = sorted(values)
    arrays = [np.asarray(values[name], dtype=np.float64) for name in names]
    for name, v in zip(names, arrays):
        if v.size == 0:
            raise ValueError(f"dataset {name!r} has no queries to resample")
    total = np.zeros(n_resamples)
    for v, counts in zip(arrays, draws(tuple(v.size for v in arrays), n_resamples, seed, chunk_cells)):
        total += resampled_means([v], counts, chunk_cells)[0]
    return total / len(values)


def balanced_mean(values: Scores) -> float:
    return float(np.mean([np.mean(v) for v in values.values()]))


@by_content(Interval)
def interval(
    values: Scores,
    n_resamples: int = DEFAULTS.bootstrap_resamples,
    seed: int = 0,
    confidence: float = DEFAULTS.confidence,
) -> Interval:
    """Percentile interval of the balanced mean, with a two-sided bootstrap p-value against 0 and the 1 − 2α interval
    of the equivalence test. A keyword `known` (`by_content`): a store of results (terazi.store.bootstraps) to find it
    in or keep it in."""
    boot = balanced_bootstrap(values, n_resamples, seed)
    alpha = 1 - confidence
    low, high, tost_low, tost_high = np.quantile(boot, [alpha / 2, 1 - alpha / 2, alpha, 1 - alpha])
    p = min(1.0, 2 * min(np.mean(boot <= 0), np.mean(boot >= 0)))
    return Interval(balanced_mean(values), float(low), float(high), float(p), float(tost_low), float(tost_high))


def paired_difference(
    a: Scores,
    b: Scores,
    n_resamples: int = DEFAULTS.bootstrap_resamples,
    seed: int = 0,
    confidence: float = DEFAULTS.confidence,
    *,
    known: BootstrapStore | None = None,
) -> Interval:
    """Interval of mean(a) − mean(b) over the same queries, balanced by dataset (`known`: `interval`'s store)."""
    return interval(differences(a, b), n_resamples, seed, confidence, known=known)


def differences(a: Scores, b: Scores) -> dict[str, np.ndarray]:
    """dataset -> per-query a − b; the two must hold the same datasets, their queries aligned."""
    if set(a) != set(b):
        raise ValueError(f"systems cover different datasets: {sorted(a)} vs {sorted(b)}")
    diffs = {}
    for d in a:
        x, y = np.asarray(a[d], dtype=np.float64), np.asarray(b[d], dtype=np.float64)
        if x.shape != y.shape:
            raise ValueError(f"dataset {d!r}: {x.size} vs {y.size} queries; paired scores must be aligned")
        diffs[d] = x - y
    return diffs


@dataclass(frozen=True)
class Ratio:
    """A retention ratio (corrupted / clean) with its percentile interval; `datasets` = datasets it averages."""

    estimate: float | None
    low: float | None
    high: float | None
    datasets: int

    @property
    def significant(self) -> bool:
        """The interval excludes 1 (100%): the condition changed the score."""
        return self.low is not None and (self.low > 1 or self.high < 1)


def ratios(num: np.ndarray, den: np.ndarray, aggregation: Aggregation) -> np.ndarray:
    """Ratio per row of (rows × datasets) means: macro = mean over datasets of num/den (datasets with den 0 left
    out of that row), pooled = mean(num) / mean(den). NaN where undefined."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if aggregation == "pooled":
            n, d = num.mean(axis=1), den.mean(axis=1)
            return np.where(d > 0, n / np.where(d > 0, d, 1), np.nan)
        r = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
        ok = np.isfinite(r).sum(axis=1)
        return np.where(ok > 0, np.nansum(r, axis=1) / np.maximum(ok, 1), np.nan)


@by_content(Ratio)
def ratio_interval(
    num: Scores,
    den: Scores,
    n_resamples: int = DEFAULTS.bootstrap_resamples,
    seed: int = 0,
    confidence: float = DEFAULTS.confidence,
    aggregation: Aggregation = "macro",
    chunk_cells: int = 4_000_000,
) -> Ratio:
    """Retention = corrupted (`num`) over clean (`den`) on the same queries, with a paired percentile interval.

    macro (the Kalbur card's Koruma): per dataset R_d = mean(num_d) / mean(den_d), then the mean of R_d over
    datasets; a dataset whose clean mean is 0 has no ratio and is left out. pooled: the dataset-balanced mean of
    `num` over that of `den`. Each resample draws queries with replacement within each dataset, the same
    queries for `num` and `den` (paired), and recomputes the ratio the same way as the estimate. A keyword `known`
    (`by_content`): a store of results (terazi.store.bootstraps) to find it in or keep it in.
    """
    if set(num) != set(den):
        raise ValueError(f"corrupted and clean cover different datasets: {sorted(num)} vs {sorted(den)}")
    names = sorted(num)
    if not names:
        return Ratio(None, None, None, 0)
    boot_num, boot_den = np.zeros((n_resamples, len(names))), np.zeros((n_resamples, len(names)))
    point_num, point_den = np.zeros((1, len(names))), np.zeros((1, len(names)))
    pairs = [(np.asarray(num[name], dtype=np.float64), np.asarray(den[name], dtype=np.float64)) for name in names]
    for name, (x, y) in zip(names, pairs):
        if x.shape != y.shape or x.size == 0:
            raise ValueError(f"dataset {name!r}: {x.size} corrupted vs {y.size} clean values; need the same, non-empty")
    for j, ((x, y), counts) in enumerate(
        zip(pairs, draws(tuple(x.size for x, _ in pairs), n_resamples, seed, chunk_cells))
    ):
        point_num[0, j], point_den[0, j] = x.mean(), y.mean()
        boot_num[:, j], boot_den[:, j] = resampled_means([x, y], counts, chunk_cells)
    estimate = float(ratios(point_num, point_den, aggregation)[0])
    used = int((point_den > 0).sum()) if aggregation == "macro" else len(names)
    if not np.isfinite(estimate):
        return Ratio(None, None, None, 0)
    boot = ratios(boot_num, boot_den, aggregation)
    boot = boot[np.isfinite(boot)]
    alpha = 1 - confidence
    if boot.size < n_resamples / 2:  # the ratio is undefined in most resamples: no honest interval
        return Ratio(estimate, None, None, used)
    low, high = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    return Ratio(estimate, float(low), float(high), used)


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
