"""From per-query values to the tables people read: cell means, per-condition means, retention.

Input: the long per-query table (dataset, system, condition, query_id, measure, value, changed).
Datasets are weighted equally when averaged (a dataset's mean over its queries, then the mean of
datasets), as METHOD.md prescribes for the headline number.
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


def retention(per_query: pl.DataFrame, measure: str, datasets: list[str]) -> pl.DataFrame:
    """(system, condition, corrupted, clean, retention) over the queries each condition changed.

    Per dataset: mean of the corrupted scores and mean of the same queries' clean scores; then the
    dataset-balanced means; retention = corrupted / clean (null when the clean mean is 0 or no
    query changed).
    """
    pq = per_query.filter((pl.col("measure") == measure) & pl.col("dataset").is_in(datasets))
    clean = pq.filter(pl.col("condition") == "clean").select("system", "dataset", "query_id", pl.col("value").alias("clean"))
    corrupted = pq.filter((pl.col("condition") != "clean") & pl.col("changed"))
    paired = corrupted.join(clean, on=["system", "dataset", "query_id"], how="inner")
    per_ds = paired.group_by("system", "condition", "dataset").agg(
        pl.col("value").mean().alias("corrupted"), pl.col("clean").mean(), pl.len().alias("changed_queries"))
    out = per_ds.group_by("system", "condition").agg(
        pl.col("corrupted").mean(), pl.col("clean").mean(), pl.col("changed_queries").sum())
    return out.with_columns(
        pl.when(pl.col("clean") > 0).then(pl.col("corrupted") / pl.col("clean")).otherwise(None).alias("retention"))
