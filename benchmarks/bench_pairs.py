"""Cost per pair of the reranking stage at XQuAD-tr size and at ten times that, and a warm rerun of over a million
pairs.

    .venv/bin/python benchmarks/bench_pairs.py [--replicas 10] [--depth 100] [--rerank-depth 30]

XQuAD Turkish as BEIR (240 passages, 1,190 questions) and the same replicated under new ids (query copy k judges passage
copy k; each copy's texts end in a word of their own, so that no pair repeats), five conditions (clean, upper,
ascii_full, mobile, typo): 5,950 and 59,500 query variants. The first stage uses a tiny random bi-encoder (its cost is
not measured here). Then the reranking stage of BM25, as the flow runs it (plan, chunks, ranking), cold and warm, each
in a fresh process: seconds, microseconds per pair, peak memory above the process's baseline, bytes per pair, and the
ratio of the large set to the small one (flat cost: ≤ 1.2). The warm rerun of the large set is the ≥ 1 M-pair figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

XQUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "xquad" / "xquad.tr.json"
CONDITIONS = ("clean", "upper", "ascii_full", "mobile", "typo")


def replicate(source: Path, target: Path, copies: int) -> Path:
    from terazi.data.beir import load_beir, write_beir

    ds = load_beir(source)
    docs = [{"_id": f"{d}-r{k}", "text": f"{doc.text} kopya{k}"} for k in range(copies) for d, doc in ds.docs.items()]
    queries = [
        {"_id": f"{q}-r{k}", "text": f"{ds.queries[q].text} kopya{k}"}
        for k in range(copies)
        for q in ds.judged_query_ids
    ]
    qrels = [
        (f"{q}-r{k}", f"{d}-r{k}", g)
        for k in range(copies)
        for q in ds.judged_query_ids
        for d, g in ds.qrels[q].items()
    ]
    return write_beir(target, docs, queries, qrels)


def prepare(folder: Path, data: Path, encoder: str, depth: int) -> None:
    """Query variants and frozen candidates; their manifests saved for the stage processes."""
    from terazi.corrupt.variants import corrupt_queries
    from terazi.data.loading import load_dataset
    from terazi.schemas import CorruptionSpec, DatasetSpec, EncoderSpec
    from tests.stages import first_stage

    ds = load_dataset(DatasetSpec(path=str(data), name=data.name))
    vs = [corrupt_queries(ds, c, CorruptionSpec(), 13, str(folder / "run")) for c in CONDITIONS]
    cs = first_stage(ds, vs, EncoderSpec(model=encoder, batch_size=128), depth, str(folder / "cache"), offline=True)
    (folder / "manifests.json").write_text(
        json.dumps(
            {"dataset": ds.model_dump(), "variants": [v.model_dump() for v in vs], "candidates": cs.model_dump()}
        )
    )


def stage(folder: Path, rerank_depth: int) -> dict:
    """The BM25 reranking stage in this (fresh) process: time and peak memory above the baseline."""
    import bm25s  # noqa: F401  (imported before the baseline: module code is not per-pair memory)
    import Stemmer  # noqa: F401

    from benchmarks.tiny import peak_rss, peak_rss_reset
    from terazi.schemas import BM25Spec, CandidateSet, DatasetManifest, VariantSet
    from tests.stages import rank_row

    body = json.loads((folder / "manifests.json").read_text())
    ds, cs = DatasetManifest(**body["dataset"]), CandidateSet(**body["candidates"])
    vs = [VariantSet(**v) for v in body["variants"]]
    base = peak_rss_reset()
    t = time.perf_counter()
    r = rank_row(
        ds, cs, vs, BM25Spec(name="bm25-tr", kind="bm25"), rerank_depth, str(folder / "cache"), str(folder / "run")
    )
    return {
        "seconds": time.perf_counter() - t,
        "pairs": r.pairs_needed,
        "unique": r.pairs_unique,
        "scored": r.pairs_scored,
        "base": base,
        "peak": peak_rss(),
    }


def run_stage(folder: Path, rerank_depth: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--stage", str(folder), "--rerank-depth", str(rerank_depth)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--replicas", type=int, default=10)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--rerank-depth", type=int, default=30)
    ap.add_argument("--stage", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stage:
        print(json.dumps(stage(args.stage, args.rerank_depth)))
        return
    if not XQUAD.is_file():
        raise SystemExit(f"{XQUAD} not found: this benchmark reads XQuAD from ../shared")
    from benchmarks.record import record
    from benchmarks.tiny import bi_encoder
    from terazi.data.squad import squad_to_beir

    tmp = Path(tempfile.mkdtemp(prefix="terazi-bench-pairs-"))
    squad_to_beir(XQUAD, tmp / "xquad-tr")
    sets = {
        "xquad-tr": tmp / "xquad-tr",
        f"xquad-tr×{args.replicas}": replicate(tmp / "xquad-tr", tmp / "xquad-tr-x", args.replicas),
    }
    encoder = bi_encoder(tmp / "tiny-bi")
    rows = {}
    for name, data in sets.items():
        folder = tmp / "work" / name.replace("×", "x")
        folder.mkdir(parents=True)
        t = time.perf_counter()
        prepare(folder, data, encoder, args.depth)
        print(f"{name}: variants and first stage in {time.perf_counter() - t:.0f}s", flush=True)
        rows[name] = (run_stage(folder, args.rerank_depth), run_stage(folder, args.rerank_depth))
    print(f"\nBM25 reranking stage (plan, chunks, ranking), rerank depth {args.rerank_depth}, fresh process each:")
    print(
        f"{'dataset':<14} {'pairs':>10} | {'cold s':>7} {'µs/pair':>8} {'B/pair':>7} | {'warm s':>7} {'µs/pair':>8} "
        f"{'B/pair':>7} {'peak MB':>8}"
    )
    for name, (cold, warm) in rows.items():
        n = cold["pairs"]
        print(
            f"{name:<14} {n:>10,} | {cold['seconds']:>7.2f} {1e6 * cold['seconds'] / n:>8.2f} "
            f"{(cold['peak'] - cold['base']) / n:>7.0f} | {warm['seconds']:>7.2f} {1e6 * warm['seconds'] / n:>8.2f} "
            f"{(warm['peak'] - warm['base']) / n:>7.0f} {warm['peak'] / 2**20:>8.0f}"
        )
        assert cold["scored"] == cold["unique"] and warm["scored"] == 0
    (small_c, small_w), (big_c, big_w) = rows.values()

    def per(r):
        return r["seconds"] / r["pairs"]

    def mem(r):
        return (r["peak"] - r["base"]) / r["pairs"]

    print(
        f"ratio large/small per pair: cold time {per(big_c) / per(small_c):.2f}, cold memory "
        f"{mem(big_c) / mem(small_c):.2f}, warm time {per(big_w) / per(small_w):.2f}, warm memory "
        f"{mem(big_w) / mem(small_w):.2f}"
    )
    print(
        f"warm rerun of {big_w['pairs']:,} pairs: {big_w['seconds']:.2f}s rerank stage, peak RSS "
        f"{big_w['peak'] / 2**20:.0f} MB (whole process)"
    )
    record(
        "bench_pairs",
        {
            "units": "seconds, bytes",
            "rerank_depth": args.rerank_depth,
            "runs": {n: {"cold": c, "warm": w} for n, (c, w) in rows.items()},
            "large_over_small_per_pair": {
                "cold_time": per(big_c) / per(small_c),
                "cold_memory": mem(big_c) / mem(small_c),
                "warm_time": per(big_w) / per(small_w),
                "warm_memory": mem(big_w) / mem(small_w),
            },
        },
    )


if __name__ == "__main__":
    main()
