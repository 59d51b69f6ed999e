"""The board `terazi leaderboard` shows: of a long score table or an MTEB results folder, aggregated as the ranking
note defines it (terazi.analysis.leaderboard), or of a terazi results folder, as its run aggregated it."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from terazi.analysis.leaderboard import board_of_scores, describe, read_long_table
from terazi.data.mteb_results import read_mteb_results
from terazi.schemas.layout import RunLayout
from terazi.schemas.results_folder import ResultsFolder


def load_board(
    source: str | Path,
    borda: str | None = None,
    out_of_ranking: set[str] = frozenset(),
    task_types: list[str] = (),
    split: str | None = None,
    language: str | None = None,
) -> tuple[pl.DataFrame, str]:
    """(board, note) from a long score table (CSV/parquet), an MTEB results folder, or a terazi results folder.

    A terazi results folder's `leaderboard.csv` is shown as its run aggregated it (with significance groups
    and intervals), so `borda` and `out_of_ranking` do not apply to it. `task_types` are an MTEB folder's TASK=TYPE
    for Mean (TaskType), a TYPE alone the type of every other task (the last one given; default: unspecified).
    """
    source, layout = Path(source), RunLayout(source)
    if source.is_dir() and (layout.leaderboard_csv.is_file() or layout.marker.exists()):
        folder = ResultsFolder(source)
        if borda is not None or out_of_ranking:
            raise ValueError(
                f"{source} is a terazi results folder, aggregated by its run: --borda and "
                "--out-of-ranking apply to score tables and MTEB folders (set `borda:` in the run's "
                "config)"
            )
        return folder.board, f"terazi run {source.name}; its leaderboard.md states the contract."
    borda = borda or "per-task"
    if source.is_dir():
        types = dict(t.split("=", 1) for t in task_types if "=" in t)
        default = next((t for t in reversed(task_types) if "=" not in t), "unspecified")
        long = read_mteb_results(source, types, default, split, language)
        what = f"MTEB results in {source}: main_score averaged over splits and subsets per task"
    else:
        long = read_long_table(source)
        what = f"{source.name}"
    return board_of_scores(long, out_of_ranking, borda), f"{what}. {describe(borda)}"
