"""`terazi analyze`: the leaderboard, intervals, retention, comparisons and report from TREC runs made anywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from terazi.cli.common import Exclude, ExcludeBy, Verbose, err, given, print_leaderboard
from terazi.cli.places import declares
from terazi.paths import Place


@declares(reads=(Place("folder", "runs folder"), Place("exclude", "exclude folder")),
          writes=(Place("out", "results folder"),))
def analyze(
    folder: Annotated[Path, typer.Argument(help=(
        "runs folder: qrels/<dataset>.tsv, runs/<dataset>/<condition>/<system>.trec, optional "
        "changed/<dataset>/<condition>.txt and datasets.yaml"))],
    out: Annotated[str, typer.Option("--out", "-o", help=(
        "results folder to write (the analysis goes straight into it)"))],
    metric: Annotated[list[str] | None, typer.Option("--metric", "-m", help=(
        "measure per query (repeatable; default nDCG@10, RR@10)"))] = None,
    headline: Annotated[str | None, typer.Option(help="measure of the leaderboard (default nDCG@10)")] = None,
    condition: Annotated[list[str] | None, typer.Option("--condition", help=(
        "conditions to analyse, in this order (repeatable; default: every condition found)"))] = None,
    benchmark: Annotated[str | None, typer.Option(help="benchmark name (artifact keys start with it)")] = None,
    seed: Annotated[int | None, typer.Option(help="bootstrap seed")] = None,
    resamples: Annotated[int | None, typer.Option(help="paired bootstrap resamples (default 2000)")] = None,
    holm: Annotated[bool, typer.Option("--holm", help=(
        "Holm correction across the cells of each pairwise comparison"))] = False,
    confidence: Annotated[float | None, typer.Option(help="level of the intervals (default 0.95)")] = None,
    borda: Annotated[str | None, typer.Option(help="Borda count: per-task (default) or mteb")] = None,
    retention: Annotated[str | None, typer.Option(help=(
        "retention across datasets: macro (default, as the Kalbur card) or pooled"))] = None,
    featured: Annotated[str | None, typer.Option(help=(
        "system whose significant cells are listed (default: the top)"))] = None,
    first_stage: Annotated[list[str] | None, typer.Option("--first-stage", help=(
        "runs of several first stages (files named <first stage>~<system>.trec): their order, the first one's "
        "results in the folder (repeatable; default: sorted)"))] = None,
    labels: Annotated[str | None, typer.Option(help="display labels: en (default) or tr")] = None,
    exclude: Exclude = None,
    exclude_by: ExcludeBy = None,
    verbose: Verbose = False,
) -> None:
    """Analyse TREC run files made anywhere: writes the same results folder as `terazi run`."""
    from terazi.cli.prefect_api import check_api, run_flow
    from terazi.results.imported import inventory
    from terazi.schemas import AnalyzeConfig

    config = AnalyzeConfig.model_validate(given(
        folder=str(folder), out_dir=str(Path(out).parent), run_name=Path(out).name, holm=holm, metrics=metric,
        headline=headline, conditions=condition, benchmark=benchmark, seed=seed, bootstrap_resamples=resamples,
        confidence=confidence, borda=borda, retention=retention, featured=featured, first_stages=first_stage,
        labels=labels, exclude=exclude, exclude_by=exclude_by))
    inventory(config)  # a malformed folder (or --exclude folder) fails here, in one line, before Prefect starts
    check_api()
    manifest, seconds = run_flow("terazi.flows.analyze:analyze", config)
    print_leaderboard(Path(manifest.run_dir))
    err.print(f"results: {manifest.run_dir}  ({seconds:.1f}s)")
