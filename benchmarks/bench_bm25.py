"""BM25 reranking stage against its floor: one bm25s pass per distinct query text over the corpus, plus a gather.

    .venv/bin/python benchmarks/bench_bm25.py [--replicas 8] [--conditions clean typo] [--rerank-depth 30]

XQuAD Turkish as BEIR, replicated under new ids (`bench_pairs.replicate`: ×8 is 1,920 passages and 9,520
questions), under two conditions; frozen candidates from a tiny random bi-encoder (depth 100; its cost is not
measured). Then, in this process and on a cold score cache:
(a) the floor: the corpus analysed and indexed by bm25s, each distinct query text analysed and scored against the
    whole corpus (`BM25.get_scores`), and its candidates' scores gathered;
(b) the stage as the flow runs it (plan, each chunk, the ranking: tests/stages.py), its parts timed;
and the ratio (b)/(a) (≤ 2 wanted), and whether the stage's scores equal the floor's.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TERAZI_LATENCY_QUERIES", "0")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import polars as pl

from benchmarks.bench_pairs import XQUAD, replicate
from benchmarks.record import record


def floor(corpus, cands: pl.DataFrame, variants: pl.DataFrame, rerank_depth: int) -> tuple[float, pl.DataFrame]:
    """Seconds of the floor, and its scores (condition, sample, query_id, doc_id, floor)."""
    import bm25s

    from terazi.base.turkish import analyse

    start = time.perf_counter()
    bm25 = bm25s.BM25()
    bm25.index([analyse(t) or [""] for batch in corpus.batches() for t in batch], show_progress=False)
    top = cands.filter(pl.col("rank") <= rerank_depth).join(
        variants.select("condition", "sample", "query_id", "text"), on=["condition", "sample", "query_id"]
    )
    row = dict(zip(corpus.ids().to_list(), range(corpus.ids().len())))
    rows = np.fromiter((row[d] for d in top["doc_id"]), dtype=np.int64, count=top.height)
    texts = top["text"].to_list()
    out = np.zeros(top.height)
    by_text: dict[str, list[int]] = {}
    for i, t in enumerate(texts):
        by_text.setdefault(t, []).append(i)
    for text, idx in by_text.items():
        tokens = bm25.get_tokens_ids(analyse(text))
        if tokens:  # no known word: every score 0
            out[idx] = bm25.get_scores(tokens)[rows[idx]]
    seconds = time.perf_counter() - start
    return seconds, top.select("condition", "sample", "query_id", "doc_id").with_columns(pl.Series("floor", out))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--replicas", type=int, default=8)
    ap.add_argument("--conditions", nargs="+", default=["clean", "typo"])
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--rerank-depth", type=int, default=30)
    args = ap.parse_args()
    if not XQUAD.is_file():
        raise SystemExit(f"{XQUAD} not found: this benchmark reads XQuAD from ../shared")
    from benchmarks.tiny import bi_encoder
    from terazi.corrupt.variants import corrupt_queries
    from terazi.data.loading import dataset_corpus, load_dataset, read_variants
    from terazi.data.squad import squad_to_beir
    from terazi.rerank import stage
    from terazi.schemas import BM25Spec, CorruptionSpec, DatasetSpec, EncoderSpec
    from tests.stages import first_stage

    tmp = Path(tempfile.mkdtemp(prefix="terazi-bench-bm25-"))
    squad_to_beir(XQUAD, tmp / "xquad-tr")
    data = replicate(tmp / "xquad-tr", tmp / "data", args.replicas)
    ds = load_dataset(DatasetSpec(path=str(data), name="xquad-tr"), announce=False)
    vs = [corrupt_queries(ds, c, CorruptionSpec(), 13, str(tmp / "run")) for c in args.conditions]
    cache = str(tmp / "cache")
    cs = first_stage(ds, vs, EncoderSpec(model=bi_encoder(tmp / "tiny-bi"), batch_size=128), args.depth, cache)
    corpus = dataset_corpus(ds, cache)
    cands, variants = pl.read_parquet(cs.path), read_variants(vs)
    print(
        f"xquad-tr×{args.replicas}: {ds.n_docs} passages, {ds.n_queries} queries, {len(vs)} conditions "
        f"({', '.join(args.conditions)}), rerank depth {args.rerank_depth}",
        flush=True,
    )

    gc.freeze()  # as a terazi command does before its flow (terazi.base.shutdown.graceful): floor and stage alike
    floor_s, want = floor(corpus, cands, variants, args.rerank_depth)
    spec = BM25Spec(name="bm25-tr", kind="bm25")
    parts = {}
    t = time.perf_counter()
    plan = stage.plan_rerank(ds, cs, vs, spec, args.rerank_depth, cache, offline=True)
    parts["plan"] = time.perf_counter() - t
    t = time.perf_counter()
    chunks = [stage.score_chunk(plan, i) for i in range(len(plan.chunks))]
    parts[f"chunks ({len(chunks)})"] = time.perf_counter() - t
    t = time.perf_counter()
    result = stage.finish_rerank(plan, chunks, str(tmp / "out"))
    parts["ranking"] = time.perf_counter() - t
    stage_s = sum(parts.values())
    got = pl.read_parquet(result.path).join(want, on=["condition", "sample", "query_id", "doc_id"])
    same = got.height == want.height and bool((got["score"] == got["floor"]).all())
    print(
        f"(a) floor: bm25s index + {variants['text'].n_unique()} distinct query texts × get_scores + gather: "
        f"{floor_s:.2f}s"
    )
    print(
        f"(b) stage: {stage_s:.2f}s for {result.pairs_needed:,} pairs ({result.pairs_scored:,} scored): "
        + ", ".join(f"{k} {v:.2f}s" for k, v in parts.items())
    )
    print(f"ratio stage/floor {stage_s / floor_s:.2f}× (≤ 2 wanted); scores identical to the floor's: {same}")
    record(
        "bench_bm25",
        {
            "replicas": args.replicas,
            "conditions": args.conditions,
            "pairs": result.pairs_needed,
            "floor_s": floor_s,
            "stage_s": stage_s,
            "ratio": stage_s / floor_s,
            "identical": same,
            **{f"{k}_s": v for k, v in parts.items()},
        },
    )


if __name__ == "__main__":
    main()
