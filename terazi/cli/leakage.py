"""`terazi leakage`: was the benchmark in the training data? Shared n-grams both ways and repeated queries, as the
Prefect flow `terazi-leakage`; then the shares per dataset on the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from terazi.cli.common import Datasets, Verbose, console, err, fail, given, with_datasets
from terazi.cli.places import dataset_path, declares, training_path
from terazi.configs import read_config_file
from terazi.paths import Place


def near_threshold_value(text: str) -> float | None:
    """`--near-threshold 85`, or none/off/exact for exact repeats only."""
    if text.strip().lower() in ("none", "off", "exact"):
        return None
    try:
        return float(text)
    except ValueError:
        fail(f"--near-threshold {text!r}: expected a rapidfuzz ratio (50 to 100) or none")


def _named(kwargs: dict) -> bool:
    """Whether a dataset of the call is a named one (copied into the cache folder): only then is the cache written."""
    return any(dataset_path(d) is None for d in kwargs.get("dataset") or [])


@declares(reads=(Place("config", "config file"), Place("dataset", "dataset folder", dataset_path),
                 Place("train", "training source", training_path)),
          writes=(Place("out", "leakage output folder"), Place("cache", "cache folder", when=_named)))
def leakage(
    train: Annotated[list[str] | None, typer.Option("--train", "-t", help=(
        "training source (repeatable): a .jsonl/.ndjson/.parquet/.txt file (.gz too), a folder of them, a BEIR "
        "folder, a `datasets` save_to_disk folder, or hf:ORG/NAME (from the local Hugging Face cache)"))] = None,
    dataset: Datasets = None,
    config: Annotated[Path | None, typer.Option("--config", "-c", dir_okay=False, help=(
        "YAML, JSON or TOML file with a LeakageConfig (flags override it)"))] = None,
    field: Annotated[list[str] | None, typer.Option("--field", "-f", help=(
        "text field of the training records (repeatable; default: text), e.g. --field text --field query"))] = None,
    query_field: Annotated[list[str] | None, typer.Option("--query-field", help=(
        "which of the fields are queries, compared for repeats (repeatable; default: query, question, queries, "
        "questions, anchor)"))] = None,
    split: Annotated[str | None, typer.Option(help=(
        "qrels split of the datasets (default test): which queries are judged, for the relevant-passage "
        "share"))] = None,
    ngram: Annotated[int | None, typer.Option(help=(
        "words in a shared sequence (default 8, the Kalbur card's rule; lm-evaluation-harness uses 13)"))] = None,
    fold_ascii: Annotated[bool | None, typer.Option("--fold-ascii/--no-fold-ascii", help=(
        "match copies typed without Turkish letters (default: on)"))] = None,
    near_threshold: Annotated[str | None, typer.Option("--near-threshold", metavar="RATIO", help=(
        "rapidfuzz ratio of a near repeat (default 90); none: exact repeats only"))] = None,
    out: Annotated[str | None, typer.Option("--out", "-o", help=(
        "output folder (default: leakage); never a dataset's folder or inside one"))] = None,
    cache: Annotated[str | None, typer.Option(help="cache folder (named datasets are copied into it)")] = None,
    verbose: Verbose = False,
) -> None:
    """Check benchmark datasets against training data: the training records to drop, the contaminated queries and
    passages (for scores without them: `terazi run --exclude DIR`), repeated queries, examples."""
    from terazi.schemas.leakage import LeakageConfig, TrainSource

    raw: dict = read_config_file(config) if config else {}
    if train:
        raw["train"] = [TrainSource.of(t, fields=tuple(field or ()) or None,
                                       queries=tuple(query_field or ()) or None).model_dump() for t in train]
    options = given(ngram=ngram, fold_ascii=fold_ascii)
    if near_threshold is not None:
        options["near_threshold"] = near_threshold_value(near_threshold)
    if options:
        raw["options"] = {**(raw.get("options") or {}), **options}
    raw |= given(out=out, cache_dir=cache)
    if not with_datasets(raw, dataset, split).get("train"):
        fail("no training source: give --train PATH or a --config file with train")
    checked = LeakageConfig.model_validate(raw)
    from terazi.cli.prefect_api import check_api, run_flow
    from terazi.contamination.folder import check_inputs

    # a bad dataset, source or output folder fails here, in one line, before Prefect
    check_inputs(checked, [("config file", str(config))] if config else [])
    check_api()
    manifest, seconds = run_flow("terazi.flows.leakage:leakage", checked)
    from terazi.present.leakage import read_summary, shares_table

    table = shares_table(read_summary(manifest.out))
    console.print(table.rich("terazi leakage", "\n".join(table.notes), no_wrap=(0,), caption_justify="left"))
    err.print(f"results: {manifest.out}  ({seconds:.1f}s)")
