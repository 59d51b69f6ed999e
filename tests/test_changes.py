"""Nightly comparison: rank, group and significant score changes between two results folders."""

from __future__ import annotations

import numpy as np
import polars as pl

from terazi.present.changes import changes_since, previous_nightly
from terazi.results import run_folder as results
from terazi.schemas import BenchmarkIdentity, RunManifest, Statistics


def fake_run(folder, board, values):
    folder.mkdir(parents=True)
    pl.DataFrame(board, schema=["system", "borda_rank", "group"], orient="row").write_csv(folder / "leaderboard.csv")
    rows = [
        ("d", s, "clean", f"q{i}", "nDCG@10", float(v), False) for s, vs in values.items() for i, v in enumerate(vs)
    ]
    pl.DataFrame(
        rows, schema=["dataset", "system", "condition", "query_id", "measure", "value", "changed"], orient="row"
    ).write_parquet(folder / "per_query.parquet")
    return folder


def test_rank_group_and_significant_changes(tmp_path):
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.8, 200)
    before = fake_run(tmp_path / "a", [("x", 1, 1), ("y", 2, 2)], {"x": base, "y": base - 0.1})
    after = fake_run(
        tmp_path / "b",
        [("y", 1, 1), ("x", 2, 1), ("z", 3, 2)],
        {"x": base + rng.normal(0, 0.01, 200), "y": base + 0.2, "z": base},
    )
    text = changes_since(before, after, "nDCG@10", Statistics(bootstrap_resamples=500))
    assert "new systems: z" in text
    assert "y: rank 2 → 1" in text and "y: group 2 → 1" in text and "x: rank 1 → 2" in text
    assert "y: nDCG@10 changed significantly by +0.3000" in text
    assert "x: nDCG@10 changed significantly" not in text
    assert "after − before, 95% intervals; paired randomization test" in text
    # the run's own level and correction (a nightly passes its config's statistics)
    strict = changes_since(before, after, "nDCG@10", Statistics(bootstrap_resamples=500, confidence=0.99, holm=True))
    assert "after − before, 99% intervals; " in strict and "p_adjusted: Holm across each pair's cells" in strict


def manifest(folder, kind, name, started, parts=None) -> RunManifest:
    m = RunManifest(
        terazi_version="t",
        run_dir=str(folder),
        kind=kind,
        started=started,
        seconds=1.0,
        config={},
        benchmark=BenchmarkIdentity(name=name, fingerprint="f" * 16, parts=parts or {"datasets": "a"}),
        datasets=[],
        variants=[],
        candidates=[],
        reranks=[],
        scores=[],
        leaderboard=[],
    )
    folder.mkdir(parents=True, exist_ok=True)
    results.finish(folder, m.model_dump_json())
    return m


def test_previous_nightly_is_the_last_completed_nightly_of_the_same_benchmark(tmp_path):
    manifest(tmp_path / "n1", "nightly", "bench", "2026-01-01T02:00:00+00:00")
    manifest(tmp_path / "n0", "nightly", "bench", "2025-12-31T02:00:00+00:00")
    manifest(tmp_path / "adhoc", "ad-hoc", "bench", "2026-01-01T12:00:00+00:00")  # not a nightly
    manifest(tmp_path / "other", "nightly", "other", "2026-01-01T13:00:00+00:00")  # another benchmark
    broken = tmp_path / "killed"
    manifest(broken, "nightly", "bench", "2026-01-01T14:00:00+00:00")
    (broken / results.MARKER).write_text("{}")  # interrupted: incomplete
    now = manifest(tmp_path / "n2", "nightly", "bench", "2026-01-02T02:00:00+00:00")
    assert previous_nightly(tmp_path, now) == tmp_path / "n1"


def test_a_changed_benchmark_is_said_plainly(tmp_path):
    a = fake_run(tmp_path / "a", [("x", 1, 1)], {"x": [0.5, 0.6]})
    b = fake_run(tmp_path / "b", [("x", 1, 1)], {"x": [0.5, 0.6]})
    manifest(a, "nightly", "bench", "2026-01-01T02:00:00+00:00", {"datasets": "a", "first_stage": "e1", "systems": "s"})
    manifest(b, "nightly", "bench", "2026-01-02T02:00:00+00:00", {"datasets": "a", "first_stage": "e2", "systems": "s"})
    text = changes_since(a, b, "nDCG@10", Statistics(bootstrap_resamples=200))
    assert "the benchmark itself changed**: first stage (encoder, index, depth)" in text
    assert "datasets" not in text.split("changed**:")[1].split(".")[0]
