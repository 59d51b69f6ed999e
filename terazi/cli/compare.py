"""`terazi compare`: two results folders, or two systems of one, cell by cell with paired intervals."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from terazi.cli.common import Verbose, console, fail
from terazi.cli.places import declares
from terazi.paths import Place


@declares(reads=(Place("before", "results folder"), Place("after", "results folder")))
def compare(
    before: Annotated[Path, typer.Argument(exists=True, file_okay=False, help="results folder (the baseline)")],
    after: Annotated[Path | None, typer.Argument(exists=True, file_okay=False, help=(
        "results folder to compare with it"))] = None,
    systems: Annotated[tuple[str, str] | None, typer.Option("--systems", help=(
        "compare two systems of BEFORE instead: --systems A B (A − B)"))] = None,
    measure: Annotated[str | None, typer.Option("--measure", "-m", help=(
        "measure (default: the run's headline)"))] = None,
    fmt: Annotated[str, typer.Option("--format", help="table | markdown | json")] = "table",
    everything: Annotated[bool, typer.Option("--all", help="every cell, not only those that changed")] = False,
    resamples: Annotated[int, typer.Option(min=100, help="paired bootstrap resamples")] = 2000,
    seed: Annotated[int, typer.Option(help="bootstrap seed")] = 0,
    confidence: Annotated[float, typer.Option(min=0.5, max=0.999, help="level of the intervals")] = 0.95,
    holm: Annotated[bool, typer.Option("--holm", help="Holm correction across each system's cells")] = False,
    verbose: Verbose = False,
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
        from terazi.present.comparison import comparison_rich

        console.print(comparison_rich(cmp, everything))
