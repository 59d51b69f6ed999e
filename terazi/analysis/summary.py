"""From per-query values to the tables people read: cell means and per-condition means.

Input: the long per-query table (dataset, system, condition, query_id, measure, value, changed).
Datasets are weighted equally when averaged (a dataset's mean over its queries, then the mean of
datasets), as docs/method.md §6 describes for the headline number.
"""

from __future__ import annotations

import polars as pl


def cell_means(per_query: pl.DataFrame) -> pl.DataFrame:
    """Mean per (system, dataset, condition, measure), with the number of queries."""
    return per_query.group_by("system", "dataset", "condition", "measure", maintain_order=True).agg(
        pl.col("value").mean().alias("mean"), pl.len().alias("queries"))


def condition_means(per_query: pl.DataFrame, measure: str, datasets: list[str]) -> pl.DataFrame:
    """(system, condition, mean): dataset-balanced mean of `measure` over the given datasets."""
    cells = cell_means(per_query.filter((pl.col("measure") == measure) & pl.col("dataset").is_in(datasets)))
    return cells.group_by("system", "condition", maintain_order=True).agg(pl.col("mean").mean())

