"""The whole flow on synthetic corpora of 20k and 100k passages (500k with --large): the pipeline's own cost.

    .venv/bin/python benchmarks/bench_scale.py [--sizes 20000 100000] [--large] [--queries 1000]

Tiny random models (a 2-layer bi-encoder with 64-dimensional embeddings for the first stage, a 2-layer
cross-encoder reranking the top 30), so that the model cost is small and terazi's own cost shows. Each run
is a fresh process running the evaluation flow with a cold cache against one Prefect server; printed per
run: wall time of each stage (from the Prefect task runs: encoding shards, first-stage search, reranking
plans, chunks and rankings, metrics and leaderboard), peak RSS of the flow process, cache size. Then the
same 20k run with a local Dask cluster of one worker and of two: the speed-up of two workers.

Shards of 16,384 documents and chunks of 10,000 pairs, so that the peak memory of the flow process is
bounded by a shard, not the corpus (its growth from the smallest to the largest corpus is compared with
the size of the embeddings themselves). The Dask runs cut finer (shards of 4,096, chunks of 5,000) so that
two workers have balanced work; a Dask worker runs its models on one thread.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

DIM = 64
STAGES = {  # task function → stage (a task run's key is the function's name and a hash)
    "preflight": "preflight",
    "plan_retrieval": "first-stage plan",
    "encode_shard": "encode (shards)",
    "search": "search",
    "plan_rerank": "rerank plan",
    "score_chunk": "rerank (chunks)",
    "finish_rerank": "rankings",
    "score_system": "metrics",
    "build_leaderboard": "leaderboard",
}


def synthetic(folder: Path, n_docs: int, n_queries: int, seed: int = 0) -> Path:
    """A BEIR folder of Turkish-looking passages (40 words from a 20k-word vocabulary); each query is six words of
    one passage plus two others, and judges that passage relevant."""
    from terazi.data.beir import write_beir

    rng = random.Random(seed)
    syll = [a + b for a in "bcçdfgğhklmnprsştvyz" for b in "aeıioöuü"]
    vocab = list({"".join(rng.choice(syll) for _ in range(rng.randint(2, 4))) for _ in range(20_000)})
    docs = [{"_id": f"d{i}", "text": " ".join(rng.choices(vocab, k=40))} for i in range(n_docs)]
    targets = rng.sample(range(n_docs), n_queries)
    queries = [
        {"_id": f"q{j}", "text": " ".join(rng.sample(docs[t]["text"].split(), 6) + rng.choices(vocab, k=2))}
        for j, t in enumerate(targets)
    ]
    return write_beir(folder, docs, queries, [(f"q{j}", f"d{t}", 1) for j, t in enumerate(targets)])


def config(data: Path, work: Path, encoder: str, ce: str, **extra) -> dict:
    return {
        "datasets": [{"path": str(data), "name": data.name}],
        "encoder": {"model": encoder, "batch_size": 128},
        "rerankers": [{"name": "tiny-ce", "kind": "cross-encoder", "model": ce, "max_length": 64, "batch_size": 64}],
        "conditions": ["clean", "upper"],
        "depth": 100,
        "rerank_depth": 30,
        "bootstrap_resamples": 200,
        "scale": {"shard_size": 16_384, "query_shard_size": 16_384, "chunk_pairs": 10_000},
        "out_dir": str(work / "results"),
        "cache_dir": str(work / "cache"),
        "run_name": "run",
        "offline": True,
        **extra,
    }


def stage_times(flow_run_id: str) -> dict[str, float]:
    """Wall time of each stage: first start to last end of its task runs."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def read():
        async with get_client() as client:
            return await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))

    for _ in range(30):  # the server records the last task runs' ends a moment after the flow returns
        runs = asyncio.run(read())
        if all(r.end_time for r in runs):
            break
        time.sleep(1)
    spans: dict[str, list] = {}
    for r in runs:
        stage = STAGES.get(r.task_key.rsplit("-", 1)[0])
        if stage and r.start_time and r.end_time:
            spans.setdefault(stage, []).append((r.start_time, r.end_time))
    return {s: (max(e for _, e in v) - min(b for b, _ in v)).total_seconds() for s, v in spans.items()}


