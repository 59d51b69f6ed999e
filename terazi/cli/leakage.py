"""`terazi leakage`: was the benchmark in the training data? Shared n-grams both ways and repeated queries, as the
Prefect flow `terazi-leakage`; then the shares per dataset on the terminal."""

from __future__ import annotations

from typing import Annotated

import typer

from terazi.base.paths import Place
from terazi.cli.common import console, err
from terazi.cli.options import ConfigFile, Datasets, Force, Split, Verbose, about, reads, sets
from terazi.cli.places import dataset_path, declares, training_path
from terazi.config.config_files import given, read_config_file, with_datasets
from terazi.schemas.leakage import LeakageConfig, LeakageOptions, TrainSource, read_near_threshold


def _named(kwargs: dict) -> bool:
    """Whether a dataset of the call is a named one (copied into the cache folder): only then is the cache written."""
    return any(dataset_path(d) is None for d in kwargs.get("dataset") or [])


def checked_near_threshold(text: str) -> str:
    """`--near-threshold` as typed, once it reads as a ratio or none (`read_near_threshold` refuses the rest)."""
    read_near_threshold(text)
    return text


def leakage_names(kwargs: dict) -> list[str]:
    """The files of the output folder's top (for the overwrite rule; each dataset's files are in its own sub-folder)."""
    from terazi.schemas.layout import LeakageLayout

    layout = LeakageLayout(kwargs["out"])
    return [p.name for p in (layout.summary_json, layout.report_md, layout.report_html, layout.train_hits)]


@declares(
    reads=(
        Place("config", "config file"),
        Place("dataset", "dataset folder", dataset_path),
        Place("train", "training source", training_path),
    ),
    writes=(
        Place("out", "leakage output folder", files=leakage_names),
        Place("cache", "cache folder", when=_named),
    ),
)
def leakage(
    train: Annotated[
        list[str] | None, typer.Option("--train", "-t", help=about(TrainSource, "path") + " (repeatable)")
    ] = None,
    dataset: Datasets = None,
    config: ConfigFile = None,
    field: Annotated[list[str] | None, sets(TrainSource, "fields", "--field", "-f")] = None,
    query_field: Annotated[list[str] | None, sets(TrainSource, "queries")] = None,
    split: Split = None,
    ngram: Annotated[int | None, sets(LeakageOptions, "ngram")] = None,
    fold_ascii: Annotated[bool | None, sets(LeakageOptions, "fold_ascii", "--fold-ascii/--no-fold-ascii")] = None,
    near_threshold: Annotated[
        str | None, sets(LeakageOptions, "near_threshold", metavar="RATIO", **reads(checked_near_threshold))
    ] = None,
    out: Annotated[str | None, sets(LeakageConfig, "out", "--out", "-o")] = None,
    cache: Annotated[str | None, sets(LeakageConfig, "cache_dir")] = None,
    force: Force = False,
    verbose: Verbose = False,
) -> None:
    """Check benchmark datasets against training data: the training records to drop, the contaminated queries and
    passages (for scores without them: `terazi run --leakage DIR`), repeated queries, examples."""
    options = given(LeakageOptions, locals())
    if near_threshold is not None:
        options["near_threshold"] = read_near_threshold(near_threshold)
    raw = with_datasets(read_config_file(config) if config else {}, dataset, split)
    checked = LeakageConfig.laid_over(
        raw, train, field, query_field, options, **given(LeakageConfig, {"out": out, "cache_dir": cache})
    )
    from terazi.cli.prefect_api import check_api, run_flow
    from terazi.leakage.checked import check_inputs
    from terazi.present.leakage import read_summary, shares_table

    # a bad dataset, source or output folder fails here, in one line, before Prefect
    check_inputs(checked, [("config file", str(config))] if config else [])
    check_api()
    manifest, seconds = run_flow("terazi.flows.leakage:leakage", checked)
    table = shares_table(read_summary(manifest.out))
    console.print(table.rich("terazi leakage", "\n".join(table.notes), no_wrap=(0,), caption_justify="left"))
    err.print(f"results: {manifest.out}  ({seconds:.1f}s)")
