"""Leaderboard aggregation on a long table (system, task, task_type, score), as the ranking note defines it.

A task's score for a system is its mean over that task's rows (splits, subsets). Then:

- **Borda count**: every task votes. ``per-task`` (default, the note's wording): on a task where N
  systems were evaluated, the best gets N−1 points, the next N−2, …, the last 0; tied systems share
  the average rank (points = N − average rank). ``mteb`` (MTEB's code): N is every system with any
  result, so on a task some systems skipped even the last one earns points. A missing task earns 0
  in both. Final rank: competition ranking (1, 1, 3) on total points, then Mean (Task).
- **Mean (Task)**: mean of the task scores over the tasks a system was run on (the note);
  ``mean_task_complete`` is MTEB's variant, empty when a system misses a task.
- **Mean (TaskType)**: mean within each task type, then the mean of those type means, over the tasks a
  system has; ``mean_task_type_complete`` is empty when a task is missing (MTEB).

Scores must be finite numbers: an empty, unparseable, NaN or infinite score is an error naming its line (or row);
an infinite score would otherwise take first place on every task it is on.
Tasks listed as out of the ranking are shown by callers but never aggregated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import polars as pl

COLUMNS = ("system", "task", "task_type", "score")
BORDA = ("per-task", "mteb")
BOARD_COLUMNS = (
    "system",
    "borda_votes",
    "borda_rank",
    "mean_task",
    "mean_task_type",
    "mean_task_complete",
    "mean_task_type_complete",
    "tasks",
)


def validate(long: pl.DataFrame, source: str = "table", lines: pl.Series | None = None) -> pl.DataFrame:
    """Typed (system, task, task_type, score) rows; an empty, unparseable, NaN or infinite score is an error naming
    the file line of the row (`lines`, when read from a file) or its row number."""
    missing = [c for c in COLUMNS if c not in long.columns]
    if missing:
        raise ValueError(f"{source}: missing column(s) {missing}; need {list(COLUMNS)}")
    raw = long.select(*(pl.col(c).cast(pl.Utf8) for c in COLUMNS[:3]), pl.col("score").alias("_raw"))
    typed = raw.with_columns(pl.col("_raw").cast(pl.Float64, strict=False).alias("score")).with_row_index("_i")
    bad = typed.filter(
        pl.col("score").is_null()
        | ~pl.col("score").is_finite()
        | pl.any_horizontal(pl.col(c).is_null() for c in COLUMNS[:3])
    )
    if bad.height:
        row = bad.row(0, named=True)
        where = f"line {lines[row['_i']]}" if lines is not None else f"row {row['_i'] + 1}"
        empty = [c for c in COLUMNS[:3] if row[c] is None]
        if empty:
            problem = f"{empty[0]} is empty"
        elif row["_raw"] is None or str(row["_raw"]).strip() == "":
            problem = f"score of {row['system']!r} on {row['task']!r} is empty"
        elif row["score"] is None:
            problem = f"score {row['_raw']!r} of {row['system']!r} on {row['task']!r} is not a number"
        else:
            what = "NaN" if row["score"] != row["score"] else "infinite"
            problem = f"score of {row['system']!r} on {row['task']!r} is {what}"
        raise ValueError(f"{source}, {where}: {problem}")
    types = typed.group_by("task").agg(pl.col("task_type").unique().sort()).filter(pl.col("task_type").list.len() > 1)
    if types.height:
        raise ValueError(
            f"{source}: task {types['task'][0]!r} has more than one task_type: {types['task_type'][0].to_list()}"
        )
    return typed.select(*COLUMNS)


def read_long_table(path: str | Path) -> pl.DataFrame:
    """A long score table from CSV or parquet, validated; errors name the CSV line (header = line 1)."""
    path = Path(path)
    if path.suffix == ".parquet":
        return validate(pl.read_parquet(path), str(path))
    df = pl.read_csv(path, infer_schema=False)  # strings: the raw text of a bad score goes into the message
    df = df.with_row_index("_line", offset=2).filter(~pl.all_horizontal(pl.exclude("_line").is_null()))  # blank lines
    return validate(df.drop("_line"), str(path), lines=df["_line"])


def board_of_scores(
    long: pl.DataFrame, out_of_ranking: set[str] = frozenset(), borda: Literal["per-task", "mteb"] = "per-task"
) -> pl.DataFrame:
    """One row per system, best first: borda_votes, borda_rank, the means (note's and MTEB's), tasks."""
    if borda not in BORDA:
        raise ValueError(f"borda must be one of {', '.join(BORDA)}, got {borda!r}")
    long = validate(long)
    systems = long.select("system").unique(maintain_order=True)
    ranked = long.filter(~pl.col("task").is_in(list(out_of_ranking)))
    per_task = ranked.group_by("system", "task", "task_type").agg(pl.col("score").mean())
    n = pl.len().over("task") if borda == "per-task" else pl.lit(per_task["system"].n_unique())
    points = per_task.with_columns((n - pl.col("score").rank("average", descending=True).over("task")).alias("points"))
    tasks = per_task.select("task", "task_type").unique()
    n_tasks, n_types = tasks.height, tasks["task_type"].n_unique()
    type_size = tasks.group_by("task_type").len().rename({"len": "size"})
    by_type = (
        per_task.group_by("system", "task_type")
        .agg(pl.col("score").mean(), pl.len().alias("n"))
        .join(type_size, on="task_type")
    )
    table = (
        systems.join(
            points.group_by("system").agg(
                pl.col("points").sum().alias("borda_votes"),
                pl.col("score").mean().alias("mean_task"),
                pl.len().alias("tasks"),
            ),
            on="system",
            how="left",
        )
        .join(
            by_type.group_by("system").agg(
                pl.col("score").mean().alias("mean_task_type"),
                ((pl.col("n") == pl.col("size")).all() & (pl.len() == n_types)).alias("_complete_types"),
            ),
            on="system",
            how="left",
        )
        .with_columns(pl.col("borda_votes").fill_null(0.0), pl.col("tasks").fill_null(0))
        .with_columns(
            pl.when(pl.col("tasks") == n_tasks).then(pl.col("mean_task")).alias("mean_task_complete"),
            pl.when(pl.col("_complete_types").fill_null(False))
            .then(pl.col("mean_task_type"))
            .alias("mean_task_type_complete"),
            pl.col("borda_votes").rank("min", descending=True).cast(pl.Int64).alias("borda_rank"),
        )
    )
    return table.sort(["borda_rank", "mean_task", "system"], descending=[False, True, False], nulls_last=True).select(
        BOARD_COLUMNS
    )


def describe(borda: str) -> str:
    """One line saying how Borda and the means were computed, printed under every leaderboard."""
    how = (
        "N = systems evaluated on that task (the ranking note)"
        if borda == "per-task"
        else "N = every system with any result (MTEB's code)"
    )
    return (
        f"Borda {borda}: per task, points = N − rank (average rank on ties), {how}; a missing task earns 0. "
        f"Mean (Task)/(TaskType) over the tasks a system has; the 'complete' columns are empty when a task "
        f"is missing (MTEB)."
    )
