"""A worked plan for a benchmark's size: pairs per reranker, encodings, and hours of model time per worker.

    .venv/bin/python benchmarks/plan_benchmark.py                       # the card's benchmark, sizes below
    .venv/bin/python benchmarks/plan_benchmark.py --pairs-per-second 3 --docs-per-second 40 \\
        --dataset dmm=DOCS,QUERIES --dataset arzuhal=DOCS,QUERIES --workers 4

The card (Kalbur / Pusula) evaluates five datasets, four query conditions (clean, UPPERCASE, no Turkish
letters, mobile), seven rows (six rerankers and the first stage alone), the first stage's top 100 per query
and the top 30 reranked. msmarco-tr, quora-tr and fiqa-tr are translations of BEIR's MS MARCO (dev),
Quora and FiQA, whose corpus and test-query counts are BEIR's; the card does not give the sizes of dmm and
arzuhal, so pass them with --dataset. Rates are measured, not assumed: pairs per second of a reranker on
the worker you will use (`benchmarks/bench_rerank.py --model PATH` prints it), documents per second of the
encoder. The default is the only rate the card itself prints: Kalbur (568M parameters, max length 512)
scores 3 pairs per second in fp32 on a 12-core CPU; the first stage (bge-m3) has the same backbone and
length, so without a measured encoder rate a passage is taken to cost what a pair costs.
"""

from __future__ import annotations

import argparse

BEIR = {  # name: (passages, test queries), as published with BEIR
    "msmarco-tr": (8_841_823, 6_980),
    "quora-tr": (522_931, 10_000),
    "fiqa-tr": (57_638, 648),
}
CONDITIONS = 4
RERANKERS = 6
DEPTH, RERANK_DEPTH = 100, 30


def plan(
    datasets: dict[str, tuple[int, int]],
    pairs_per_second: float,
    docs_per_second: float,
    workers: int,
    conditions: int = CONDITIONS,
    rerankers: int = RERANKERS,
    rerank_depth: int = RERANK_DEPTH,
) -> list[dict]:
    rows = []
    for name, (docs, queries) in datasets.items():
        variants = queries * conditions
        pairs = variants * rerank_depth  # per reranker; conditions that leave a query unchanged repeat pairs
        rows.append(
            {
                "dataset": name,
                "passages": docs,
                "queries": queries,
                "variants": variants,
                "pairs": pairs,
                "encode_h": (docs + variants) / docs_per_second / 3600,
                "rerank_h": pairs * rerankers / pairs_per_second / 3600,
            }
        )
    total = {k: sum(r[k] for r in rows) for k in ("passages", "queries", "variants", "pairs", "encode_h", "rerank_h")}
    rows.append({"dataset": "total", **total})
    for r in rows:
        r["wall_h"] = (r["encode_h"] + r["rerank_h"]) / workers
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", action="append", default=[], help="NAME=PASSAGES,QUERIES (repeatable)")
    ap.add_argument("--pairs-per-second", type=float, default=3.0, help="measured reranker throughput per worker")
    ap.add_argument(
        "--docs-per-second",
        type=float,
        help="measured encoder throughput per worker (default: the pair rate, same backbone and length)",
    )
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--rerankers", type=int, default=RERANKERS)
    args = ap.parse_args()
    datasets = dict(BEIR)
    for text in args.dataset:
        name, _, sizes = text.partition("=")
        docs, queries = (int(x) for x in sizes.split(","))
        datasets[name] = (docs, queries)
    args.docs_per_second = args.docs_per_second or args.pairs_per_second
    rows = plan(datasets, args.pairs_per_second, args.docs_per_second, args.workers, rerankers=args.rerankers)
    print(
        f"{len(datasets)} datasets, {CONDITIONS} conditions, {args.rerankers} rerankers at top {RERANK_DEPTH} of "
        f"{DEPTH}; {args.pairs_per_second:g} pairs/s and {args.docs_per_second:g} passages/s per worker, "
        f"{args.workers} worker(s)\n"
    )
    print(
        "| dataset | passages | queries | query variants | pairs per reranker | encoding h | reranking h "
        f"(all {args.rerankers}) | wall h on {args.workers} |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['dataset']} | {r['passages']:,} | {r['queries']:,} | {r['variants']:,} | {r['pairs']:,} | "
            f"{r['encode_h']:,.1f} | {r['rerank_h']:,.1f} | {r['wall_h']:,.1f} |"
        )
    missing = [n for n in ("dmm", "arzuhal") if n not in datasets]
    if missing:
        print(f"\nnot included (sizes not published in the card): {', '.join(missing)}; add them with --dataset")


if __name__ == "__main__":
    main()
