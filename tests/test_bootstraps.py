"""Bootstrap results found again by the content of their inputs (terazi.store.bootstraps): the same numbers as drawing
them, no draw at all for values seen before, a draw for anything that changed, and a damaged file never in the way."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from terazi.analysis import depths, intervals, retention, stats
from terazi.analysis.judged import judge
from terazi.schemas import Statistics
from terazi.store import bootstraps
from terazi.store.layout import PARTS
from terazi.upkeep.health import check, repair


@pytest.fixture
def counted(monkeypatch) -> list:
    """Every resampling the statistics make (one per interval or ratio computed, not found)."""
    calls, real = [], stats.draws
    monkeypatch.setattr(stats, "draws", lambda *a: calls.append(a) or real(*a))
    return calls


FILE = PARTS["intervals"].name


def values(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"tr": rng.random(300), "en": rng.random(120)}


def statistics(a: dict, b: dict, store: bootstraps.BootstrapStore | None = None) -> list:
    return [
        stats.interval(a, 500, 3, 0.9, known=store),
        stats.paired_difference(a, b, 500, 3, 0.9, known=store),
        stats.ratio_interval(a, b, 500, 3, 0.9, "macro", known=store),
        stats.ratio_interval(a, b, 500, 3, 0.9, "pooled", known=store),
    ]


def test_found_again_equal_to_drawn_and_only_what_changed_is_drawn(tmp_path, counted):
    a, b = values(1), values(2)
    drawn = statistics(a, b)  # no store: computed, as everywhere but the results stage
    assert len(counted) == 4
    with bootstraps.opened(tmp_path) as store:
        assert isinstance(store, bootstraps.BootstrapStore)
        assert statistics(a, b, store) == drawn  # the first run over this cache computes and keeps them
    assert len(counted) == 8 and (tmp_path / FILE).is_file()
    with bootstraps.opened(tmp_path) as store:  # the next run: all found, nothing drawn
        assert statistics({k: v.copy() for k, v in a.items()}, b, store) == drawn
        assert len(counted) == 8
        assert statistics(a, b) == drawn and len(counted) == 12  # not given the store: nothing ambient, all drawn
        changed = {**a, "en": a["en"] + 1e-9}  # one value of one dataset moved
        again = statistics(changed, b, store)
    assert len(counted) == 16 and again[0].estimate != drawn[0].estimate
    with bootstraps.opened(
        tmp_path
    ) as store:  # other parameters are other results; numpy scalars are the numbers they equal
        assert stats.interval(a, 500, 4, 0.9, known=store) != drawn[0] and len(counted) == 17
        numpy_args = (np.int64(500), np.int64(3), np.float64(0.9))
        assert stats.interval(a, *numpy_args, known=store) == drawn[0] and len(counted) == 17
    with (
        bootstraps.opened(None) as store,
        bootstraps.opened(tmp_path / "missing") as other,
    ):  # no cache folder: no store
        assert store is None and other is None


def per_query(seed: int) -> pl.DataFrame:
    """Two datasets, three systems, clean and one condition that changed some queries."""
    rng, rows = np.random.default_rng(seed), []
    for d, n in (("tr", 60), ("en", 40)):
        changed = rng.random(n) < 0.5
        for s in ("a", "b", "c"):
            for cond in ("clean", "upper"):
                rows += [
                    (d, s, cond, f"q{i:03d}", "nDCG@10", float(v), cond == "upper" and bool(changed[i]))
                    for i, v in enumerate(rng.random(n))
                ]
    return pl.DataFrame(
        rows, schema=["dataset", "system", "condition", "query_id", "measure", "value", "changed"], orient="row"
    )


def run_statistics(pq: pl.DataFrame, store: bootstraps.BootstrapStore | None) -> list:
    """What the results stage computes from the per-query table (terazi.results.aggregate), the store passed down;
    a depth sweep of system a at depths 2 and 4, the first stage's ceiling beside it."""
    datasets, args = ["en", "tr"], (400, 5, 0.9)
    settings = Statistics(bootstrap_resamples=400, seed=5, confidence=0.9, holm=True)
    clean = pq.filter((pl.col("condition") == "clean") & (pl.col("system") == "a")).select(
        "dataset", "query_id", "value"
    )
    sweep = pl.concat(
        clean.with_columns(pl.lit("a").alias("system"), pl.lit(d).alias("depth"), pl.col("value") * d / 4, pairs=d)
        for d in (2, 4)
    )
    ceiling = sweep.select("dataset", "query_id", "depth", system=pl.lit("first-stage"), recall="value", oracle=1.0)
    return [
        depths.ceiling_table(ceiling, datasets, *args, known=store),
        depths.depth_table(sweep, ceiling, datasets, ["a"], {"a": None}, *args, known=store),
        intervals.system_intervals(pq, datasets, settings, known=store),
        retention.retention_intervals(pq, datasets, ["clean", "upper"], *args, "pooled", known=store),
        intervals.pairwise(pq, datasets, ["clean", "upper"], settings, known=store),
        judge(pq, "a", "b", "nDCG@10", datasets, 50, settings, known=store),
    ]


def same(x: list, y: list) -> bool:
    return all(a.equals(b) if isinstance(a, pl.DataFrame) else a == b for a, b in zip(x, y, strict=True))


def test_the_results_stage_statistics_take_the_store_and_a_warm_run_draws_nothing(tmp_path, counted):
    pq = per_query(4)
    drawn = run_statistics(pq, None)
    cold = len(counted)
    assert cold > 10
    with bootstraps.opened(tmp_path) as store:
        assert same(run_statistics(pq, store), drawn)  # the same result found again within a run is drawn once
    first = len(counted)
    assert cold < first < 2 * cold
    with bootstraps.opened(tmp_path) as store:  # the warm run: every interval, ratio and difference found
        assert same(run_statistics(pq.clone(), store), drawn)
    assert len(counted) == first


def test_a_damaged_file_is_set_aside_and_reported(tmp_path, counted):
    a, b = values(1), values(2)
    (tmp_path / FILE).write_bytes(b"not a database" * 100)
    assert [f.problem.split(" ")[0] for f in check(tmp_path)] == ["unreadable"]
    with bootstraps.opened(tmp_path) as store:
        assert store is None
        drawn = statistics(a, b, store)  # computed as if there were no file
    [aside] = (tmp_path / "quarantine").glob("intervals-*")  # in a folder of its own, with its record
    assert len(counted) == 4 and (aside / "intervals.sqlite").is_file() and (aside / "set-aside.json").is_file()
    (tmp_path / FILE).write_bytes(b"not a database" * 100)
    assert any("set aside" in line for line in repair(tmp_path)) and not (tmp_path / FILE).exists()
    with bootstraps.opened(tmp_path) as store:
        assert statistics(a, b, store) == drawn
    assert check(tmp_path) == []


def test_a_file_another_run_holds_is_waited_for_then_left_alone(tmp_path, counted, monkeypatch):
    import sqlite3

    a, b = values(1), values(2)
    with bootstraps.opened(tmp_path) as store:
        drawn = statistics(a, b, store)
    monkeypatch.setattr(bootstraps, "TIMEOUT", 0.05)
    other = sqlite3.connect(tmp_path / FILE, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # another run writing its intervals, for longer than this one waits
    try:
        with bootstraps.opened(tmp_path) as store:
            assert store is None and statistics(a, b, store) == drawn  # computed, as without the file
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert len(counted) == 8 and not (tmp_path / "quarantine").exists()
    with bootstraps.opened(tmp_path) as store:  # the file was left as it was: everything found again
        assert statistics(a, b, store) == drawn and len(counted) == 8
