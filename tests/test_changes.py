"""Nightly comparison: rank, group and significant score changes between two results folders."""

from __future__ import annotations

import numpy as np
import polars as pl

from terazi.changes import compare_runs, previous_run


def fake_run(folder, board, values):
    folder.mkdir(parents=True)
    pl.DataFrame(board, schema=["system", "borda_rank", "group"], orient="row").write_csv(folder / "leaderboard.csv")
    rows = [("d", s, "clean", f"q{i}", "nDCG@10", float(v), False) for s, vs in values.items() for i, v in enumerate(vs)]
    pl.DataFrame(rows, schema=["dataset", "system", "condition", "query_id", "measure", "value", "changed"],
                 orient="row").write_parquet(folder / "per_query.parquet")
    return folder


def test_rank_group_and_significant_changes(tmp_path):
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.8, 200)
    before = fake_run(tmp_path / "a", [("x", 1, 1), ("y", 2, 2)], {"x": base, "y": base - 0.1})
    after = fake_run(tmp_path / "b", [("y", 1, 1), ("x", 2, 1), ("z", 3, 2)],
                     {"x": base + rng.normal(0, 0.01, 200), "y": base + 0.2, "z": base})
    text = compare_runs(before, after, "nDCG@10", resamples=500)
    assert "new systems: z" in text
    assert "y: rank 2 → 1" in text and "y: group 2 → 1" in text and "x: rank 1 → 2" in text
    assert "y: nDCG@10 changed significantly by +0.3000" in text
    assert "x: nDCG@10 changed significantly" not in text
    assert previous_run(tmp_path, after) == before
