"""Stage 0 as a task: every check that can run before a heavy stage (terazi.config.preflight)."""

from __future__ import annotations

from prefect import task

from terazi.config.preflight import preflight
from terazi.tasks import transient

preflight_task = task(
    preflight,
    name="preflight",
    retries=2,
    retry_delay_seconds=[1, 5],
    retry_condition_fn=transient,
    task_run_name="preflight",
)