def run_one(raw: dict) -> dict:
    """In a fresh process: the flow, its peak RSS, its stage times."""
    from benchmarks.tiny import peak_rss
    from terazi.flows.evaluate import evaluate as run_evaluation
    from terazi.schemas import EvalConfig

    t = time.perf_counter()
    manifest = run_evaluation(EvalConfig.model_validate(raw))
    wall = time.perf_counter() - t
    cache = Path(raw["cache_dir"])

    def size(p):
        return sum(f.stat().st_size for f in [p, *p.rglob("*")] if f.is_file()) if p.exists() else 0

    ce = next(r for r in manifest.reranks if r.system == "tiny-ce")
    return {
        "wall": wall,
        "peak": peak_rss(),
        "stages": stage_times(manifest.flow_run_id),
        "pairs": ce.pairs_unique,
        "shards": manifest.candidates[0].shards,
        "cache": size(cache),
        "scores": size(cache / "scores.sqlite") + size(cache / "scores.sqlite-wal"),
        "embeddings": size(cache / "embeddings"),
        "candidates": size(cache / "candidates"),
    }


def spawn(raw: dict, env: dict) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--run", json.dumps(raw)], capture_output=True, text=True, env=env, check=False
    )
    if out.returncode:
        raise SystemExit(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    ap.add_argument("--large", action="store_true", help="add a 500k-passage corpus")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--run", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run:
        print(json.dumps(run_one(json.loads(args.run))))
        return
    from benchmarks.record import record
    from benchmarks.tiny import bi_encoder, cross_encoder

    tmp = Path(tempfile.mkdtemp(prefix="terazi-bench-scale-"))
    env = {
        **os.environ,
        "PREFECT_HOME": str(tmp / "prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }
    os.environ.update(env)
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    server.start(timeout=180)
    env["PREFECT_API_URL"] = os.environ["PREFECT_API_URL"] = server.api_url
    encoder, ce = bi_encoder(tmp / "bi", hidden=DIM), cross_encoder(tmp / "ce")
    sizes = args.sizes + ([500_000] if args.large else [])
    rows = {}
    try:
        for n in sizes:
            data = synthetic(tmp / f"corpus-{n // 1000}k", n, args.queries)
            rows[f"{n // 1000}k threads"] = spawn(config(data, tmp / f"t{n}", encoder, ce), env)
            print(f"{n:,} passages: {rows[f'{n // 1000}k threads']['wall']:.0f}s", flush=True)
        if not args.no_dask:
            n = sizes[0]
            data = tmp / f"corpus-{n // 1000}k"
            for workers in (1, 2):
                rows[f"{n // 1000}k dask×{workers}"] = spawn(
                    config(
                        data,
                        tmp / f"d{n}-{workers}",
                        encoder,
                        ce,
                        task_runner="dask",
                        task_runner_workers=workers,
                        scale={"shard_size": 4096, "query_shard_size": 4096, "chunk_pairs": 5000},
                    ),
                    env,
                )
    finally:
        server.stop()
    stages = list(dict.fromkeys(s for r in rows.values() for s in r["stages"]))
    print(
        f"\n{'run':<14} {'wall s':>7} " + " ".join(f"{s[:14]:>14}" for s in stages) + f" {'peak RSS MB':>12} "
        f"{'cache MB':>9} {'scores MB':>10}"
    )
    for name, r in rows.items():
        print(
            f"{name:<14} {r['wall']:>7.1f} "
            + " ".join(f"{r['stages'].get(s, 0):>14.1f}" for s in stages)
            + f" {r['peak'] / 2**20:>12.0f} {r['cache'] / 2**20:>9.1f} {r['scores'] / 2**20:>10.1f}"
        )
    small, big = f"{sizes[0] // 1000}k threads", f"{sizes[-1] // 1000}k threads"
    growth = rows[big]["peak"] - rows[small]["peak"]
    emb = (sizes[-1] - sizes[0]) * DIM * 4
    print(
        f"\npeak RSS growth {sizes[0]:,} → {sizes[-1]:,} passages: {growth / 2**20:.0f} MB; embeddings of the "
        f"{sizes[-1] - sizes[0]:,} added passages: {emb / 2**20:.0f} MB (of all {sizes[-1]:,}: "
        f"{sizes[-1] * DIM * 4 / 2**20:.0f} MB)"
    )
    figures = {"units": "seconds, bytes", "runs": rows, "peak_growth": growth, "added_embeddings": emb}
    if not args.no_dask:
        heavy = ("encode (shards)", "rerank (chunks)")
        one, two = (rows[f"{sizes[0] // 1000}k dask×{w}"] for w in (1, 2))
        t1, t2 = (sum(r["stages"].get(s, 0) for s in heavy) for r in (one, two))
        print(
            f"Dask, {sizes[0]:,} passages: encoding + reranking {t1:.1f}s with one worker, {t2:.1f}s with two: "
            f"speed-up {t1 / t2:.2f}× (whole flow {one['wall'] / two['wall']:.2f}×; {os.cpu_count()} cores)"
        )
        figures |= {"dask_speedup_heavy_stages": t1 / t2, "dask_speedup_flow": one["wall"] / two["wall"]}
    record("bench_scale", figures)


if __name__ == "__main__":
    main()
