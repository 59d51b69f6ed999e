"""Stage 3 as tasks: the first stage's plan, one task per encoding shard (on the model runner), the search, BM25 over
the whole corpus, and the frozen candidates linked into the results folder (terazi.retrieval)."""

from __future__ import annotations

from prefect import task

from terazi.retrieval.bm25 import bm25_first_stage
from terazi.retrieval.first_stage import encode_shard, search
from terazi.retrieval.frozen import publish_candidates
from terazi.retrieval.plan import plan_retrieval
from terazi.tasks import transient

retrieval_plan_task = task(
    plan_retrieval,
    name="first-stage-plan",
    retries=2,
    retry_delay_seconds=[2, 10],
    task_run_name="first-stage-plan {dataset.name}",
    retry_condition_fn=transient,
)
encode_shard_task = task(
    encode_shard,
    name="encode-shard",
    retries=2,
    retry_delay_seconds=[2, 10],
    tags=["terazi-model"],
    task_run_name="encode {plan.dataset} {part} {shard}",
    retry_condition_fn=transient,
)
search_task = task(
    search,
    name="first-stage-search",
    retries=2,
    retry_delay_seconds=[2, 10],
    task_run_name="first-stage-search {dataset.name}",
    retry_condition_fn=transient,
)
publish_candidates_task = task(
    publish_candidates,
    name="publish-candidates",
    retries=1,
    retry_condition_fn=transient,
    task_run_name="candidates {cs.dataset}",
)
bm25_retrieval_task = task(
    bm25_first_stage,
    name="first-stage-bm25",
    retries=1,
    retry_condition_fn=transient,
    task_run_name="first-stage-bm25 {dataset.name}",
)
