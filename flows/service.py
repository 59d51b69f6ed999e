"""Flows for deployments: an ad-hoc run and a nightly run that reports what changed since last night.

Both dispatch to `terazi-evaluate` with the task runner the config names, as a subflow, so one
deployment form (the `EvalConfig`) serves threads, Dask and Ray alike.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from flows.evaluate import run_evaluation
from schemas import EvalConfig, RunManifest
from terazi.changes import compare_runs, previous_run


@flow(name="terazi-run", validate_parameters=True)
def run(config: EvalConfig) -> RunManifest:
    """One evaluation with the given configuration."""
    return run_evaluation(config)


@flow(name="terazi-nightly", validate_parameters=True)
def nightly(config: EvalConfig) -> str:
    """Tonight's evaluation, compared with the newest earlier run in the same results folder."""
    config = config.model_copy(update={"run_name": None})  # a new, time-stamped folder each night
    manifest = run_evaluation(config)
    current = Path(manifest.run_dir)
    before = previous_run(current.parent, current)
    if before is None:
        text = f"# terazi: first nightly run\n\nNo earlier run under {current.parent} to compare with.\n"
    else:
        text = compare_runs(before, current, config.headline, config.bootstrap_resamples, config.seed)
    (current / "changes.md").write_text(text)
    create_markdown_artifact(markdown=text, key="terazi-nightly-changes", description="what changed since the last run")
    return text
