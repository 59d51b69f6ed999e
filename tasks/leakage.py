"""The leakage check as tasks: its inputs checked (datasets loaded, sources opened, the output folder), then the check
and its output folder (terazi.leakage.checked)."""

from __future__ import annotations

from prefect import task

from terazi.leakage.checked import check_folder, check_inputs
from terazi.tasks import transient

leakage_inputs_task = task(
    check_inputs, name="leakage-inputs", retries=1, retry_condition_fn=transient, task_run_name="leakage-inputs"
)
leakage_task = task(check_folder, name="leakage", retries=1, retry_condition_fn=transient, task_run_name="leakage")
