"""How sure is a rank? Rank intervals from the same resamples the leaderboard's intervals draw.

Significance groups answer "is A better than its neighbour B"; they do not say where A stands. Here every
resample of the dataset-balanced paired bootstrap (terazi.analysis.stats) ranks the systems twice:

- by **Mean (Task)**: each system's dataset-balanced mean in that resample, ranked best first;
- by **Borda count**: per ranked dataset, the systems' means in that resample give points N − rank (average
  rank on ties, N = the systems on that dataset, as terazi.analysis.leaderboard does for the point estimate); the
  points are summed over datasets and the totals ranked.

Ranks are competition ranks (1, 1, 3): systems tied in a resample share the better rank, as the leaderboard's
Borda rank does, so identical systems get identical rank distributions and P(rank 1) can sum to more than 1.
A system's rank interval is the central `confidence` range of its ranks over the resamples (inverted-CDF
percentiles, so its ends are ranks that occurred); P(rank 1) is the share of resamples where it ranked first.

The resamples are the ones `stats.interval` draws for each system's Mean (Task) interval: one generator
seeded with `seed`, datasets in sorted order, queries drawn per dataset in chunks of `chunk_cells` indexes,
the same indexes for every system (that is the pairing). So the percentiles of `RankDraws.means` are exactly
the leaderboard's ci_low/ci_high, and every rank below is read off those same draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from terazi.analysis.stats import draws, resampled_means
from terazi.schemas.statistics import DEFAULTS

CHUNK_CELLS = 4_000_000  # stats' default: the same chunks mean the same draws
RANK_SCHEMA = {
    "system": pl.Utf8,
    "mean_task": pl.Float64,
    "rank_mean": pl.Int64,
    "rank_mean_low": pl.Int64,
    "rank_mean_high": pl.Int64,
    "p_rank1_mean": pl.Float64,
    "borda_votes": pl.Float64,
    "rank_borda": pl.Int64,
    "rank_borda_low": pl.Int64,
    "rank_borda_high": pl.Int64,
    "p_rank1_borda": pl.Float64,
}


@dataclass(frozen=True)
class RankDraws:
    """Per resample (rows) and system (columns): the balanced mean, the Borda votes and both ranks; `point_*`
    are the same on the queries as they are (the leaderboard's point estimates)."""

    systems: list[str]
    datasets: list[str]
    means: np.ndarray
    votes: np.ndarray
    point_means: np.ndarray
    point_votes: np.ndarray

    @property
    def mean_ranks(self) -> np.ndarray:
        return competition_ranks(self.means)

    @property
    def borda_ranks(self) -> np.ndarray:
        return competition_ranks(self.votes)


def _compare(x: np.ndarray, chunk_cells: int = CHUNK_CELLS) -> tuple[np.ndarray, np.ndarray]:
    """For each row of `x` (rows × systems): how many other systems score strictly higher, and how many tie,
    in blocks of rows so that the rows × systems × systems comparison stays within `chunk_cells`."""
    rows, n = x.shape
    greater, ties = np.empty((rows, n), dtype=np.int64), np.empty((rows, n), dtype=np.int64)
    step = max(1, chunk_cells // max(1, n * n))
    for start in range(0, rows, step):
        b = x[start : start + step]
        other, mine = b[:, None, :], b[:, :, None]  # [r, s, j]: system j against system s
        greater[start : start + step] = (other > mine).sum(axis=2)
        ties[start : start + step] = (other == mine).sum(axis=2) - 1
    return greater, ties


def competition_ranks(x: np.ndarray) -> np.ndarray:
    """Rank of each column within each row, highest first, ties sharing the better rank (1, 1, 3)."""
    return 1 + _compare(np.atleast_2d(x))[0]


def borda_points(x: np.ndarray) -> np.ndarray:
    """Borda points per row of one dataset's means (rows × systems): N − average rank, i.e. the systems below
    plus half the systems tied (N = the row's systems)."""
    greater, ties = _compare(np.atleast_2d(x))
    below = x.shape[-1] - 1 - greater - ties
    return below + 0.5 * ties


def aligned(frame: pl.DataFrame, datasets: list[str]) -> tuple[list[str], list[str], list[np.ndarray]]:
    """(systems, datasets, per dataset a queries × systems matrix) of the clean rows of `frame` on `datasets`:
    datasets sorted and queries sorted by id, as `analysis._cells` orders them, systems in first-appearance
    order. Every system must have exactly one value per query of every dataset (paired)."""
    rows = frame.filter((pl.col("condition") == "clean") & pl.col("dataset").is_in(datasets))
    if "measure" in rows.columns and rows["measure"].n_unique() > 1:
        raise ValueError(f"one measure at a time: got {sorted(rows['measure'].unique())}")
    if rows.height == 0:
        raise ValueError(f"no clean values on the ranked datasets {datasets}")
    systems = rows["system"].unique(maintain_order=True).to_list()
    dup = rows.filter(pl.struct("dataset", "system", "query_id").is_duplicated())
    if dup.height:
        r = dup.row(0, named=True)
        raise ValueError(
            f"{r['system']!r} has more than one clean value for query {r['query_id']!r} of {r['dataset']!r}"
        )
    wide = rows.pivot(on="system", index=["dataset", "query_id"], values="value").sort("dataset", "query_id")
    missing = wide.filter(pl.any_horizontal(pl.col(systems).is_null()))
    if missing.height:
        r = missing.row(0, named=True)
        who = [s for s in systems if r[s] is None]
        raise ValueError(
            f"dataset {r['dataset']!r}: {who} have no value for query {r['query_id']!r}; rank "
            "intervals need every system on the same queries"
        )
    names = sorted(wide["dataset"].unique().to_list())
    mats = [
        part.select(systems).to_numpy().astype(np.float64)
        for (_,), part in wide.group_by("dataset", maintain_order=True)
    ]
    return systems, names, mats


def rank_draws(
    frame: pl.DataFrame,
    datasets: list[str],
    resamples: int = DEFAULTS.bootstrap_resamples,
    seed: int = 0,
    chunk_cells: int = CHUNK_CELLS,
) -> RankDraws:
    """The balanced means and Borda votes of every system in each of `resamples` paired resamples (stats'
    draws, see the module docstring). Memory: resamples × systems per array, whatever the query count."""
    systems, names, mats = aligned(frame, datasets)
    n = len(systems)
    total, votes = np.zeros((resamples, n)), np.zeros((resamples, n))
    point_total, point_votes = np.zeros(n), np.zeros(n)
    counts = draws(tuple(mat.shape[0] for mat in mats), resamples, seed, chunk_cells)
    for mat, c in zip(mats, counts):  # sorted datasets: the order balanced_bootstrap draws them in
        means = np.stack(resampled_means([mat[:, j] for j in range(n)], c, chunk_cells), axis=1)
        total += means
        votes += borda_points(means)
        point = mat.mean(axis=0)
        point_total += point
        point_votes += borda_points(point[None, :])[0]
    return RankDraws(systems, names, total / len(mats), votes, point_total / len(mats), point_votes)


def _ends(ranks: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    alpha = 1 - confidence
    low = np.quantile(ranks, alpha / 2, axis=0, method="inverted_cdf")
    high = np.quantile(ranks, 1 - alpha / 2, axis=0, method="inverted_cdf")
    return low.astype(np.int64), high.astype(np.int64)


def rank_table(draws: RankDraws, confidence: float) -> pl.DataFrame:
    """One row per system, by point Mean (Task) (best first, ties in first-appearance order): the point rank,
    its interval and P(rank 1), by Mean (Task) and by Borda count (RANK_SCHEMA)."""
    by_mean, by_borda = draws.mean_ranks, draws.borda_ranks
    mean_lo, mean_hi = _ends(by_mean, confidence)
    borda_lo, borda_hi = _ends(by_borda, confidence)
    point_mean, point_borda = competition_ranks(draws.point_means)[0], competition_ranks(draws.point_votes)[0]
    order = sorted(range(len(draws.systems)), key=lambda j: -draws.point_means[j])
    cols = {
        "system": [draws.systems[j] for j in order],
        "mean_task": draws.point_means[order],
        "rank_mean": point_mean[order],
        "rank_mean_low": mean_lo[order],
        "rank_mean_high": mean_hi[order],
        "p_rank1_mean": (by_mean == 1).mean(axis=0)[order],
        "borda_votes": draws.point_votes[order],
        "rank_borda": point_borda[order],
        "rank_borda_low": borda_lo[order],
        "rank_borda_high": borda_hi[order],
        "p_rank1_borda": (by_borda == 1).mean(axis=0)[order],
    }
    return pl.DataFrame(cols, schema=RANK_SCHEMA)


def rank_intervals(
    frame: pl.DataFrame,
    datasets: list[str],
    resamples: int = DEFAULTS.bootstrap_resamples,
    seed: int = 0,
    confidence: float = DEFAULTS.confidence,
) -> pl.DataFrame:
    """Rank intervals and P(rank 1) by Mean (Task) and by Borda count, from the per-query headline frame
    (dataset, system, condition, query_id, value; its clean rows on the ranked `datasets`)."""
    return rank_table(rank_draws(frame, datasets, resamples, seed), confidence)
