"""Leaderboard aggregation on a long table (system, task, task_type, score), as MTEB does it.

Borda count: per task, a system's score is its mean over splits (rows); systems are ranked on
each task with average ranks for ties; points = N − rank, where N is the number of systems with
any result; a missing task earns 0. Final rank: competition ranking (1, 1, 3) on total points.
Mean (Task) and Mean (TaskType) are null when a system misses a task; `mean_task_available`
is the clearly labelled variant over the tasks it has. NaN and null scores are dropped first.
"""

from __future__ import annotations

import polars as pl

COLUMNS = ("system", "task", "task_type", "score")


def validate(long: pl.DataFrame, source: str = "table") -> pl.DataFrame:
    missing = [c for c in COLUMNS if c not in long.columns]
    if missing:
        raise ValueError(f"{source}: missing column(s) {missing}; need {list(COLUMNS)}")
    types = long.group_by("task").agg(pl.col("task_type").n_unique().alias("n")).filter(pl.col("n") > 1)
    if types.height:
        raise ValueError(f"{source}: task {types['task'][0]!r} has more than one task_type")
    return long.select(
        pl.col("system").cast(pl.Utf8), pl.col("task").cast(pl.Utf8), pl.col("task_type").cast(pl.Utf8),
        pl.col("score").cast(pl.Float64, strict=False),
    )


def aggregate(long: pl.DataFrame, out_of_ranking: set[str] = frozenset()) -> pl.DataFrame:
    """One row per system, best first: borda_votes, borda_rank, mean_task, mean_task_type, …"""
    long = validate(long)
    systems = long.select("system").unique(maintain_order=True)
    clean = long.filter(pl.col("score").is_not_null() & pl.col("score").is_not_nan()
                        & ~pl.col("task").is_in(list(out_of_ranking)))
    per_task = clean.group_by("system", "task", "task_type").agg(pl.col("score").mean())
    n_systems = per_task["system"].n_unique()
    tasks = per_task.select("task", "task_type").unique()
    n_tasks, n_types = tasks.height, tasks["task_type"].n_unique()

    points = per_task.with_columns(
        (n_systems - pl.col("score").rank("average", descending=True).over("task")).alias("points"))
    by_type = per_task.group_by("system", "task_type").agg(pl.col("score").mean(), pl.len().alias("n"))
    type_size = tasks.group_by("task_type").len().rename({"len": "size"})
    by_type = by_type.join(type_size, on="task_type")
    table = (
        systems.join(points.group_by("system").agg(
            pl.col("points").sum().alias("borda_votes"),
            pl.col("score").mean().alias("mean_task_available"),
            pl.len().alias("tasks")), on="system", how="left")
        .join(by_type.group_by("system").agg(
            pl.col("score").mean().alias("_mtt"),
            ((pl.col("n") == pl.col("size")).all() & (pl.len() == n_types)).alias("_all_types")), on="system", how="left")
        .with_columns(
            pl.col("borda_votes").fill_null(0.0),
            pl.col("tasks").fill_null(0),
        )
        .with_columns(
            pl.when(pl.col("tasks") == n_tasks).then(pl.col("mean_task_available")).otherwise(None).alias("mean_task"),
            pl.when(pl.col("_all_types").fill_null(False)).then(pl.col("_mtt")).otherwise(None).alias("mean_task_type"),
            pl.col("borda_votes").rank("min", descending=True).cast(pl.Int64).alias("borda_rank"),
        )
    )
    return table.sort(["borda_rank", "mean_task_available"], descending=[False, True], nulls_last=True).select(
        "system", "borda_votes", "borda_rank", "mean_task", "mean_task_type", "mean_task_available", "tasks")
