"""`terazi demo` and `terazi run`: a whole evaluation, then the leaderboard on the terminal."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from terazi.base.paths import Place
from terazi.cli.common import err, print_leaderboard
from terazi.cli.options import ConfigFile, Datasets, Leakage, LeakageBy, Results, Split, Verbose, sets
from terazi.cli.places import dataset_path, declares
from terazi.config.config_files import demo_config, given, laid_over, read_config_file, results_folder, with_datasets
from terazi.schemas import CorruptionSpec, EncoderSpec, EvalConfig
from terazi.schemas.rerankers import SPELLINGS, parse_reranker


def evaluate_and_print(raw: dict, config_file: Path | None = None) -> None:
    """Check everything that can be checked before Prefect starts (`terazi.api.checked`, as the Python API does), run
    the flow, print."""
    from terazi.api import checked
    from terazi.base import shutdown
    from terazi.cli.prefect_api import check_api, run_flow
    from terazi.present.terminal import work_lines

    config = checked(raw, config_file, announce=False, ready=check_api)
    with shutdown.graceful():
        manifest, seconds = run_flow("terazi.flows.evaluate:evaluate", config)
    print_leaderboard(Path(manifest.run_dir))
    for line in work_lines(manifest):
        err.print(line)
    err.print(f"results: {manifest.run_dir}  ({seconds:.1f}s)")


@declares(writes=(Place("out", "results folder"), Place("cache", "cache folder")))
def demo(
    out: Annotated[str | None, sets(EvalConfig, "out_dir")] = None,
    cache: Annotated[str | None, sets(EvalConfig, "cache_dir")] = None,
    run_name: Annotated[str, typer.Option(help="sub-folder of the results folder")] = "demo",
    verbose: Verbose = False,
) -> None:
    """Full evaluation on the bundled Turkish demo dataset, offline; prints the leaderboard."""
    evaluate_and_print(demo_config(**given(EvalConfig, locals(), out="out_dir", cache="cache_dir")))


RERANKERS = f"{SPELLINGS} (repeatable; default: bm25-tr and hybrid-rrf, as in every entry point)"
UNLIMITED = (
    "more work than the documented limits allow (docs/reliability.md): resamples, samples, workers, pairs, cells"
)


@declares(
    reads=(
        Place("config", "config file"),
        Place("dataset", "dataset folder", dataset_path),
        Place("leakage", "leakage folder"),
    ),
    writes=(Place("out", "results folder"), Place("cache", "cache folder")),
)
def run(
    config: ConfigFile = None,
    dataset: Datasets = None,
    rerankers: Annotated[
        list[dict] | None, typer.Option("--reranker", "-r", metavar="SPEC", parser=parse_reranker, help=RERANKERS)
    ] = None,
    encoder: Annotated[str | None, sets(EncoderSpec, "model")] = None,
    conditions: Annotated[list[str] | None, sets(EvalConfig, "conditions", "--condition")] = None,
    split: Split = None,
    depth: Annotated[int | None, sets(EvalConfig, "depth")] = None,
    rerank_depth: Annotated[int | None, sets(EvalConfig, "rerank_depth")] = None,
    samples: Annotated[int | None, sets(CorruptionSpec, "samples")] = None,
    seed: Annotated[int | None, sets(EvalConfig, "seed")] = None,
    out: Results = None,
    cache: Annotated[str | None, sets(EvalConfig, "cache_dir")] = None,
    offline: Annotated[bool | None, sets(EvalConfig, "offline")] = None,
    leakage: Leakage = None,
    leakage_by: LeakageBy = None,
    no_limits: Annotated[bool, typer.Option("--no-limits", help=UNLIMITED)] = False,
    verbose: Verbose = False,
) -> None:
    """Evaluate from a config file and/or flags (flags override the file)."""
    fields = given(EvalConfig, locals(), encoder="encoder.model", samples="corruption.samples", cache="cache_dir")
    if no_limits:
        from terazi.config.policy import NO_LIMITS

        os.environ[NO_LIMITS] = "1"
    raw = laid_over(read_config_file(config) if config else {}, fields | results_folder(out))
    evaluate_and_print(with_datasets(raw, dataset, split), config)
