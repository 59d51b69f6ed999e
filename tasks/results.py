"""Stage 6 as a task: the statistics and every file that shows them (terazi.results.aggregate)."""

from __future__ import annotations

from prefect import task

from terazi.results.aggregate import build_leaderboard
from terazi.tasks import transient

aggregate_task = task(build_leaderboard, name="leaderboard", retries=1, task_run_name="leaderboard",
                      retry_condition_fn=transient)
