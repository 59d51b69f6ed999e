"""`terazi analyze`: the leaderboard, intervals, retention, comparisons and report from TREC runs made anywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from terazi.base.paths import Place
from terazi.cli.common import err, print_leaderboard
from terazi.cli.options import Leakage, LeakageBy, Results, Verbose, about, sets
from terazi.cli.places import declares
from terazi.config.config_files import given
from terazi.schemas import AnalyzeConfig


@declares(
    reads=(Place("folder", "runs folder"), Place("leakage", "leakage folder")), writes=(Place("out", "results folder"),)
)
def analyze(
    folder: Annotated[Path, typer.Argument(help=about(AnalyzeConfig, "folder"))],
    out: Results,
    metric: Annotated[list[str] | None, sets(AnalyzeConfig, "metrics", "--metric", "-m")] = None,
    headline: Annotated[str | None, sets(AnalyzeConfig, "headline")] = None,
    condition: Annotated[list[str] | None, sets(AnalyzeConfig, "conditions")] = None,
    benchmark: Annotated[str | None, sets(AnalyzeConfig, "benchmark")] = None,
    seed: Annotated[int | None, sets(AnalyzeConfig, "seed")] = None,
    resamples: Annotated[int | None, sets(AnalyzeConfig, "bootstrap_resamples")] = None,
    holm: Annotated[bool, sets(AnalyzeConfig, "holm", "--holm")] = False,
    confidence: Annotated[float | None, sets(AnalyzeConfig, "confidence")] = None,
    correction: Annotated[str | None, sets(AnalyzeConfig, "correction")] = None,
    correction_scope: Annotated[str | None, sets(AnalyzeConfig, "correction_scope")] = None,
    verdict: Annotated[str | None, sets(AnalyzeConfig, "verdict")] = None,
    equivalence_margin: Annotated[float | None, sets(AnalyzeConfig, "equivalence_margin")] = None,
    randomization_resamples: Annotated[int | None, sets(AnalyzeConfig, "randomization_resamples")] = None,
    borda: Annotated[str | None, sets(AnalyzeConfig, "borda")] = None,
    retention: Annotated[str | None, sets(AnalyzeConfig, "retention")] = None,
    featured: Annotated[str | None, sets(AnalyzeConfig, "featured")] = None,
    first_stage: Annotated[list[str] | None, sets(AnalyzeConfig, "first_stages")] = None,
    labels: Annotated[str | None, sets(AnalyzeConfig, "labels")] = None,
    leakage: Leakage = None,
    leakage_by: LeakageBy = None,
    verbose: Verbose = False,
) -> None:
    """Analyse TREC run files made anywhere: writes the same results folder as `terazi run`."""
    fields = given(
        AnalyzeConfig,
        locals(),
        metric="metrics",
        condition="conditions",
        resamples="bootstrap_resamples",
        first_stage="first_stages",
    )
    from terazi.cli.prefect_api import check_api, run_flow
    from terazi.results.imported import inventory

    config = AnalyzeConfig.model_validate(
        {**fields, "folder": str(folder), "out_dir": str(Path(out).parent), "run_name": Path(out).name}
    )
    inventory(config)  # a malformed folder (or --leakage folder) fails here, in one line, before Prefect starts
    check_api()
    manifest, seconds = run_flow("terazi.flows.analyze:analyze", config)
    print_leaderboard(Path(manifest.run_dir))
    err.print(f"results: {manifest.run_dir}  ({seconds:.1f}s)")
