"""Reranking stage on XQuAD Turkish: overhead against raw CrossEncoder.predict, pairs saved, warm rerun.

    .venv/bin/python benchmarks/bench_rerank.py [--queries 100] [--rerank-depth 30] [--model PATH] [--max-length N]

Model: a small BERT cross-encoder (2 layers, hidden 256, MiniLM's tokenizer, random weights, max
length 128) built on the spot, since no trained cross-encoder can be downloaded here; its speed,
not its quality, is what is measured. `--model` measures a cross-encoder of yours instead (on the
machine it will run on: its pairs/s is what `plan_benchmark.py` needs). Conditions: clean, upper, ascii_full,
typo (2 samples).
Prints (a) terazi's cold reranking stage vs `CrossEncoder.predict` on the same unique pairs,
(b) pairs scored vs the naive count over all conditions, (c) warm rerun vs cold run. The stage runs as the flow runs
it (plan, every chunk, the ranking: tests/stages.py), with the model the chunks share loaded beforehand, and without
the latency probe (TERAZI_LATENCY_QUERIES=0): a measurement of its own, not the stage's work.
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

from benchmarks.record import record
from benchmarks.tiny import cross_encoder
from terazi.corrupt.variants import corrupt_queries
from terazi.data.beir import load_beir, write_beir
from terazi.data.loading import dataset_corpus, load_dataset, read_variants
from terazi.data.squad import squad_to_beir
from terazi.rerank.backends import shared_scorer
from terazi.schemas import CorruptionSpec, CrossEncoderSpec, DatasetSpec, EncoderSpec
from tests.stages import first_stage, rank_row

XQUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "xquad" / "xquad.tr.json"


def xquad_subset(target: Path, n_queries: int) -> Path:
    """XQuAD Turkish as BEIR (all 240 paragraphs), keeping every k-th question up to `n_queries`."""
    squad_to_beir(XQUAD, target / "full")
    full = load_beir(target / "full")
    keep = full.judged_query_ids[:: max(1, len(full.judged_query_ids) // n_queries)][:n_queries]
    return write_beir(
        target / "subset",
        [{"_id": d, "text": doc.text} for d, doc in full.docs.items()],
        [{"_id": q, "text": full.queries[q].text} for q in keep],
        [(q, d, g) for q in keep for d, g in full.qrels[q].items()],
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--rerank-depth", type=int, default=30)
    ap.add_argument("--model", help="a cross-encoder folder to measure instead of the small random one")
    ap.add_argument("--max-length", type=int, default=128)
    args = ap.parse_args()
    if not XQUAD.is_file():
        raise SystemExit(f"{XQUAD} not found: this benchmark reads XQuAD from ../shared")
    tmp = Path(tempfile.mkdtemp(prefix="terazi-bench-"))
    root = xquad_subset(tmp, args.queries)
    ds = load_dataset(DatasetSpec(path=str(root)))
    spec = CorruptionSpec(samples=2)
    vs = [corrupt_queries(ds, c, spec, 13, str(tmp / "run")) for c in ("clean", "upper", "ascii_full", "typo")]
    t = time.perf_counter()
    cache = str(tmp / "cache")
    cs = first_stage(ds, vs, EncoderSpec(), 100, cache, offline=True)
    print(
        f"first stage: {ds.n_queries} queries, {sum(v.samples for v in vs)} variants each, "
        f"{time.perf_counter() - t:.1f}s"
    )

    ce_spec = CrossEncoderSpec(
        name="small-ce",
        kind="cross-encoder",
        model=args.model or cross_encoder(tmp / "ce", hidden=256, heads=4, intermediate=1024),
        max_length=args.max_length,
    )
    corpus = dataset_corpus(ds, cache)
    cands, variants = pl.read_parquet(cs.path), read_variants(vs)
    scorer, _ = shared_scorer(ce_spec, corpus, ds.corpus_fingerprint, True, cache)  # the one the stage's chunks use
    model = scorer.model  # loaded once and shared: both timings below are of scoring alone
    model.predict([("ısınma", corpus.texts(["p0"])["p0"])] * 64, show_progress_bar=False)  # warm up torch, untimed

    top = cands.filter(pl.col("rank") <= args.rerank_depth).join(
        variants.select("condition", "sample", "query_id", "text"), on=["condition", "sample", "query_id"]
    )
    naive = top.height
    top = top.unique(["text", "doc_id"], maintain_order=True)  # a pair: a query text and a document
    docs = corpus.texts(top["doc_id"].unique().to_list())
    unique = [(t, docs[d]) for t, d in zip(top["text"], top["doc_id"])]

    t = time.perf_counter()
    model.predict(unique, batch_size=scorer.batch_size, show_progress_bar=False)  # the batch the stage uses
    raw = time.perf_counter() - t

    t = time.perf_counter()
    cold_row = rank_row(ds, cs, vs, ce_spec, args.rerank_depth, cache, str(tmp / "cold"))
    cold = time.perf_counter() - t
    t = time.perf_counter()
    warm_row = rank_row(ds, cs, vs, ce_spec, args.rerank_depth, cache, str(tmp / "warm"))
    warm = time.perf_counter() - t

    print(
        f"(a) cold reranking stage {cold:.2f}s vs CrossEncoder.predict on the same {len(unique)} pairs {raw:.2f}s: "
        f"{cold / raw:.3f}× ({(cold / raw - 1) * 100:+.1f}%); {len(unique) / raw:.1f} pairs/s (model alone), "
        f"{len(unique) / cold:.1f} pairs/s (stage)"
    )
    print(
        f"(b) pairs scored {cold_row.pairs_scored} vs naive count over all conditions {naive}: "
        f"{cold_row.pairs_scored / naive:.3f} ({naive - cold_row.pairs_scored} saved)"
    )
    print(
        f"(c) warm rerun {warm:.3f}s ({warm_row.pairs_scored} scored, {warm_row.pairs_cached} cached) vs cold "
        f"{cold:.2f}s: {cold / warm:.0f}× faster"
    )
    record(
        "bench_rerank",
        {
            "model": args.model or "small random cross-encoder (2 layers, hidden 256)",
            "queries": ds.n_queries,
            "rerank_depth": args.rerank_depth,
            "max_length": args.max_length,
            "unique_pairs": len(unique),
            "cold_stage_s": cold,
            "predict_s": raw,
            "stage_over_predict": cold / raw,
            "pairs_per_s_model": len(unique) / raw,
            "pairs_per_s_stage": len(unique) / cold,
            "pairs_scored": cold_row.pairs_scored,
            "pairs_naive": naive,
            "warm_s": warm,
            "warm_pairs_scored": warm_row.pairs_scored,
            "cold_over_warm": cold / warm,
        },
    )


if __name__ == "__main__":
    main()
