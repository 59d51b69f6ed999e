"""The leakage flow (`terazi-leakage`): benchmark datasets × training sources → an output folder (summary.json, id
lists to drop, report.md, report.html; terazi.leakage), published as artifacts: the shares per dataset and the
report."""

from __future__ import annotations

from prefect import flow

from terazi.flows.lifecycle import post
from terazi.present.leakage import leakage_artifacts
from terazi.schemas.leakage import LeakageConfig, LeakageManifest
from terazi.tasks.leakage import leakage_inputs_task, leakage_task


@flow(name="terazi-leakage", validate_parameters=True)
def leakage(config: LeakageConfig) -> LeakageManifest:
    """Was the benchmark in the training data? Shared n-grams both ways and repeated queries."""
    datasets = leakage_inputs_task(config)
    manifest = leakage_task(config, datasets)
    post(leakage_artifacts(manifest.out), "leakage")
    return manifest
