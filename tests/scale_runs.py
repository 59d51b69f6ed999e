"""What the scale tests (tests/test_scale.py) run and compare: the tiny data cut into shards and chunks, two runs'
results compared bit for bit, the task runs a flow run left on the server, and the Dask worker plugin that kills a
worker mid-chunk (importable by the workers, which unpickle it by reference)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import polars as pl

from terazi.schemas import EvalConfig

SYSTEMS = ("first-stage", "bm25", "tiny-ce", "hybrid")


def scale_config(tmp_path: Path, dataset: Path, tiny_cross_encoder: str, name: str, **extra) -> EvalConfig:
    """Tiny data cut fine: 12 documents in shards of 5, query texts in shards of 4, chunks of one or more blocks."""
    return EvalConfig.model_validate(
        {
            "datasets": [{"path": str(dataset), "name": "tiny"}],
            "rerankers": [
                {"name": "bm25", "kind": "bm25"},
                {
                    "name": "tiny-ce",
                    "kind": "cross-encoder",
                    "model": tiny_cross_encoder,
                    "max_length": 64,
                    "batch_size": 1,
                },
                {"name": "hybrid", "kind": "rrf", "fuse": ["first-stage", "tiny-ce"]},
            ],
            "conditions": ["clean", "upper"],
            "depth": 10,
            "rerank_depth": 5,
            "bootstrap_resamples": 200,
            "robustness": "end-to-end",  # the pair counts below are those of the card's setting alone
            "scale": {"shard_size": 5, "query_shard_size": 4, "chunk_pairs": 8},
            "out_dir": str(tmp_path / name / "results"),
            "cache_dir": str(tmp_path / name / "cache"),
            "run_name": name,
            "offline": True,
            **extra,
        }
    )


def same_results(a: Path, b: Path) -> None:
    for system in SYSTEMS:
        x, y = (pl.read_parquet(r / "rankings" / "tiny" / f"{system}.parquet") for r in (a, b))
        assert x.equals(y), system
    assert (a / "leaderboard.csv").read_bytes() == (b / "leaderboard.csv").read_bytes()
    assert pl.read_parquet(a / "per_query.parquet").equals(pl.read_parquet(b / "per_query.parquet"))


def task_run_names(flow_run_id: str, settle_s: float = 60.0) -> list[str]:
    """The flow run's task run names, once the server has recorded them all (it records task runs from events,
    asynchronously: read until the list stops growing)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def read():
        async with get_client() as client:
            runs = await client.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])), limit=200
            )
            return [r.name for r in runs]

    names, deadline = asyncio.run(read()), time.monotonic() + settle_s
    while time.monotonic() < deadline:
        time.sleep(2)
        again = asyncio.run(read())
        if len(again) == len(names) and any(n.startswith("leaderboard") for n in again):
            return again
        names = again
    return names


def _plugin_base():
    from distributed import WorkerPlugin

    return WorkerPlugin


class DieOnceMidChunk(_plugin_base()):
    """Dask worker plugin: the first worker to score a cross-encoder block after the first one in its process
    dies on the spot (os._exit, as kill -9 would), once per test; every worker logs the pairs its model scores."""

    def __init__(self, marker: str, log: str):
        self.marker, self.log = marker, log

    def setup(self, worker=None) -> None:
        from terazi.rerank.backends.torch_cross import TorchCrossEncoder

        real, marker, log = TorchCrossEncoder.score, self.marker, self.log

        def score(scorer, pairs):
            scorer._calls = getattr(scorer, "_calls", 0) + 1
            if scorer._calls == 3:  # the first block is two calls (the metered warm-up pair, then the rest)
                try:
                    os.unlink(marker)
                except FileNotFoundError:
                    pass
                else:
                    os._exit(1)
            out = real(scorer, pairs)
            with open(log, "a") as f:
                f.write(f"{len(pairs)}\n")
            return out

        TorchCrossEncoder.score = score
