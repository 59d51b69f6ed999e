"""`terazi leaderboard`: Borda and means from a long score table, an MTEB results folder or a terazi results folder."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from terazi.base.paths import Place
from terazi.cli.common import console, fail
from terazi.cli.options import Verbose
from terazi.cli.places import declares

SOURCE = (
    "a long score table (CSV or parquet: system,task,task_type,score), an MTEB results folder "
    "(<model>/<revision>/<task>.json) or a terazi results folder"
)
BORDA = (
    "per-task (default; N = systems evaluated on each task, the ranking note) | mteb (N = every system with any "
    "result, MTEB's code)"
)
TASK_TYPES = "MTEB folders: TASK=TYPE for Mean (TaskType) (repeatable); a TYPE alone is the default type"


@declares(reads=(Place("source", "score table"),))
def leaderboard_cmd(
    source: Annotated[Path, typer.Argument(exists=True, help=SOURCE)],
    fmt: Annotated[str, typer.Option("--format", help="table | csv | json | markdown | latex (booktabs)")] = "table",
    borda: Annotated[str | None, typer.Option(help=BORDA)] = None,
    out_of_ranking: Annotated[list[str] | None, typer.Option(help="task shown but not aggregated (repeatable)")] = None,
    task_type: Annotated[list[str] | None, typer.Option(help=TASK_TYPES)] = None,
    split: Annotated[str | None, typer.Option(help="MTEB folders: only this split (default: every split)")] = None,
    language: Annotated[str | None, typer.Option(help="MTEB folders: only subsets in this language, e.g. tur")] = None,
    verbose: Verbose = False,
) -> None:
    """Borda count, Mean (Task) and Mean (TaskType) as the ranking note defines them, in any format."""
    import polars as pl

    from terazi.base.errors import TeraziError
    from terazi.present import exports
    from terazi.results.board import load_board

    if fmt not in exports.FORMATS:
        fail(f"--format must be one of {', '.join(exports.FORMATS)}, got {fmt!r}")
    try:
        board, note = load_board(source, borda, set(out_of_ranking or []), task_type or [], split, language)
    except (ValueError, TeraziError, pl.exceptions.PolarsError) as e:
        fail(str(e))
    if fmt != "table":
        sys.stdout.write(exports.render(board, fmt, note))
        return
    console.print(exports.board_table(board).rich(f"{source.name}: leaderboard", note))
