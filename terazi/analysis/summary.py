"""From per-query values to the tables people read: cell means and per-condition means.

Input: the long per-query table (dataset, system, condition, query_id, measure, value, changed).
Datasets are weighted equally when averaged (a dataset's mean over its queries, then the mean of
datasets), as docs/method.md §6 describes for the headline number.
"""

from __future__ import annotations

import polars as pl

from terazi.schemas import DatasetManifest


def cell_means(per_query: pl.DataFrame) -> pl.DataFrame:
    """Mean per (system, dataset, condition, measure), with the number of queries."""
    return per_query.group_by("system", "dataset", "condition", "measure", maintain_order=True).agg(
        pl.col("value").mean().alias("mean"), pl.len().alias("queries")
    )


def condition_means(per_query: pl.DataFrame, measure: str, datasets: list[str]) -> pl.DataFrame:
    """(system, condition, mean): dataset-balanced mean of `measure` over the given datasets."""
    cells = cell_means(per_query.filter((pl.col("measure") == measure) & pl.col("dataset").is_in(datasets)))
    return cells.group_by("system", "condition", maintain_order=True).agg(pl.col("mean").mean())


def ranked_datasets(datasets: list[DatasetManifest]) -> list[str]:
    """Datasets in the ranking (all of them if every one was marked out)."""
    return [d.name for d in datasets if d.in_ranking] or [d.name for d in datasets]


def in_order(df: pl.DataFrame, order: list[str], column: str = "system") -> pl.DataFrame:
    """Rows sorted by the leaderboard's system order (stable within a system)."""
    rank = {s: i for i, s in enumerate(order)}
    return (
        df.with_columns(pl.col(column).replace_strict(rank, default=len(order), return_dtype=pl.Int64).alias("_o"))
        .sort("_o", maintain_order=True)
        .drop("_o")
    )
