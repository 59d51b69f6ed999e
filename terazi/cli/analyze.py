"""`terazi analyze`: the leaderboard, intervals, retention, comparisons and report from TREC runs made anywhere."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer

from terazi.cli.common import VERBOSE, err, errors_as_lines
from terazi.cli.places import Place, declares
from terazi.cli.show import print_leaderboard


@declares(reads=(Place("folder", "runs folder"), Place("exclude", "exclude folder")),
          writes=(Place("out", "results folder"),))
def analyze(
    folder: Path = typer.Argument(..., help="runs folder: qrels/<dataset>.tsv, runs/<dataset>/<condition>/<system>.trec, "
                                            "optional changed/<dataset>/<condition>.txt and datasets.yaml"),
    out: str = typer.Option(..., "--out", "-o", help="results folder to write (the analysis goes straight into it)"),
    metric: list[str] = typer.Option([], "--metric", "-m", help="measure per query (repeatable; default nDCG@10, RR@10)"),
    headline: Optional[str] = typer.Option(None, help="measure of the leaderboard (default nDCG@10)"),
    condition: list[str] = typer.Option([], "--condition", help="conditions to analyse, in this order (repeatable; "
                                                                 "default: every condition found)"),
    benchmark: Optional[str] = typer.Option(None, help="benchmark name (artifact keys start with it)"),
    seed: Optional[int] = typer.Option(None, help="bootstrap seed"),
    resamples: Optional[int] = typer.Option(None, help="paired bootstrap resamples (default 2000)"),
    holm: bool = typer.Option(False, "--holm", help="Holm correction across the cells of each pairwise comparison"),
    confidence: Optional[float] = typer.Option(None, help="level of the intervals (default 0.95)"),
    borda: Optional[str] = typer.Option(None, help="Borda count: per-task (default) or mteb"),
    retention: Optional[str] = typer.Option(None, help="retention across datasets: macro (default, as the Kalbur "
                                                       "card) or pooled"),
    featured: Optional[str] = typer.Option(None, help="system whose significant cells are listed (default: the top)"),
    first_stage: list[str] = typer.Option([], "--first-stage", help="runs of several first stages (files named "
                                          "<first stage>~<system>.trec): their order, the first one's results in the "
                                          "folder (repeatable; default: sorted)"),
    labels: Optional[str] = typer.Option(None, help="display labels: en (default) or tr"),
    exclude: Optional[str] = typer.Option(None, help="leakage output folder (`terazi leakage --out`): every headline "
                                                      "also without the queries it lists"),
    exclude_by: Optional[str] = typer.Option(None, help="with --exclude: queries (default: the contaminated ones) or "
                                                        "relevant (also those whose relevant passage is hit)"),
    verbose: bool = VERBOSE,
) -> None:
    """Analyse TREC run files made anywhere: writes the same results folder as `terazi run`."""
    with errors_as_lines():
        from terazi.cli.prefect_api import check_api, no_heartbeats, quiet_console
        from terazi.results.imported import inventory
        from terazi.schemas import AnalyzeConfig

        raw: dict = {"folder": str(folder), "out_dir": str(Path(out).parent), "run_name": Path(out).name, "holm": holm}
        for key, value in (("metrics", metric or None), ("headline", headline), ("conditions", condition or None),
                           ("benchmark", benchmark), ("seed", seed), ("bootstrap_resamples", resamples),
                           ("confidence", confidence), ("borda", borda), ("retention", retention),
                           ("featured", featured), ("first_stages", first_stage or None), ("labels", labels),
                           ("exclude", exclude),
                           ("exclude_by", exclude_by)):
            if value is not None:
                raw[key] = value
        config = AnalyzeConfig.model_validate(raw)
        inventory(config)  # a malformed folder (or --exclude folder) fails here, in one line, before Prefect starts
        check_api()
        err.print("[dim]starting Prefect (a temporary local server unless PREFECT_API_URL is set)…[/]")
        quiet_console()
        from terazi.flows.analyze import analyze as analyze_flow

        t0 = time.perf_counter()
        with no_heartbeats():
            manifest = analyze_flow(config)
    print_leaderboard(Path(manifest.run_dir))
    err.print(f"results: {manifest.run_dir}  ({time.perf_counter() - t0:.1f}s)")
