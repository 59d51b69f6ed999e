"""The Python API behind `import terazi`: each function runs what the command of the same name runs.

Everything is imported on first use, so `import terazi` stays cheap (no Prefect, polars or torch).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

    from terazi.analysis.comparison import Comparison
    from terazi.metrics.engine import Evaluation
    from terazi.present.card import Card
    from terazi.schemas import EvalConfig, RunManifest
    from terazi.schemas.leakage import LeakageManifest


def _setup() -> None:
    """Prefect's defaults (no telemetry, a patient start-up) unless the caller set them."""
    from terazi.base.logs import prefect_defaults

    prefect_defaults()


def evaluate(config: EvalConfig | Mapping[str, Any] | str | Path) -> tuple[RunManifest, pl.DataFrame]:
    """Run an evaluation (an EvalConfig, its fields as a dict, or a YAML/JSON/TOML config file) as the Prefect flow
    `terazi-evaluate`; returns the run's manifest and its leaderboard as a polars DataFrame."""
    _setup()

    from terazi.schemas.results_folder import ResultsFolder

    config_file = Path(config) if isinstance(config, (str, Path)) else None
    if config_file:
        from terazi.config.config_files import read_config_file

        config = read_config_file(config_file)
    config = checked(config, config_file)
    from terazi.flows.evaluate import evaluate as evaluate_flow
    from terazi.flows.runtime import CALLER

    token = CALLER.set("python")
    try:
        manifest = evaluate_flow(config)
    finally:
        CALLER.reset(token)
    return manifest, ResultsFolder(manifest.run_dir).board


def checked(
    config: EvalConfig | Mapping[str, Any], config_file: Path | None = None, announce: bool = True, ready=None
) -> EvalConfig:
    """An evaluation's config checked as far as it can be before Prefect starts, as every entry point checks it
    (`terazi.evaluate`, `terazi run`, `terazi demo`): validated; then `ready()` (the CLI: is the Prefect API there);
    its outputs apart from its inputs and the config file, before anything is written; then the preflight (datasets,
    models, folders: a bad one is one line)."""
    from terazi.config.preflight import preflight
    from terazi.results.run_folder import check_outputs
    from terazi.schemas import EvalConfig

    config = config if isinstance(config, EvalConfig) else EvalConfig.model_validate(config)
    if ready is not None:
        ready()
    check_outputs(config, [("config file", str(config_file))] if config_file else [])
    preflight(config, announce=announce)
    return config


def score(qrels, run, measures: list[str] | tuple[str, ...] = ("nDCG@10", "RR@10"), policies=None) -> Evaluation:
    """Score a run against judgments under terazi's metric contract (trec_eval-compatible by default).

    `qrels`: a TREC or BEIR qrels file, {query: {doc: grade}} or a polars frame (query_id, doc_id, grade);
    `run`: a TREC run file, {query: {doc: score}} or a polars frame (query_id, doc_id, score). Returns an
    `Evaluation`: `.aggregate` (measure → mean), `.per_query_dict(measure)`, `.contract()`, `.counts`."""
    from terazi.data.trec import read_qrels, read_run
    from terazi.metrics.contracts import Policies
    from terazi.metrics.engine import evaluate as evaluate_run

    policies = policies or Policies()
    if isinstance(qrels, (str, Path)):
        qrels = read_qrels(qrels)
    if isinstance(run, (str, Path)):  # the rank column is read only where a policy checks it, as `terazi score` does
        run = read_run(run, rank=policies.repeated_rank == "error")
    return evaluate_run(qrels, run, list(measures), policies)


def analyze(folder: str | Path, out: str | Path, **settings: Any) -> tuple[RunManifest, pl.DataFrame]:
    """Analyse a folder of TREC runs (qrels/, runs/, optional changed/ and datasets.yaml) into `out`, as
    `terazi analyze` does; `settings` are AnalyzeConfig fields (metrics, headline, conditions, seed, …)."""
    _setup()

    from terazi.flows.analyze import analyze as analyze_flow
    from terazi.schemas import AnalyzeConfig
    from terazi.schemas.results_folder import ResultsFolder

    out = Path(out)
    manifest = analyze_flow(AnalyzeConfig(folder=str(folder), out_dir=str(out.parent), run_name=out.name, **settings))
    return manifest, ResultsFolder(manifest.run_dir).board


def compare(
    before: str | Path, after: str | Path | None = None, systems: tuple[str, str] | None = None, **options: Any
) -> Comparison:
    """Two results folders (after − before) or two systems of one folder (`systems=(a, b)`: a − b), per dataset ×
    condition with paired intervals, randomization tests and verdicts; `options`: `measure` and any field of
    `terazi.schemas.Statistics` (seed, bootstrap_resamples, confidence, correction, correction_scope, verdict,
    equivalence_margin, randomization_resamples, holm), with a run's defaults."""
    from terazi.analysis import comparison as core
    from terazi.schemas import Statistics

    measure = options.pop("measure", None)
    statistics = Statistics(**options)
    if systems is not None:
        return core.compare_systems(Path(before), *systems, measure, statistics)
    if after is None:
        raise ValueError("compare needs two results folders, or one folder and systems=(a, b)")
    return core.compare_runs(Path(before), Path(after), measure, statistics)


def card(results: str | Path, system: str, labels: str | None = None, **options: Any) -> Card:
    """The evaluation section of a model card for `system` of a results folder, as `terazi card` writes it:
    `.markdown()`, `.model_index_yaml()`, `.eval_results_yaml()`, `.to_json()`; `options`: model_name, names, rivals."""
    from terazi.present.card import build_card

    return build_card(results, system, labels, **options)


def leakage(
    datasets: list[str | Mapping[str, Any]],
    train: list[str | Mapping[str, Any]],
    out: str | Path = "leakage",
    fields: tuple[str, ...] | None = None,
    cache_dir: str = ".terazi-cache",
    **options: Any,
) -> tuple[LeakageManifest, pl.DataFrame]:
    """Check benchmark `datasets` (BEIR folders or named datasets, paths or DatasetSpec fields) against training
    sources (`train`: paths or {path, fields, queries, split, name}; `fields` the default text fields) as the flow
    `terazi-leakage` does, into the folder `out`; `options`: LeakageOptions fields (ngram, fold_ascii,
    near_threshold, …). Returns the manifest and the counts per dataset as a polars DataFrame."""
    _setup()
    import polars as pl

    from terazi.flows.leakage import leakage as leakage_flow
    from terazi.leakage.checked import check_inputs
    from terazi.schemas.leakage import LeakageConfig, TrainSource

    config = LeakageConfig(
        datasets=[{"path": d} if isinstance(d, str) else dict(d) for d in datasets],
        train=[TrainSource.of(t, fields=fields) for t in train],
        options=options,
        out=str(out),
        cache_dir=cache_dir,
    )
    check_inputs(config)  # a bad dataset, source or output folder fails here, before Prefect starts
    manifest = leakage_flow(config)
    return manifest, pl.DataFrame([d.model_dump() for d in manifest.datasets])
