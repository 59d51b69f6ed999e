"""Retention ("Koruma") as the Kalbur card defines it, the pooled variant, and their intervals."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from terazi.analysis.retention import AGGREGATION_LABELS, retention_by_dataset, retention_intervals
from terazi.analysis.stats import ratio_interval

# The card's own per-dataset nDCG@10 of Kalbur, clean and Mobil (four ranked datasets, every query changed).
CARD = {"quora-tr": (0.969, 0.940), "fiqa-tr": (0.402, 0.337), "dmm": (0.905, 0.896), "arzuhal": (0.822, 0.779)}


def card_per_query(n: int = 40, seed: int = 3) -> pl.DataFrame:
    """Per-query values whose per-dataset means are exactly the card's numbers (zero-mean noise inside [0, 1])."""
    rng = np.random.default_rng(seed)
    rows = []
    for d, (clean, mobile) in CARD.items():
        for cond, mean in (("clean", clean), ("mobile", mobile)):
            a = 0.45 * min(mean, 1 - mean, 0.1)  # values stay inside [0, 1]
            noise = rng.uniform(-a, a, n)
            values = mean + noise - noise.mean()
            assert values.mean() == pytest.approx(mean, abs=1e-12) and (values >= 0).all() and (values <= 1).all()
            rows += [
                (d, "kalbur", cond, f"q{i:03d}", "nDCG@10", float(v), cond == "mobile") for i, v in enumerate(values)
            ]
    return pl.DataFrame(
        rows, schema=["dataset", "system", "condition", "query_id", "measure", "value", "changed"], orient="row"
    )


def test_card_retention_is_the_mean_of_per_dataset_ratios():
    pq = card_per_query()
    macro = retention_intervals(pq, list(CARD), ["clean", "mobile"], 1000, 0, 0.95).row(0, named=True)
    assert round(macro["retention"] * 100, 1) == 93.7  # the card prints %93.7
    by_hand = np.mean([m / c for c, m in CARD.values()])
    assert macro["retention"] == pytest.approx(by_hand, abs=1e-12)
    assert macro["aggregation"] == "macro" and macro["datasets"] == 4 and macro["changed_queries"] == 160
    assert macro["retention_low"] < macro["retention"] < macro["retention_high"]

    pooled = retention_intervals(pq, list(CARD), ["clean", "mobile"], 1000, 0, 0.95, aggregation="pooled").row(
        0, named=True
    )
    assert round(pooled["retention"] * 100, 1) == 95.3  # what the ratio of dataset-balanced means gives
    assert (
        pooled["aggregation"] == "pooled" and pooled["retention_low"] < pooled["retention"] < pooled["retention_high"]
    )
    assert "each dataset's ratio" in AGGREGATION_LABELS["macro"] and "balanced means" in AGGREGATION_LABELS["pooled"]
    # the difference interval is the same whichever way the ratio is aggregated
    assert macro["delta"] == pytest.approx(pooled["delta"]) and macro["delta_low"] == pytest.approx(pooled["delta_low"])

    per_ds = retention_by_dataset(pq, list(CARD), ["clean", "mobile"])
    got = {r["dataset"]: r["retention"] for r in per_ds.iter_rows(named=True)}
    assert got == pytest.approx({d: m / c for d, (c, m) in CARD.items()})


def test_ratio_interval_resamples_the_same_way_as_the_estimate():
    """An independent bootstrap loop (per resample: per-dataset ratio of means, then their mean) gives the same
    interval, and the interval covers the per-dataset ratios' mean but not the pooled ratio here."""
    rng = np.random.default_rng(5)
    den = {"a": rng.uniform(0.6, 1.0, 30), "b": rng.uniform(0.1, 0.5, 20)}
    num = {"a": den["a"] * 0.99, "b": den["b"] * 0.7}
    r = ratio_interval(num, den, 400, seed=9, confidence=0.9)
    # same generator, same draw order (datasets sorted, one draw of resamples × size per dataset)
    g = np.random.default_rng(9)
    idx = {d: g.integers(0, den[d].size, size=(400, den[d].size)) for d in sorted(den)}
    boot = np.mean([[num[d][i].mean() / den[d][i].mean() for i in idx[d]] for d in sorted(den)], axis=0)
    assert r.low == pytest.approx(np.quantile(boot, 0.05)) and r.high == pytest.approx(np.quantile(boot, 0.95))
    assert r.estimate == pytest.approx((0.99 + 0.7) / 2) and r.significant and r.datasets == 2


def test_ratio_edge_cases():
    zero = ratio_interval({"a": np.zeros(5), "b": np.ones(5) * 0.5}, {"a": np.zeros(5), "b": np.ones(5)}, 200)
    assert zero.estimate == pytest.approx(0.5) and zero.datasets == 1  # a dataset with clean mean 0 has no ratio
    assert ratio_interval({"a": np.zeros(3)}, {"a": np.zeros(3)}, 200).estimate is None
    assert ratio_interval({"a": np.zeros(3)}, {"a": np.zeros(3)}, 200, aggregation="pooled").estimate is None
    with pytest.raises(ValueError, match="different datasets"):
        ratio_interval({"a": np.ones(2)}, {"b": np.ones(2)})
    with pytest.raises(ValueError, match="same, non-empty"):
        ratio_interval({"a": np.ones(2)}, {"a": np.ones(3)})


def test_only_changed_queries_count_and_unchanged_datasets_are_left_out():
    # d1: q1 changed (clean 0.8 -> 0.6), q2 unchanged; d2: nothing changed -> not part of the mean
    pq = pl.DataFrame(
        {
            "dataset": ["d1"] * 4 + ["d2"] * 2,
            "system": ["s"] * 6,
            "condition": ["clean", "clean", "typo", "typo", "clean", "typo"],
            "query_id": ["q1", "q2", "q1", "q2", "q1", "q1"],
            "measure": ["nDCG@10"] * 6,
            "value": [0.8, 0.4, 0.6, 0.4, 0.5, 0.5],
            "changed": [False, False, True, False, False, False],
        }
    )
    r = retention_intervals(pq, ["d1", "d2"], ["clean", "typo"], 200, 0, 0.95).row(0, named=True)
    assert r["retention"] == pytest.approx(0.75) and r["datasets"] == 1 and r["changed_queries"] == 1
    assert r["share_changed"] == pytest.approx(1 / 3) and r["setting"] == "end-to-end"
