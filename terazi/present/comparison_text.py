"""A comparison (terazi.analysis.comparison) in markdown (`terazi compare --format markdown` and the nightly) and on a
terminal (`terazi compare`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from terazi.analysis.comparison import Comparison
from terazi.present.labels import level
from terazi.present.table import Table

if TYPE_CHECKING:
    from rich.console import Group


def comparison_markdown(cmp: Comparison, everything: bool = False) -> str:
    """`terazi compare --format markdown`: the overall lines, then the cells that changed (or every cell)."""
    lines = [
        f"# {cmp.title}",
        "",
        f"{cmp.measure}: paired bootstrap over the same queries, balanced by dataset, "
        f"{level(cmp.statistics.confidence)} interval; {cmp.statistics.contract()}.",
        "",
    ]
    lines += _md_table(cmp.overall, "overall (clean, datasets weighted equally)")
    shown = cmp.cells if everything else cmp.changed()
    lines += _md_table(shown, "cells" if everything else "cells that changed")
    same = cmp.unchanged_systems()
    if same and not everything:
        lines += [f"Unchanged in every cell: {', '.join(same)}.", ""]
    lines += [
        f"Only {side}: {', '.join(names)}." for side, names in (("after", cmp.added), ("before", cmp.removed)) if names
    ]
    if cmp.depths is not None:
        lines += ["", f"**{DEPTHS_CAPTION}**", "", depth_table(cmp.depths).markdown()]
    return "\n".join(lines).rstrip() + "\n"


TEXT_COLUMNS = ("system", "versus", "dataset", "condition", "verdict")
VERDICT_STYLES = {"better": "green", "worse": "red"}


def _cell(column: str, v) -> str:
    if v is None:
        return "–"
    if column in ("before", "after"):
        return f"{v:.4f}"
    if column.startswith("p_"):
        return f"{v:.3g}"
    if isinstance(v, float):
        return f"{v:+.4f}" if abs(v) < 1e9 else f"{v:g}"
    return str(v)


def comparison_table(df: pl.DataFrame) -> Table:
    """Cells (or the overall lines) of a comparison as a table; `versus` only where it names a system."""
    cols = [c for c in df.columns if not (c == "versus" and df["versus"].is_null().all())]
    return Table(cols, [[_cell(c, r[c]) for c in cols] for r in df.iter_rows(named=True)])


def _md_table(df: pl.DataFrame, caption: str) -> list[str]:
    if df.height == 0:
        return [f"No {caption}.", ""]
    return [f"**{caption}**", "", comparison_table(df).markdown(), ""]


DEPTHS_CAPTION = "rerank depth (both runs swept it: clean queries, each run's headline)"


def depth_table(depths: pl.DataFrame) -> Table:
    """Per reranker and depth both runs swept: the two headlines, after − before, and each run's enough depth."""
    return Table(
        ["system", "depth", "before", "after", "delta", "enough before", "enough after"],
        [
            [
                r["system"],
                str(r["depth"]),
                _cell("before", r["before"]),
                _cell("after", r["after"]),
                _cell("delta", r["delta"]),
                "✓" if r["enough_before"] else "",
                "✓" if r["enough_after"] else "",
            ]
            for r in depths.iter_rows(named=True)
        ],
        ["Enough: the smallest depth not significantly below that run's deepest (depths.csv)."],
        align=["left", *["right"] * 4, "left", "left"],
    )


def comparison_rich(cmp: Comparison, everything: bool = False) -> Group:
    """`terazi compare`: the parts of the markdown, each verdict coloured."""
    from rich.console import Group
    from rich.text import Text

    def table(df: pl.DataFrame, title: str):
        t = comparison_table(df)
        t.align = ["left" if c in TEXT_COLUMNS else "right" for c in t.columns]
        return t.rich(title, styles=[VERDICT_STYLES.get(v) for v in df["verdict"].to_list()])

    shown = [
        Text(
            f"{cmp.title} — {cmp.measure}, paired bootstrap ({level(cmp.statistics.confidence)}); "
            f"{cmp.statistics.contract()}"
        ),
        table(cmp.overall, "overall (clean, datasets weighted equally)"),
    ]
    cells = cmp.cells if everything else cmp.changed()
    if cells.height:
        shown.append(table(cells, "cells" if everything else "cells that changed"))
    same = cmp.unchanged_systems()
    if same and not everything:
        shown.append(Text(f"unchanged in every cell: {', '.join(same)}"))
    shown += [
        Text(f"{side}: {', '.join(names)}")
        for side, names in (("only after", cmp.added), ("only before", cmp.removed))
        if names
    ]
    if cmp.depths is not None:
        shown.append(depth_table(cmp.depths).rich(DEPTHS_CAPTION))
    return Group(*shown)
