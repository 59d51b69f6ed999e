"""One table, many faces: every table terazi shows is a `Table` of text cells, rendered here as markdown, HTML,
LaTeX (booktabs), a terminal (rich) table, records or JSON, so a table reads the same wherever it is shown.

Cells are already formatted text (terazi.present.labels formats the numbers); a face only escapes what its format
needs. `align` gives each column's side ("left"/"right"; None: the face's default), `bold` the cells to emphasise
(row, column), `marks` a superscript per row after its first cell (LaTeX: significance groups).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "–": "--",
    "−": "-",
    "×": r"$\times$",
}
NUMERIC = re.compile(r"^(–|[-+]?%?\d[\d.]*%?( \(.*\))?|\[.*\])$")  # what HTML right-aligns when no `align` is given
_MD_ALIGN = {"left": ":---", "right": "---:", None: "---"}


def latex_escape(text: str) -> str:
    return "".join(LATEX.get(ch, ch) for ch in text)


@dataclass
class Table:
    """A display table: column names and rows of text, with notes printed under it."""

    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    align: list[str | None] | None = None
    bold: set[tuple[int, int]] = field(default_factory=set)
    marks: list[str | None] | None = None

    def _align(self) -> list[str | None]:
        return self.align or [None] * len(self.columns)

    def markdown(self) -> str:
        """A pipe table ('|' in a cell escaped), then each note as its own paragraph (a leading '*' escaped, so it is
        no list item)."""

        def esc(text: str) -> str:
            return text.replace("|", "\\|")

        lines = [
            "| " + " | ".join(map(esc, self.columns)) + " |",
            "|" + "|".join(_MD_ALIGN[a] for a in self._align()) + "|",
        ]
        for i, r in enumerate(self.rows):
            cells = [f"**{esc(v)}**" if (i, j) in self.bold else esc(v) for j, v in enumerate(r)]
            lines.append("| " + " | ".join(cells) + " |")
        notes = [("\\" + n if n.startswith("*") else n) for n in self.notes]
        return "\n".join(lines) + "".join("\n\n" + n for n in notes)

    def html(self, table_id: str) -> str:
        """The table in its own horizontally scrolling box: numbers right-aligned, text left; names never wrap inside a
        word; rows with a better/worse verdict tinted; notes below."""
        if self.align:
            numeric = [a == "right" for a in self.align]
        else:
            numeric = [
                all(NUMERIC.match(r[i]) for r in self.rows) if self.rows else False for i in range(len(self.columns))
            ]
        verdict = self.columns.index("Verdict") if "Verdict" in self.columns else None
        head = "".join(f'<th class="{"num" if n else "text"}">{_header(c)}</th>' for c, n in zip(self.columns, numeric))
        body = []
        for r in self.rows:
            cls = r[verdict] if verdict is not None and r[verdict] in ("better", "worse") else ""
            body.append(
                f'<tr class="{cls}">'
                + "".join(f'<td class="{"num" if n else "text"}">{html.escape(v)}</td>' for v, n in zip(r, numeric))
                + "</tr>"
            )
        notes = "".join(f"<p>{html.escape(n)}</p>" for n in self.notes)
        return (
            f'<div class="table-box"><table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}'
            f"</tbody></table></div>" + (f'<div class="notes">{notes}</div>' if notes else "")
        )

    def latex(self, caption: str = "", label: str = "tab:terazi") -> str:
        """A booktabs `table` (needs \\usepackage{booktabs}): cells and caption escaped, bold cells in \\textbf,
        `marks` as superscripts after each row's first cell."""
        head = " & ".join(latex_escape(c) for c in self.columns) + r" \\"
        rows = []
        for i, r in enumerate(self.rows):
            out = []
            for j, v in enumerate(r):
                text = latex_escape(v)
                if (i, j) in self.bold:
                    text = rf"\textbf{{{text}}}"
                if j == 0 and self.marks and self.marks[i] is not None:
                    text += rf"$^{{{latex_escape(self.marks[i])}}}$"
                out.append(text)
            rows.append(" & ".join(out) + r" \\")
        spec = "".join("r" if a == "right" else "l" for a in self._align())
        return "\n".join(
            [
                r"% terazi leaderboard; needs \usepackage{booktabs}",
                r"\begin{table}[t]",
                r"\centering",
                rf"\caption{{{latex_escape(caption)}}}" if caption else "%",
                rf"\label{{{label}}}",
                rf"\begin{{tabular}}{{{spec}}}",
                r"\toprule",
                head,
                r"\midrule",
                *rows,
                r"\bottomrule",
                r"\end{tabular}",
                r"\end{table}",
                "",
            ]
        )

    def rich(
        self,
        title: str | None = None,
        caption: str | None = None,
        no_wrap: tuple[int, ...] = (),
        styles: list[str | None] | None = None,
        caption_justify: str | None = None,
        fold: bool = False,
    ):
        """A rich table for the terminal (cells are plain text, never markup); bold cells bold, `styles` per row;
        `fold`: a word too long for its column goes on over the next lines (a path), instead of being cut short."""
        from rich.table import Table as RichTable
        from rich.text import Text

        kw = {"caption_justify": caption_justify} if caption_justify else {}
        t = RichTable(title=Text(title) if title else None, caption=Text(caption) if caption else None, **kw)
        for j, (c, a) in enumerate(zip(self.columns, self._align())):
            t.add_column(c, justify=a or "left", no_wrap=j in no_wrap, overflow="fold" if fold else "ellipsis")
        for i, r in enumerate(self.rows):
            t.add_row(
                *(Text(v, style="bold" if (i, j) in self.bold else "") for j, v in enumerate(r)),
                style=(styles[i] if styles else None),
            )
        return t

    def dicts(self) -> list[dict[str, str]]:
        """Rows as records; a repeated column name (an interval after each value) names its value column."""
        keys = [c if c not in self.columns[:i] else f"{c} ({self.columns[i - 1]})" for i, c in enumerate(self.columns)]
        return [dict(zip(keys, r)) for r in self.rows]

    def without(self, *names: str) -> Table:
        """The same table without the named columns."""
        keep = [i for i, c in enumerate(self.columns) if c not in names]
        return Table(
            [self.columns[i] for i in keep],
            [[r[i] for i in keep] for r in self.rows],
            list(self.notes),
            [self.align[i] for i in keep] if self.align else None,
        )

    def to_json(self) -> dict:
        return {"columns": self.columns, "rows": self.rows, "notes": self.notes}

    @classmethod
    def from_json(cls, body: dict) -> Table:
        return cls(body["columns"], body["rows"], body.get("notes", []))


def _header(name: str) -> str:
    """Header text that wraps only between words: each word stays whole (`first-stage` never splits)."""
    return " ".join(f'<span class="w">{html.escape(w)}</span>' for w in name.split(" "))
