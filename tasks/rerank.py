"""Stage 4 as tasks: each row's reranking plan, its chunks (on the model runner), its ranking; the first stage's
own row; fusions (terazi.rerank.stage)."""

from __future__ import annotations

from prefect import task

from terazi.rerank.shared_pairs import shared_pairs
from terazi.rerank.stage import finish_rerank, first_stage_ranking, fuse_systems, plan_rerank, score_chunk
from terazi.tasks import transient

first_stage_task = task(first_stage_ranking, name="first-stage-row", task_run_name="no-rerank {dataset.name}")
rerank_plan_task = task(
    plan_rerank,
    name="rerank-plan",
    retries=2,
    retry_delay_seconds=[2, 10],
    task_run_name="rerank-plan {dataset.name} {spec.name}",
    retry_condition_fn=transient,
)
rerank_chunk_task = task(
    score_chunk,
    name="rerank-chunk",
    retries=2,
    retry_delay_seconds=[2, 10],
    tags=["terazi-model"],
    task_run_name="rerank {plan.dataset} {plan.system} chunk {chunk}",
    retry_condition_fn=transient,
)
rerank_finish_task = task(
    finish_rerank,
    name="rerank-ranking",
    retries=1,
    retry_delay_seconds=2,
    task_run_name="ranking {plan.dataset} {plan.system}",
    retry_condition_fn=transient,
)
fuse_task = task(fuse_systems, name="fuse", task_run_name="fuse {dataset.name} {spec.name}")
shared_pairs_task = task(shared_pairs, name="shared-pairs", task_run_name="shared pairs {dataset.name}")
