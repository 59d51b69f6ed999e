"""Every headline without the queries a leakage check found in training data, beside the full one, with the paired
interval of the difference, as lm-evaluation-harness reports its decontaminated scores.

Per system: the headline (the clean condition's mean of the headline measure) over all queries and over the queries
kept (those not excluded), both balanced by dataset as the headline is (a dataset's mean, then the mean over the
ranked datasets), and the difference kept − all. The interval of the difference comes from the leaderboard's own
resamples: one generator seeded with the run's seed, the ranked datasets in sorted order, each dataset's queries
(sorted by id) drawn by `stats.resampled_means` in the same chunks. With v a dataset's values and m its mask of kept
queries, a resample's full mean is mean(v) and its kept mean mean(v·m) / mean(m) on the same draws; so the
percentiles of the full means are exactly the leaderboard's interval of Mean (Task). A resample that drew no kept
query of some dataset has no kept mean and is left out; with fewer than half the resamples left there is no
interval. Each dataset has its row too, from a generator seeded alike, as each pairwise cell is.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import numpy as np
import polars as pl

from terazi.analysis.stats import draws, resampled_means
from terazi.schemas.tables import CLEAN

CHUNK_CELLS = 4_000_000  # stats' default: the same chunks draw the same queries as the headline's interval
SCHEMA = {
    "system": pl.Utf8,
    "dataset": pl.Utf8,
    "queries": pl.Int64,
    "excluded": pl.Int64,
    "full": pl.Float64,
    "leak_free": pl.Float64,
    "delta": pl.Float64,
    "delta_low": pl.Float64,
    "delta_high": pl.Float64,
}


def resampled_pair(
    values: Mapping[str, np.ndarray], keep: Mapping[str, np.ndarray], resamples: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per resample, the dataset-balanced mean over all queries and over the kept ones (NaN where a dataset drew none
    of its kept queries), on one set of draws: the headline interval's."""
    full, kept = np.zeros(resamples), np.zeros(resamples)
    names = sorted(values)
    for name, counts in zip(names, draws(tuple(values[d].size for d in names), resamples, seed, CHUNK_CELLS)):
        v, m = values[name], keep[name].astype(np.float64)
        mean_v, mean_vm, mean_m = resampled_means([v, v * m, m], counts, CHUNK_CELLS)
        full += mean_v
        with np.errstate(divide="ignore", invalid="ignore"):
            kept += np.where(mean_m > 0, mean_vm / np.where(mean_m > 0, mean_m, 1.0), np.nan)
    return full / len(values), kept / len(values)


def _row(
    system: str,
    dataset: str | None,
    values: dict[str, np.ndarray],
    keep: dict[str, np.ndarray],
    resamples: int,
    seed: int,
    confidence: float,
) -> tuple:
    full = float(np.mean([v.mean() for v in values.values()]))
    n, kept_n = sum(v.size for v in values.values()), sum(int(m.sum()) for m in keep.values())
    if any(not m.any() for m in keep.values()):  # a dataset with every query excluded has no clean mean
        return system, dataset, n, n - kept_n, full, None, None, None, None
    clean = float(np.mean([v[m].mean() for v, m in zip(values.values(), keep.values())]))
    boot_full, boot_kept = resampled_pair(values, keep, resamples, seed)
    diff = boot_kept - boot_full
    diff = diff[np.isfinite(diff)]
    low = high = None
    if diff.size >= resamples / 2:
        alpha = 1 - confidence
        low, high = (float(x) for x in np.quantile(diff, [alpha / 2, 1 - alpha / 2]))
    return system, dataset, n, n - kept_n, full, clean, clean - full, low, high


def leak_free(
    pq: pl.DataFrame,
    names: list[str],
    ranked: list[str],
    excluded: Mapping[str, Collection[str]],
    order: list[str],
    resamples: int,
    seed: int,
    confidence: float,
) -> pl.DataFrame:
    """leak_free.csv: per system (in `order`), a row over the ranked datasets (dataset null: Mean (Task)) and
    one per dataset of `names`; `pq`: the per-query values of the headline measure; `excluded`: dataset → the
    query ids to leave out."""
    rows = (
        pq.filter((pl.col("condition") == CLEAN) & pl.col("dataset").is_in(names))
        .select("system", "dataset", "query_id", "value")
        .sort("dataset", "query_id")
    )
    by_system = rows.partition_by("system", as_dict=True, include_key=False, maintain_order=True)
    out = []
    for system in order:
        part = by_system.get((system,))
        if part is None:
            continue
        values, keep = {}, {}
        for (d,), cell in part.group_by("dataset", maintain_order=True):
            values[d] = cell["value"].to_numpy().astype(np.float64)
            keep[d] = ~cell["query_id"].is_in(sorted(excluded.get(d, ()))).to_numpy()
        inside = [d for d in sorted(values) if d in ranked]
        if inside:
            out.append(
                _row(
                    system,
                    None,
                    {d: values[d] for d in inside},
                    {d: keep[d] for d in inside},
                    resamples,
                    seed,
                    confidence,
                )
            )
        out += [
            _row(system, d, {d: values[d]}, {d: keep[d]}, resamples, seed, confidence) for d in names if d in values
        ]
    return pl.DataFrame(out, schema=SCHEMA, orient="row")
