"""Stage 2 as a task: the query variants of one dataset under one condition (terazi.corrupt.variants)."""

from __future__ import annotations

from prefect import task

from terazi.corrupt.variants import corrupt_queries
from terazi.tasks import transient

corrupt_queries_task = task(
    corrupt_queries,
    name="corrupt-queries",
    retries=1,
    task_run_name="corrupt {dataset.name} {condition}",
    retry_condition_fn=transient,
)
