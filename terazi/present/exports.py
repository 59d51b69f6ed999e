"""A leaderboard as text for papers and pages: markdown, booktabs LaTeX, CSV and JSON, every column in each; and the
terminal table of `terazi leaderboard`. One `Table` (`board_table`) serves every text face.

LaTeX follows ranx's `to_latex`: booktabs rules, the best value of each score column in bold, and significance
groups (when the board has a `group` column) as superscripts on the system names.
"""

from __future__ import annotations

import json

import polars as pl

from terazi.present.labels import column_label
from terazi.present.table import Table

NOT_SCORES = {"system", "borda_rank", "tasks", "group", "ci_low", "ci_high"}  # never marked best
FORMATS = ("table", "csv", "json", "markdown", "latex")
GROUPS_NOTE = (
    "Superscripts give significance groups (paired bootstrap): systems sharing a number are not "
    "significantly different."
)


def cell(column: str, value: object) -> str:
    """One value as text: – for missing, Borda votes as they are (halves on ties), other floats to 4 decimals."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:g}" if column == "borda_votes" else f"{value:.4f}"
    return str(value)


def best(board: pl.DataFrame) -> dict[str, set[int]]:
    """Row indexes holding the highest value of each numeric score column (all of them on a tie)."""
    out = {}
    for c in board.columns:
        if c in NOT_SCORES or not board[c].dtype.is_numeric() or board[c].null_count() == board.height:
            continue
        top = board[c].max()
        out[c] = set(board.with_row_index("_i").filter(pl.col(c) == top)["_i"].to_list())
    return out


def board_table(board: pl.DataFrame, columns: list[str] | None = None) -> Table:
    """The board's `columns` (default: all) with human names, systems left and numbers right, the best value of each
    score column bold."""
    columns = columns or board.columns
    marks = best(board)
    rows = [[cell(c, r[c]) for c in columns] for r in board.iter_rows(named=True)]
    bold = {(i, j) for j, c in enumerate(columns) for i in marks.get(c, ())}
    return Table(
        [column_label(c) for c in columns],
        rows,
        align=["left" if c == "system" else "right" for c in columns],
        bold=bold,
    )


def to_markdown(board: pl.DataFrame, note: str = "") -> str:
    """A pipe table with human column names, the best value of each score column in bold, and the note."""
    t = board_table(board)
    t.notes = [note] if note else []
    return t.markdown() + "\n"


def to_latex(board: pl.DataFrame, caption: str = "", label: str = "tab:terazi-leaderboard") -> str:
    """A booktabs `table` (needs \\usepackage{booktabs}); names and caption escaped; best per column in bold; the
    significance group of each system as its superscript."""
    groups = "group" in board.columns
    t = board_table(board, [c for c in board.columns if c != "group"])
    if groups:
        caption = (caption + " " if caption else "") + GROUPS_NOTE
        t.marks = [None if g is None else str(g) for g in board["group"].to_list()]
    return t.latex(caption, label)


def render(board: pl.DataFrame, fmt: str, note: str = "") -> str:
    """The board as csv, json, markdown or latex (the terminal table: `board_table(board).rich(...)`)."""
    if fmt == "csv":
        return board.write_csv()
    if fmt == "json":
        return json.dumps(board.to_dicts(), indent=2, ensure_ascii=False) + "\n"
    if fmt == "markdown":
        return to_markdown(board, note)
    if fmt == "latex":
        return to_latex(board, note)
    raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
