"""The leakage flow (`terazi-leakage`): benchmark datasets × training sources → an output folder (summary.json, id
lists to drop, report.md, report.html; terazi.leakage), published as artifacts: the shares per dataset and the
report."""

from __future__ import annotations

from prefect import flow

from terazi.flows.steps import PREFECT, Steps
from terazi.present.leakage import leakage_artifacts
from terazi.schemas.leakage import LeakageConfig, LeakageManifest
from terazi.tasks.leakage import leakage_inputs_task, leakage_task


@flow(name="terazi-leakage", validate_parameters=True)
def leakage(config: LeakageConfig) -> LeakageManifest:
    """Was the benchmark in the training data? Shared n-grams both ways and repeated queries."""
    return leakage_check(config, PREFECT)


def leakage_check(config: LeakageConfig, steps: Steps) -> LeakageManifest:
    """The check inside the calling flow, each step through `steps`; its artifacts posted."""
    datasets = steps.run(leakage_inputs_task, config)
    manifest = steps.run(leakage_task, config, datasets)
    steps.post(leakage_artifacts(manifest.out), "leakage")
    return manifest
