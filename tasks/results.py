"""Stage 6 as tasks: the statistics and every file that shows them (terazi.results.aggregate); with several first
stages, whether the rerankers' order holds across them (terazi.results.protocol_tables)."""

from __future__ import annotations

from prefect import task

from terazi.results.aggregate import build_leaderboard
from terazi.results.protocol_tables import protocol_table
from terazi.tasks import transient

aggregate_task = task(
    build_leaderboard, name="leaderboard", retries=1, task_run_name="leaderboard", retry_condition_fn=transient
)
protocol_task = task(protocol_table, name="protocol", task_run_name="protocol")
