"""`terazi leaderboard`: Borda and means from any long score table."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.table import Table

from terazi.cli import app
from terazi.cli._common import console, fail


@app.command("leaderboard")
def leaderboard_cmd(
    source: Path = typer.Argument(..., exists=True, dir_okay=False, help="CSV or parquet: system,task,task_type,score"),
    fmt: str = typer.Option("table", "--format", help="table | csv | json"),
    out_of_ranking: list[str] = typer.Option([], "--out-of-ranking", help="task shown but not aggregated (repeatable)"),
) -> None:
    """Borda count, Mean (Task) and Mean (TaskType) from any long score table (MTEB semantics)."""
    import polars as pl

    from terazi.leaderboard import aggregate

    try:
        long = pl.read_parquet(source) if source.suffix == ".parquet" else pl.read_csv(source, infer_schema_length=None)
        board = aggregate(long, set(out_of_ranking))
    except (ValueError, pl.exceptions.PolarsError) as e:
        fail(f"{source}: {e}")
    cols = ["system", "borda_votes", "borda_rank", "mean_task", "mean_task_type"]
    board = board.select(*cols, "mean_task_available")
    if fmt == "json":
        print(json.dumps(board.select(cols).to_dicts(), indent=2, ensure_ascii=False))
    elif fmt == "csv":
        sys.stdout.write(board.select(cols).write_csv())
    elif fmt == "table":
        table = Table(title=f"{source.name}: Borda count (MTEB semantics)",
                      caption="Mean (Task)/(TaskType) are empty for systems missing a task; "
                              "'available' averages the tasks a system has")
        for c in ("#", "system", "Borda", "Mean (Task)", "Mean (TaskType)", "Mean (available)"):
            table.add_column(c, justify="left" if c == "system" else "right")
        for r in board.iter_rows(named=True):
            table.add_row(str(r["borda_rank"]), r["system"], f"{r['borda_votes']:g}",
                          *("–" if r[k] is None else f"{r[k]:.4f}" for k in ("mean_task", "mean_task_type", "mean_task_available")))
        console.print(table)
    else:
        fail(f"--format must be table, csv or json, got {fmt!r}")
