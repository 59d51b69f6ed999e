"""A leaderboard as text for papers and pages: markdown, booktabs LaTeX, CSV and JSON, every column in each.

LaTeX follows ranx's `to_latex`: booktabs rules, the best value of each score column in bold, and
significance groups (when the board has a `group` column) as superscripts on the system names.
"""

from __future__ import annotations

import json

import polars as pl

LABELS = {"system": "System", "borda_votes": "Borda votes", "borda_rank": "Rank", "mean_task": "Mean (Task)",
          "mean_task_type": "Mean (TaskType)", "mean_task_complete": "Mean (Task), complete only",
          "mean_task_type_complete": "Mean (TaskType), complete only", "tasks": "Tasks", "group": "Group",
          "ci_low": "CI low", "ci_high": "CI high"}
NOT_SCORES = {"system", "borda_rank", "tasks", "group", "ci_low", "ci_high"}  # never marked best
FORMATS = ("table", "csv", "json", "markdown", "latex")
_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
          "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "–": "--", "−": "-", "×": r"$\times$"}


def label(column: str) -> str:
    return LABELS.get(column, column)


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


def to_csv(board: pl.DataFrame) -> str:
    return board.write_csv()


def to_json(board: pl.DataFrame) -> str:
    return json.dumps(board.to_dicts(), indent=2, ensure_ascii=False)


def _md(text: str) -> str:
    return text.replace("|", r"\|")


def to_markdown(board: pl.DataFrame, note: str = "") -> str:
    """A pipe table with human column names, the best value of each score column in bold, and the note."""
    marks = best(board)
    lines = ["| " + " | ".join(_md(label(c)) for c in board.columns) + " |",
             "|" + "|".join(":---" if c == "system" else "---:" for c in board.columns) + "|"]
    for i, r in enumerate(board.iter_rows(named=True)):
        cells = [_md(cell(c, r[c])) for c in board.columns]
        cells = [f"**{v}**" if i in marks.get(c, ()) else v for c, v in zip(board.columns, cells)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + (f"\n\n{note}\n" if note else "\n")


def latex_escape(text: str) -> str:
    return "".join(_LATEX.get(ch, ch) for ch in text)


def to_latex(board: pl.DataFrame, caption: str = "", label_: str = "tab:terazi-leaderboard") -> str:
    """A booktabs `table` (needs \\usepackage{booktabs}); names and caption escaped; best per column in bold."""
    groups = "group" in board.columns
    cols = [c for c in board.columns if c != "group"]
    marks = best(board)
    if groups:
        caption = (caption + " " if caption else "") + ("Superscripts give significance groups (paired bootstrap): "
                                                        "systems sharing a number are not significantly different.")
    head = " & ".join(latex_escape(label(c)) for c in cols) + r" \\"
    rows = []
    for i, r in enumerate(board.iter_rows(named=True)):
        out = []
        for c in cols:
            text = latex_escape(cell(c, r[c]))
            if i in marks.get(c, ()):
                text = rf"\textbf{{{text}}}"
            if c == "system" and groups and r["group"] is not None:
                text += rf"$^{{{latex_escape(str(r['group']))}}}$"
            out.append(text)
        rows.append(" & ".join(out) + r" \\")
    spec = "".join("l" if c == "system" else "r" for c in cols)
    return "\n".join([
        r"% terazi leaderboard; needs \usepackage{booktabs}",
        r"\begin{table}[t]", r"\centering",
        rf"\caption{{{latex_escape(caption)}}}" if caption else "%",
        rf"\label{{{label_}}}",
        rf"\begin{{tabular}}{{{spec}}}", r"\toprule", head, r"\midrule", *rows, r"\bottomrule",
        r"\end{tabular}", r"\end{table}", ""])


def render(board: pl.DataFrame, fmt: str, note: str = "") -> str:
    """The board as csv, json, markdown or latex (the terminal table is the CLI's)."""
    if fmt == "csv":
        return to_csv(board)
    if fmt == "json":
        return to_json(board) + "\n"
    if fmt == "markdown":
        return to_markdown(board, note)
    if fmt == "latex":
        return to_latex(board, note)
    raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
