"""`terazi compare`: two results folders, or two systems of one, cell by cell with paired intervals."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from terazi.base.paths import Place
from terazi.cli.common import console, fail
from terazi.cli.options import Verbose, sets
from terazi.cli.places import declares
from terazi.config.config_files import given
from terazi.schemas.statistics import Statistics


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
    seed: Annotated[int | None, sets(Statistics, "seed")] = None,
    resamples: Annotated[int | None, sets(Statistics, "bootstrap_resamples")] = None,
    confidence: Annotated[float | None, sets(Statistics, "confidence")] = None,
    correction: Annotated[str | None, sets(Statistics, "correction")] = None,
    correction_scope: Annotated[str | None, sets(Statistics, "correction_scope")] = None,
    verdict: Annotated[str | None, sets(Statistics, "verdict")] = None,
    equivalence_margin: Annotated[float | None, sets(Statistics, "equivalence_margin")] = None,
    randomization_resamples: Annotated[int | None, sets(Statistics, "randomization_resamples")] = None,
    holm: Annotated[bool, sets(Statistics, "holm", "--holm")] = False,
    verbose: Verbose = False,
) -> None:
    """Per dataset × condition: delta, paired bootstrap interval, randomization test and verdict (better / worse, or
    equivalent within δ / not shown equivalent); the statistics' settings and defaults are a run's."""
    from terazi.analysis import comparison as core

    if (after is None) == (systems is None):
        fail("give two results folders (terazi compare A B) or one folder and --systems A B")
    statistics = Statistics.model_validate(given(Statistics, locals(), resamples="bootstrap_resamples"))
    if systems:
        cmp = core.compare_systems(before, *systems, measure, statistics)
    else:
        cmp = core.compare_runs(before, after, measure, statistics)
    if fmt == "json":
        print(cmp.to_json())
    elif fmt == "markdown":
        from terazi.present.comparison_text import comparison_markdown

        print(comparison_markdown(cmp, everything))
    else:
        from terazi.present.comparison_text import comparison_rich

        console.print(comparison_rich(cmp, everything))
