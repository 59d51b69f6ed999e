"""Stages 1-5 for runs made elsewhere, as a task: one dataset of a runs folder (terazi.results.imported)."""

from __future__ import annotations

from prefect import task

from terazi.results.imported import import_dataset
from terazi.tasks import transient

import_task = task(
    import_dataset, name="import-runs", retries=1, retry_condition_fn=transient, task_run_name="import-runs {runs.name}"
)
