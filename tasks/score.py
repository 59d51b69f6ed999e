"""Stage 5 as tasks: per-query metrics of one system on one dataset, every condition (terazi.metrics.per_query); the
depth sweep: the first stage's ceiling at each depth (terazi.metrics.ceiling) and each reranker's headline
(terazi.results.sweep)."""

from __future__ import annotations

from prefect import task

from terazi.metrics.ceiling import ceiling_values
from terazi.metrics.per_query import score_system
from terazi.results.sweep import sweep_row

score_task = task(score_system, name="score", task_run_name="score {dataset.name} {ranking.system}")
ceiling_task = task(ceiling_values, name="ceiling", task_run_name="ceiling {dataset.name}")
sweep_task = task(sweep_row, name="depth-sweep", task_run_name="depths {dataset.name} {ranking.system}")
