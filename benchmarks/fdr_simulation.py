"""Does Benjamini–Hochberg over a whole table keep its promise on IR-shaped data? 500 simulated benchmarks in which
no system differs from another: 5 systems × 4 conditions on one dataset of 100 queries, every pair of systems in
every condition compared (40 comparisons) by the path a run takes (`terazi.analysis.intervals.pairwise`: the paired
randomization test, then the table's correction). With no true difference every rejection is false, so the false
discovery rate is the share of benchmarks with any rejection; it should stay at or below α = 0.05.

The systems share each query's difficulty (a query hard for one is hard for all, as in IR) and each condition shifts
every system alike, so the 40 tests are correlated the way a leaderboard's are; scores are clipped to [0, 1] and a
third of the queries score 0 for every system (no relevant document among the candidates: no difference to flip).

    .venv/bin/python benchmarks/fdr_simulation.py [--benchmarks 500]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from terazi.analysis.hypotheses import adjust, adjust_families  # noqa: E402
from terazi.analysis.intervals import pairwise  # noqa: E402
from terazi.schemas import Statistics  # noqa: E402

SYSTEMS, CONDITIONS, QUERIES = ["a", "b", "c", "d", "e"], ["clean", "upper", "mobile", "typo"], 100


def benchmark(rng: np.random.Generator) -> pl.DataFrame:
    """One benchmark's per-query table in which every system is the same system, noise aside."""
    difficulty = rng.beta(2, 2, QUERIES) * (rng.random(QUERIES) > 1 / 3)
    rows = []
    for k, c in enumerate(CONDITIONS):
        for s in SYSTEMS:
            values = np.clip(difficulty - 0.03 * k + rng.normal(0, 0.15, QUERIES), 0, 1) * (difficulty > 0)
            rows.append(pl.DataFrame({"system": s, "condition": c, "query_id": np.arange(QUERIES), "value": values}))
    return pl.concat(rows).with_columns(pl.lit("d").alias("dataset"), pl.col("query_id").cast(pl.Utf8))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--benchmarks", type=int, default=500)
    args = parser.parse_args()
    rng = np.random.default_rng(2026)
    settings = Statistics(bootstrap_resamples=100, randomization_resamples=2000)  # the default: bh over the table
    any_false = {"none": 0, "bh/table": 0, "holm/table": 0, "bh/pair": 0}
    false_cells = 0
    started = time.perf_counter()
    for i in range(args.benchmarks):
        cells = pairwise(benchmark(rng), ["d"], CONDITIONS, settings.model_copy(update={"seed": i}))
        p, pairs = cells["p_randomization"].to_numpy(), list(zip(cells["system"], cells["versus"]))
        adjusted = {
            "none": p,
            "bh/table": cells["p_adjusted"].to_numpy(),  # as the run adjusts them
            "holm/table": adjust(p, "holm"),
            "bh/pair": adjust_families(p, pairs, "bh"),
        }
        for name, q in adjusted.items():
            any_false[name] += bool((q < settings.alpha).any())
        false_cells += int((p < settings.alpha).sum())
    n = args.benchmarks
    print(
        f"{n} benchmarks × {len(SYSTEMS)} systems × {len(CONDITIONS)} conditions ({QUERIES} queries), no true "
        f"difference, α = 0.05 ({time.perf_counter() - started:.0f} s)"
    )
    for name, k in any_false.items():
        rate = k / n
        se = np.sqrt(rate * (1 - rate) / n)
        print(f"  {name:11s} false discovery rate (benchmarks with any rejection) {rate:.3f} ± {1.96 * se:.3f}")
    print(f"  uncorrected: {false_cells / (n * 40):.4f} of all {n * 40} comparisons rejected")


if __name__ == "__main__":
    main()
