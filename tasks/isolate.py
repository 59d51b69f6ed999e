"""Stage 3b as a task: the isolated robustness setting (`robustness: both`) as pseudo-conditions
(terazi.retrieval.isolated)."""

from __future__ import annotations

from prefect import task

from terazi.retrieval.isolated import add_isolated
from terazi.tasks import transient

isolate_task = task(
    add_isolated,
    name="isolated-setting",
    retries=1,
    task_run_name="isolated {dataset.name}",
    retry_condition_fn=transient,
)
