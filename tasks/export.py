"""Stage 5b as a task: the results folder as a runs folder of TREC files (terazi.results.export)."""

from __future__ import annotations

from prefect import task

from terazi.results.export import export_runs
from terazi.tasks import transient

export_task = task(
    export_runs, name="export-runs", retries=1, task_run_name="export-runs", retry_condition_fn=transient
)
