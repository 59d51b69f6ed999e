"""Stage 5 as a task: per-query metrics of one system on one dataset, every condition (terazi.metrics.per_query)."""

from __future__ import annotations

from prefect import task

from terazi.metrics.per_query import score_system

score_task = task(score_system, name="score", task_run_name="score {dataset.name} {ranking.system}")
