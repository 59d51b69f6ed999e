"""How big a run is cut and how big it may be: `ScaleSpec` cuts the heavy stages into tasks (the config's `scale:`),
`Limits` bounds the work one run may ask for (checked by the preflight; `terazi serve --max-…` sets the form's).
"""

from __future__ import annotations

from pydantic import Field

from terazi.schemas.fields import StrictModel


class ScaleSpec(StrictModel):
    """How the heavy stages are cut into tasks (so W workers run W at once), and where workers share scores."""

    shard_size: int = Field(
        65536,
        ge=1,
        description="documents per corpus-encoding task (a contiguous block); "
        "multiples of 2048 encode the same blocks as one task would",
    )
    query_shard_size: int = Field(65536, ge=1, description="distinct query texts per query-encoding task")
    chunk_pairs: int = Field(
        50_000,
        ge=1,
        description="pairs per reranking task, rounded up to whole scoring blocks "
        "(8 batches); the chunking never changes a score",
    )
    worker_resources: dict[str, float] = Field(
        default_factory=dict,
        description="resources every model task needs on "
        "a Dask or Ray worker, e.g. {GPU: 1}: Dask workers started with "
        "`--resources GPU=1`, Ray nodes with GPUs",
    )
    score_store: str | None = Field(
        None,
        description="score store shared by workers on several machines: a folder or "
        "an fsspec URL (e.g. s3://bucket/terazi-scores); the local cache "
        "stays the fast path (a served deployment accepts only its "
        "server's)",
    )


class Limits(StrictModel):
    """The most work one run may ask for (docs/reliability.md, "Bounds"), checked before any heavy stage starts: a
    config, or anyone at the deployment form, cannot start a run that fills the memory or never ends. `terazi run
    --no-limits` lifts them for a run of one's own; `terazi serve --max-…` sets them for the form's runs."""

    resamples: int = Field(100_000, ge=1, description="most bootstrap_resamples (and randomization_resamples)")
    samples: int = Field(100, ge=1, description="most corruption.samples (samples per query of a stochastic condition)")
    workers: int = Field(64, ge=1, description="most task_runner_workers")
    depths: int = Field(
        100, ge=1, description="most rerank_depths (each depth ranks every reranker's candidates again)"
    )
    pairs: int = Field(
        100_000_000,
        ge=1,
        description="most first-stage pairs: query variants (judged queries × "
        "samples of every condition) × depth × first stages, over all "
        "datasets",
    )
    cells: int = Field(
        10_000_000_000,
        ge=1,
        description="most bootstrap cells: bootstrap_resamples × judged queries, over all datasets",
    )
