"""`terazi compare`: two results folders, or two systems of one, cell by cell with paired intervals."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from terazi.base.amounts import SEED, Range
from terazi.base.paths import Place
from terazi.cli.common import console, fail
from terazi.cli.options import Verbose, amount
from terazi.cli.places import declares


@declares(reads=(Place("before", "results folder"), Place("after", "results folder")))
def compare(
    before: Annotated[Path, typer.Argument(exists=True, file_okay=False, help="results folder (the baseline)")],
    after: Annotated[
        Path | None, typer.Argument(exists=True, file_okay=False, help="results folder to compare with it")
    ] = None,
    systems: Annotated[
        tuple[str, str] | None, typer.Option(help="compare two systems of BEFORE instead: --systems A B (A − B)")
    ] = None,
    measure: Annotated[
        str | None, typer.Option("--measure", "-m", help="measure (default: the run's headline)")
    ] = None,
    fmt: Annotated[
        Literal["table", "markdown", "json"], typer.Option("--format", help="a table on the terminal, markdown or JSON")
    ] = "table",
    everything: Annotated[bool, typer.Option("--all", help="every cell, not only those that changed")] = False,
    resamples: Annotated[int, amount(Range(whole=True, ge=100), help="paired bootstrap resamples")] = 2000,
    seed: Annotated[int, amount(SEED, help="bootstrap seed")] = 0,
    confidence: Annotated[float, amount(Range(ge=0.5, le=0.999), help="level of the intervals")] = 0.95,
    holm: Annotated[bool, typer.Option("--holm", help="Holm correction across each system's cells")] = False,
    verbose: Verbose = False,
) -> None:
    """Per dataset × condition: delta, paired bootstrap interval and verdict (better / no difference / worse)."""
    from terazi.analysis import comparison as core

    if (after is None) == (systems is None):
        fail("give two results folders (terazi compare A B) or one folder and --systems A B")
    if systems:
        cmp = core.compare_systems(before, *systems, measure, resamples, seed, confidence, holm)
    else:
        cmp = core.compare_runs(before, after, measure, resamples, seed, confidence, holm)
    if fmt == "json":
        print(cmp.to_json())
    elif fmt == "markdown":
        from terazi.present.comparison_text import comparison_markdown

        print(comparison_markdown(cmp, everything))
    else:
        from terazi.present.comparison_text import comparison_rich

        console.print(comparison_rich(cmp, everything))
