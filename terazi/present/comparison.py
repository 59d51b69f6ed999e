"""A comparison (terazi.analysis.comparison) in markdown: `terazi compare --format markdown` and the nightly."""

from __future__ import annotations

import polars as pl

from terazi.analysis.comparison import Comparison
from terazi.present.tables import level


def comparison_markdown(cmp: Comparison, everything: bool = False) -> str:
    """`terazi compare --format markdown`: the overall lines, then the cells that changed (or every cell)."""
    lines = [f"# {cmp.title}", "", f"{cmp.measure}: paired bootstrap over the same queries, balanced by dataset, "
             f"{level(cmp.confidence)} interval; correction: {cmp.correction}.", ""]
    lines += _md_table(cmp.overall, "overall (clean, datasets weighted equally)")
    shown = cmp.cells if everything else cmp.changed()
    lines += _md_table(shown, "cells" if everything else "cells that changed")
    same = cmp.unchanged_systems()
    if same and not everything:
        lines += [f"Unchanged in every cell: {', '.join(same)}.", ""]
    lines += [f"Only {side}: {', '.join(names)}." for side, names in (("after", cmp.added), ("before", cmp.removed))
              if names]
    return "\n".join(lines).rstrip() + "\n"


def _fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:+.4f}" if abs(v) < 1e9 else f"{v:g}"
    return str(v)


def _md_table(df: pl.DataFrame, caption: str) -> list[str]:
    if df.height == 0:
        return [f"No {caption}.", ""]
    cols = [c for c in df.columns if not (c == "versus" and df["versus"].is_null().all())]
    out = [f"**{caption}**", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in df.iter_rows(named=True):
        out.append("| " + " | ".join(f"{r[c]:.4f}" if c in ("before", "after") and r[c] is not None
                                       else f"{r[c]:.3g}" if c == "p_value" and r[c] is not None
                                       else _fmt(r[c]) for c in cols) + " |")
    return out + [""]
