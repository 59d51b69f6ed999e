"""`terazi compare`: two results folders, or two systems of one, cell by cell with paired intervals."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from terazi.cli.common import console, errors_as_lines, fail


def compare(
    before: Path = typer.Argument(..., exists=True, file_okay=False, help="results folder (the baseline)"),
    after: Optional[Path] = typer.Argument(None, exists=True, file_okay=False, help="results folder to compare with it"),
    systems: Optional[tuple[str, str]] = typer.Option(None, "--systems", help="compare two systems of BEFORE instead: "
                                                                              "--systems A B (A − B)"),
    measure: Optional[str] = typer.Option(None, "--measure", "-m", help="measure (default: the run's headline)"),
    fmt: str = typer.Option("table", "--format", help="table | markdown | json"),
    everything: bool = typer.Option(False, "--all", help="every cell, not only those that changed"),
    resamples: int = typer.Option(2000, min=100, help="paired bootstrap resamples"),
    seed: int = typer.Option(0, help="bootstrap seed"),
    confidence: float = typer.Option(0.95, min=0.5, max=0.999, help="level of the intervals"),
    holm: bool = typer.Option(False, "--holm", help="Holm correction across each system's cells"),
) -> None:
    """Per dataset × condition: delta, paired bootstrap interval and verdict (better / no difference / worse)."""
    from terazi.analysis import comparison as core

    if fmt not in ("table", "markdown", "json"):
        fail(f"--format must be table, markdown or json, got {fmt!r}")
    if (after is None) == (systems is None):
        fail("give two results folders (terazi compare A B) or one folder and --systems A B")
    with errors_as_lines():
        if systems:
            cmp = core.compare_systems(before, *systems, measure, resamples, seed, confidence, holm)
        else:
            cmp = core.compare_runs(before, after, measure, resamples, seed, confidence, holm)
    if fmt == "json":
        print(cmp.to_json())
    elif fmt == "markdown":
        from terazi.present.comparison import comparison_markdown

        print(comparison_markdown(cmp, everything))
    else:
        show(cmp, everything)


def show(cmp, everything: bool) -> None:
    def table(df, title: str) -> None:
        t = Table(title=title)
        cols = [c for c in df.columns if not (c == "versus" and df["versus"].is_null().all())]
        for c in cols:
            t.add_column(c, justify="left" if c in ("system", "versus", "dataset", "condition", "verdict") else "right")
        for r in df.iter_rows(named=True):
            style = {"better": "green", "worse": "red"}.get(r["verdict"])
            t.add_row(*(f"{r[c]:.4f}" if c in ("before", "after") else f"{r[c]:+.4f}" if isinstance(r[c], float)
                        and c != "p_value" else f"{r[c]:.3g}" if c == "p_value" else str(r[c]) for c in cols), style=style)
        console.print(t)

    from terazi.present.tables import level

    console.print(f"{cmp.title} — {cmp.measure}, paired bootstrap ({level(cmp.confidence)}), correction: {cmp.correction}",
                  highlight=False)
    table(cmp.overall, "overall (clean, datasets weighted equally)")
    cells = cmp.cells if everything else cmp.changed()
    if cells.height:
        table(cells, "cells" if everything else "cells that changed")
    same = cmp.unchanged_systems()
    if same and not everything:
        console.print(f"unchanged in every cell: {', '.join(same)}", highlight=False)
    for label, names in (("only after", cmp.added), ("only before", cmp.removed)):
        if names:
            console.print(f"{label}: {', '.join(names)}", highlight=False)
