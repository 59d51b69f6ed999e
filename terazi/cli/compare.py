"""`terazi compare`: two results folders, or two systems of one, cell by cell with paired intervals."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from terazi.cli.common import VERBOSE, console, fail
from terazi.cli.places import Place, declares
from terazi.present.labels import level


@declares(reads=(Place("before", "results folder"), Place("after", "results folder")))
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
    verbose: bool = VERBOSE,
) -> None:
    """Per dataset × condition: delta, paired bootstrap interval and verdict (better / no difference / worse)."""
    from terazi.analysis import comparison as core

    if fmt not in ("table", "markdown", "json"):
        fail(f"--format must be table, markdown or json, got {fmt!r}")
    if (after is None) == (systems is None):
        fail("give two results folders (terazi compare A B) or one folder and --systems A B")
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
    from terazi.present.comparison import TEXT_COLUMNS, VERDICT_STYLES, comparison_table

    def table(df, title: str) -> None:
        t = comparison_table(df)
        t.align = ["left" if c in TEXT_COLUMNS else "right" for c in t.columns]
        console.print(t.rich(title, styles=[VERDICT_STYLES.get(v) for v in df["verdict"].to_list()]))

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
    if cmp.depths is not None:
        from terazi.present.comparison import DEPTHS_CAPTION, depth_table

        console.print(depth_table(cmp.depths).rich(DEPTHS_CAPTION))
