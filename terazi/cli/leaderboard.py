"""`terazi leaderboard`: Borda and means from a long score table, an MTEB results folder or a terazi results folder."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from terazi.cli.common import VERBOSE, console, fail
from terazi.cli.places import Place, declares


@declares(reads=(Place("source", "score table"),))
def leaderboard_cmd(
    source: Path = typer.Argument(..., exists=True, help="a long score table (CSV or parquet: system,task,task_type,"
                                  "score), an MTEB results folder (<model>/<revision>/<task>.json) or a terazi results folder"),
    fmt: str = typer.Option("table", "--format", help="table | csv | json | markdown | latex (booktabs)"),
    borda: Optional[str] = typer.Option(None, help="per-task (default; N = systems evaluated on each task, the ranking "
                                                    "note) | mteb (N = every system with any result, MTEB's code)"),
    out_of_ranking: list[str] = typer.Option([], "--out-of-ranking", help="task shown but not aggregated (repeatable)"),
    task_type: list[str] = typer.Option([], "--task-type", help="MTEB folders: TASK=TYPE for Mean (TaskType) "
                                                                "(repeatable); a TYPE alone is the default type"),
    split: Optional[str] = typer.Option(None, help="MTEB folders: only this split (default: every split in the files)"),
    language: Optional[str] = typer.Option(None, help="MTEB folders: only subsets in this language, e.g. tur"),
    verbose: bool = VERBOSE,
) -> None:
    """Borda count, Mean (Task) and Mean (TaskType) as the ranking note defines them, in any format."""
    import polars as pl

    from terazi.analysis.leaderboard import BORDA
    from terazi.errors import TeraziError
    from terazi.present import exports

    if fmt not in exports.FORMATS:
        fail(f"--format must be one of {', '.join(exports.FORMATS)}, got {fmt!r}")
    if borda is not None and borda not in BORDA:
        fail(f"--borda must be one of {', '.join(BORDA)}, got {borda!r}")
    types = dict(t.split("=", 1) for t in task_type if "=" in t)
    defaults = [t for t in task_type if "=" not in t]
    try:
        board, note = load_board(source, borda, set(out_of_ranking), types, defaults[-1] if defaults else "unspecified",
                                 split, language)
    except (ValueError, TeraziError, pl.exceptions.PolarsError) as e:
        fail(str(e))
    if fmt != "table":
        sys.stdout.write(exports.render(board, fmt, note))
        return
    console.print(exports.board_table(board).rich(f"{source.name}: leaderboard", note))


def load_board(source: str | Path, borda: str | None = None, out_of_ranking: set[str] = frozenset(),
               task_types: dict[str, str] | None = None, default_type: str = "unspecified", split: str | None = None,
               language: str | None = None) -> tuple:
    """(board, note) from a long score table (CSV/parquet), an MTEB results folder, or a terazi results folder.

    A terazi results folder's `leaderboard.csv` is shown as its run aggregated it (with significance groups
    and intervals), so `borda` and `out_of_ranking` do not apply to it.
    """
    from terazi.analysis.leaderboard import board_of_scores, describe, read_long_table
    from terazi.data.mteb_results import read_mteb_results
    from terazi.readback import read_csv
    from terazi.schemas.layout import RunLayout

    source, layout = Path(source), RunLayout(source)
    if source.is_dir() and (layout.leaderboard_csv.is_file() or layout.marker.exists()):
        layout.refuse_unfinished()
        if borda is not None or out_of_ranking:
            raise ValueError(f"{source} is a terazi results folder, aggregated by its run: --borda and "
                             "--out-of-ranking apply to score tables and MTEB folders (set `borda:` in the run's config)")
        return read_csv(layout.leaderboard_csv), f"terazi run {source.name}; its leaderboard.md states the contract."
    borda = borda or "per-task"
    if source.is_dir():
        long = read_mteb_results(source, task_types, default_type, split, language)
        what = f"MTEB results in {source}: main_score averaged over splits and subsets per task"
    else:
        long = read_long_table(source)
        what = f"{source.name}"
    return board_of_scores(long, out_of_ranking, borda), f"{what}. {describe(borda)}"
