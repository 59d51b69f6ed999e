"""Share of XQuAD Turkish questions each corruption changes, and how fast corruption runs.

    .venv/bin/python benchmarks/bench_corruptions.py [--samples 3] [--seed 13]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from terazi.corrupt import CONDITIONS, corrupt, samples_for

XQUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "xquad" / "xquad.tr.json"


def questions(path: Path = XQUAD) -> list[tuple[str, str]]:
    data = json.loads(path.read_text(encoding="utf-8-sig"))["data"]
    return [(qa["id"], qa["question"]) for a in data for p in a["paragraphs"] for qa in p["qas"]]


def shares(qs: list[tuple[str, str]], samples: int, seed: int) -> dict[str, tuple[float, float]]:
    """condition -> (share of queries changed in at least one sample, share of variants changed)."""
    out = {}
    for cond in CONDITIONS:
        k = samples_for(cond, samples)
        per_query = [[corrupt(t, cond, seed=seed, query_id=q, sample=s) != t for s in range(k)] for q, t in qs]
        out[cond] = (sum(any(v) for v in per_query) / len(qs), sum(map(sum, per_query)) / (k * len(qs)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args()
    if not XQUAD.is_file():
        raise SystemExit(f"{XQUAD} not found: this benchmark reads XQuAD from ../shared")
    qs = questions()
    t = time.perf_counter()
    res = shares(qs, args.samples, args.seed)
    took = time.perf_counter() - t
    print(f"XQuAD Turkish: {len(qs)} questions, {args.samples} samples for stochastic conditions, seed {args.seed}")
    print(f"{'condition':>14}  queries changed  variants changed")
    for cond, (q, v) in res.items():
        print(f"{cond:>14}  {q:14.1%}  {v:15.1%}")
    print(f"corrupted all variants in {took:.2f} s")


if __name__ == "__main__":
    main()
