"""`terazi demo` and `terazi run`: a whole evaluation, then the leaderboard on the terminal."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from terazi.cli.common import (
    Datasets,
    Exclude,
    ExcludeBy,
    Verbose,
    err,
    given,
    print_leaderboard,
    with_datasets,
)
from terazi.cli.places import dataset_path, declares
from terazi.configs import demo_config, read_config_file
from terazi.paths import Place


def evaluate_and_print(raw: dict, config_file: Path | None = None) -> None:
    """Validate, check everything that can be checked before Prefect starts, run the flow, print."""
    from terazi import shutdown
    from terazi.cli.prefect_api import check_api, run_flow
    from terazi.preflight import preflight
    from terazi.present.terminal import work_lines
    from terazi.results.folder import check_outputs
    from terazi.schemas import EvalConfig

    config = EvalConfig.model_validate(raw)
    check_api()
    check_outputs(config, [("config file", str(config_file))] if config_file else [])  # before anything is written
    preflight(config, announce=False)  # datasets, models, output and cache folders: one-line errors first
    with shutdown.graceful():
        manifest, seconds = run_flow("terazi.flows.evaluate:evaluate", config)
    print_leaderboard(Path(manifest.run_dir))
    for line in work_lines(manifest):
        err.print(line)
    err.print(f"results: {manifest.run_dir}  ({seconds:.1f}s)")


@declares(writes=(Place("out", "results folder"), Place("cache", "cache folder")))
def demo(
    out: Annotated[str, typer.Option(help="results folder")] = "results",
    cache: Annotated[str, typer.Option(help="frozen candidates, embeddings and score cache")] = ".terazi-cache",
    run_name: Annotated[str | None, typer.Option(help="sub-folder of the results folder")] = "demo",
    verbose: Verbose = False,
) -> None:
    """Full evaluation on the bundled Turkish demo dataset, offline; prints the leaderboard."""
    evaluate_and_print(demo_config(out, cache, run_name))


@declares(reads=(Place("config", "config file"), Place("dataset", "dataset folder", dataset_path),
                 Place("exclude", "exclude folder")),
          writes=(Place("out", "results folder"), Place("cache", "cache folder")))
def run(
    config: Annotated[Path | None, typer.Option("--config", "-c", dir_okay=False, help=(
        "YAML, JSON or TOML file with an EvalConfig"))] = None,
    dataset: Datasets = None,
    reranker: Annotated[list[str] | None, typer.Option("--reranker", "-r", help=(
        "bm25 | cross-encoder:MODEL | bi-encoder:MODEL | llm-reranker:MODEL | http:[MODEL@]URL (key: "
        "$TERAZI_API_KEY) | rrf:A+B, optional =NAME (default: bm25-tr and hybrid-rrf, as in every entry "
        "point)"))] = None,
    encoder: Annotated[str | None, typer.Option(help="first-stage encoder: HF id or local path")] = None,
    condition: Annotated[list[str] | None, typer.Option("--condition", help="query condition (repeatable)")] = None,
    split: Annotated[str | None, typer.Option(help="qrels split")] = None,
    depth: Annotated[int | None, typer.Option(help="first-stage candidates per query")] = None,
    rerank_depth: Annotated[int | None, typer.Option(help="candidates each reranker rescores")] = None,
    samples: Annotated[int | None, typer.Option(help="samples per query for stochastic conditions (≥ 1)")] = None,
    seed: int | None = None,
    out: Annotated[str | None, typer.Option("--out", "-o", help=(
        "results folder; the run goes straight into it"))] = None,
    cache: Annotated[str | None, typer.Option(help="cache folder")] = None,
    offline: Annotated[bool, typer.Option(help="never contact a model hub")] = False,
    exclude: Exclude = None,
    exclude_by: ExcludeBy = None,
    no_limits: Annotated[bool, typer.Option("--no-limits", help=(
        "allow more work than the documented limits (resamples, samples, workers, pairs, bootstrap cells: "
        "docs/reliability.md)"))] = False,
    verbose: Verbose = False,
) -> None:
    """Evaluate from a config file and/or flags (flags override the file)."""
    from terazi.schemas.rerankers import parse_reranker

    if no_limits:
        from terazi.policy import NO_LIMITS

        os.environ[NO_LIMITS] = "1"
    raw: dict = read_config_file(config) if config else {}
    try:
        raw |= given(rerankers=[parse_reranker(r) for r in reranker or []] or None, conditions=condition,
                     depth=depth, rerank_depth=rerank_depth, seed=seed, cache_dir=cache, exclude=exclude,
                     exclude_by=exclude_by, offline=offline or None)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    if encoder:
        raw.setdefault("encoder", {})["model"] = encoder
    if samples is not None:
        raw.setdefault("corruption", {})["samples"] = samples
    if out:
        raw["out_dir"], raw["run_name"] = str(Path(out).parent), Path(out).name
    evaluate_and_print(with_datasets(raw, dataset, split), config)
