"""`terazi leakage`: was the benchmark in the training data? Shared n-grams both ways and repeated queries, as the
Prefect flow `terazi-leakage`; then the shares per dataset on the terminal."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import typer

from terazi.cli.common import VERBOSE, console, err, errors_as_lines, fail
from terazi.cli.places import Place, dataset_path, declares, training_path
from terazi.configs import read_config_file

EXACT_ONLY = ("none", "off", "exact")


def near_threshold_value(text: str) -> float | None:
    """`--near-threshold 85`, or none/off/exact for exact repeats only."""
    if text.strip().lower() in EXACT_ONLY:
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
    train: list[str] = typer.Option([], "--train", "-t", help="training source (repeatable): a .jsonl/.ndjson/"
                                    ".parquet/.txt file (.gz too), a folder of them, a BEIR folder, a `datasets` "
                                    "save_to_disk folder, or hf:ORG/NAME (from the local Hugging Face cache)"),
    dataset: list[str] = typer.Option([], "--dataset", "-d", help="benchmark dataset (repeatable): BEIR folder, or "
                                      "hf:ORG/NAME (with @REVISION, #SUBSET), hf:/local/folder, mteb:TASK, "
                                      "ir_datasets:ID"),
    config: Optional[Path] = typer.Option(None, "--config", "-c", dir_okay=False,
                                          help="YAML, JSON or TOML file with a LeakageConfig (flags override it)"),
    field: list[str] = typer.Option([], "--field", "-f", help="text field of the training records (repeatable; "
                                    "default: text), e.g. --field text --field query"),
    query_field: list[str] = typer.Option([], "--query-field", help="which of the fields are queries, compared for "
                                          "repeats (repeatable; default: query, question, queries, questions, "
                                          "anchor)"),
    split: Optional[str] = typer.Option(None, help="qrels split of the datasets (default test): which queries are "
                                                   "judged, for the relevant-passage share"),
    ngram: Optional[int] = typer.Option(None, help="words in a shared sequence (default 8, the Kalbur card's rule; "
                                                   "lm-evaluation-harness uses 13)"),
    fold_ascii: Optional[bool] = typer.Option(None, "--fold-ascii/--no-fold-ascii",
                                              help="match copies typed without Turkish letters (default: on)"),
    near_threshold: Optional[str] = typer.Option(None, "--near-threshold", metavar="RATIO",
                                                 help="rapidfuzz ratio of a near repeat (default 90); none: exact "
                                                      "repeats only"),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="output folder (default: leakage); never a "
                                                                "dataset's folder or inside one"),
    cache: Optional[str] = typer.Option(None, help="cache folder (named datasets are copied into it)"),
    verbose: bool = VERBOSE,
) -> None:
    """Check benchmark datasets against training data: the training records to drop, the contaminated queries and
    passages (for scores without them: `terazi run --exclude DIR`), repeated queries, examples."""
    with errors_as_lines():
        from terazi.schemas.leakage import LeakageConfig, TrainSource

        raw: dict = read_config_file(config) if config else {}
        if dataset:
            raw["datasets"] = [{"path": d, **({"split": split} if split else {})} for d in dataset]
        elif split:
            for d in raw.get("datasets", []):
                d["split"] = split
        if train:
            fields = {"fields": tuple(field) or None, "queries": tuple(query_field) or None}
            raw["train"] = [TrainSource.of(t, **fields).model_dump() for t in train]
        options = raw.setdefault("options", {})
        for key, value in (("ngram", ngram), ("fold_ascii", fold_ascii)):
            if value is not None:
                options[key] = value
        if near_threshold is not None:
            options["near_threshold"] = near_threshold_value(near_threshold)
        for key, value in (("out", out), ("cache_dir", cache)):
            if value is not None:
                raw[key] = value
        if not raw.get("datasets"):
            fail("no dataset: give --dataset PATH or a --config file with datasets")
        if not raw.get("train"):
            fail("no training source: give --train PATH or a --config file with train")
        checked = LeakageConfig.model_validate(raw)
        from terazi.contamination.folder import check_inputs

        # a bad dataset, source or output folder fails here, in one line, before Prefect
        check_inputs(checked, [("config file", str(config))] if config else [])
        from terazi.cli.prefect_api import check_api, no_heartbeats, quiet_console

        check_api()
        err.print("[dim]starting Prefect (a temporary local server unless PREFECT_API_URL is set)…[/]")
        quiet_console()
        from terazi.flows.leakage import leakage as leakage_flow

        t0 = time.perf_counter()
        with no_heartbeats():
            manifest = leakage_flow(checked)
    print_summary(Path(manifest.out))
    err.print(f"results: {manifest.out}  ({time.perf_counter() - t0:.1f}s)")


def print_summary(out: Path) -> None:
    """The shares per dataset, as the flow's artifact shows them."""
    from terazi.present.leakage import shares_table
    from terazi.schemas.layout import LeakageLayout

    table = shares_table(json.loads(LeakageLayout(out).summary_json.read_text(encoding="utf-8")))
    table.align = ["left"] + ["right"] * (len(table.columns) - 1)
    console.print(table.rich("terazi leakage", "\n".join(table.notes), no_wrap=(0,), caption_justify="left"))
