"""Retention's two-level bootstrap (queries, then samples within each query) and the samples' share of its variance,
against hand cases and a straightforward loop over the same random draws; and the per-sample values that reach it."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from terazi.analysis.retention import retention_intervals
from terazi.analysis.stats import ratio_interval
from terazi.analysis.two_level import two_level_ratio
from terazi.metrics.per_query import query_values


def samples_of(rng: np.random.Generator, sizes: dict[str, int], k: int) -> tuple[dict, dict]:
    """dataset -> queries × k corrupted values, and dataset -> clean values, inside (0, 1]."""
    num = {d: rng.uniform(0.05, 1, (n, k)) for d, n in sizes.items()}
    den = {d: rng.uniform(0.3, 1, n) for d, n in sizes.items()}
    return num, den


@pytest.mark.parametrize("aggregation", ["macro", "pooled"])
def test_identical_samples_leave_the_queries_interval_and_no_share(aggregation):
    rng = np.random.default_rng(1)
    num, den = samples_of(rng, {"a": 30, "b": 11}, 1)
    same = {d: np.repeat(v, 3, axis=1) for d, v in num.items()}  # three samples, all equal
    one = ratio_interval({d: v[:, 0] for d, v in num.items()}, den, 400, 5, 0.9, aggregation)
    two = two_level_ratio(same, den, 400, 5, 0.9, aggregation)
    assert two.low == pytest.approx(one.low, abs=1e-12) and two.high == pytest.approx(one.high, abs=1e-12)
    assert two.share == pytest.approx(0, abs=1e-9)


def test_a_condition_that_changes_no_score_has_nothing_to_share():
    clean = {"a": np.random.default_rng(2).uniform(0.1, 1, 40)}
    two = two_level_ratio({"a": np.repeat(clean["a"][:, None], 2, axis=1)}, clean, 300, 1, 0.9)
    assert (two.low, two.high) == pytest.approx((1, 1), abs=1e-12) and two.share == 0  # not 1 from rounding alone


def test_alike_queries_with_varying_samples_are_all_the_samples_share():
    sample = np.array([0.2, 0.5, 0.9])
    num = {"a": np.tile(sample, (25, 1)), "b": np.tile(sample[::-1], (8, 1))}  # every query the same samples
    den = {"a": np.full(25, 0.8), "b": np.full(8, 0.6)}
    two = two_level_ratio(num, den, 300, 2, 0.95)
    assert two.share == 1.0  # the queries-only bootstrap does not vary at all
    assert two.low < (sample.mean() / 0.8 + sample.mean() / 0.6) / 2 < two.high  # the samples' spread: all of it
    assert two.high - two.low > 0.1


def loop_two_level(num: dict, den: dict, resamples: int, seed: int, confidence: float) -> tuple[float, float, float]:
    """The two-level bootstrap written out, macro aggregation: per dataset (sorted), per resample, the queries drawn
    one call each from `seed`'s generator, then each drawn query's samples from the child generator, one call per
    resample; the queries-only ratios from the same query draws."""
    q_rng = np.random.default_rng(seed)
    s_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    names = sorted(num)
    drawn = {
        d: [np.sort(q_rng.integers(0, den[d].size, size=(1, den[d].size))[0]) for _ in range(resamples)] for d in names
    }
    one, two = np.zeros((resamples, len(names))), np.zeros((resamples, len(names)))
    for j, d in enumerate(names):
        x, y = num[d], den[d]
        for r in range(resamples):
            k = x.shape[1]
            picks = s_rng.integers(0, k, size=(k, len(drawn[d][r])), dtype=np.uint8).T  # copy i's picks: column i
            corrupted = np.mean([np.mean(x[q, p]) for q, p in zip(drawn[d][r], picks)])
            clean = np.mean([y[q] for q in drawn[d][r]])
            two[r, j] = corrupted / clean
            one[r, j] = np.mean([np.mean(x[q]) for q in drawn[d][r]]) / clean
    one, two = one.mean(axis=1), two.mean(axis=1)
    alpha = 1 - confidence
    low, high = np.quantile(two, [alpha / 2, 1 - alpha / 2])
    return low, high, 1 - np.var(one) / np.var(two)


def test_the_share_is_the_law_of_total_variance_on_a_mean():
    """Clean values all 1 and pooled: the retention is the mean corrupted value, and the two terms are known. Given the
    drawn queries, each drawn copy adds σ²_q / k (σ²_q: its samples' variance, ddof 0), so E[Var(θ* | queries)] =
    mean(σ²_q) / (k n); the queries-only variance is var(query means) / n. Their share, within Monte Carlo error."""
    rng = np.random.default_rng(5)
    n, k = 300, 4
    x = rng.uniform(0, 1, (n, 1)) * 0.25 + rng.uniform(0, 0.6, (n, k))  # queries and samples both vary
    within, between = x.var(axis=1).mean() / k, x.mean(axis=1).var()
    assert 0.2 < within / (within + between) < 0.8  # a case where either term matters (0.33)
    two = two_level_ratio({"d": x}, {"d": np.ones(n)}, 4000, 3, 0.95, "pooled")
    assert two.share == pytest.approx(within / (within + between), abs=0.035)  # the estimate's sd: 0.012


def test_the_vectorised_bootstrap_is_the_loop_over_the_same_draws():
    rng = np.random.default_rng(7)
    num, den = samples_of(rng, {"x": 9, "y": 5, "z": 14}, 4)
    # chunk_cells=1: one resample per generator call, as the loop draws them
    two = two_level_ratio(num, den, 200, 11, 0.9, "macro", chunk_cells=1)
    low, high, share = loop_two_level(num, den, 200, 11, 0.9)
    assert (two.low, two.high, two.share) == pytest.approx((low, high, share), abs=1e-12)
    assert 0 < two.share < 1
    assert two_level_ratio(num, den, 200, 11, 0.9) == two_level_ratio(num, den, 200, 11, 0.9)  # seeded


def test_retention_gains_the_two_level_columns_only_with_several_samples():
    rng = np.random.default_rng(3)
    rows, samples = [], []
    for d, n in (("a", 12), ("b", 7)):
        for i in range(n):
            q, clean, draws = f"q{i:02d}", float(rng.uniform(0.4, 1)), rng.uniform(0, 1, 3)
            rows += [(d, "s", "clean", q, float(clean), False), (d, "s", "typo", q, float(draws.mean()), True)]
            rows += [(d, "s", "upper", q, float(clean) * 0.9, i % 2 == 0)]
            samples += [(d, "s", "typo", k, q, float(v)) for k, v in enumerate(draws)]
    pq = pl.DataFrame(rows, schema=["dataset", "system", "condition", "query_id", "value", "changed"], orient="row")
    per_sample = pl.DataFrame(
        samples, schema=["dataset", "system", "condition", "sample", "query_id", "value"], orient="row"
    )
    conditions = ["clean", "typo", "upper"]
    before = retention_intervals(pq, ["a", "b"], conditions, 300, 4, 0.95)
    after = retention_intervals(pq, ["a", "b"], conditions, 300, 4, 0.95, samples=per_sample)
    assert after.select(before.columns).equals(before)  # the columns there were keep their values
    assert after.columns[len(before.columns) :] == [
        "samples",
        "retention_low_two_level",
        "retention_high_two_level",
        "samples_share",
    ]
    typo, upper = after.row(0, named=True), after.row(1, named=True)
    assert typo["samples"] == 3 and 0 < typo["samples_share"] < 1
    assert typo["retention_low_two_level"] < typo["retention"] < typo["retention_high_two_level"]
    assert upper["samples"] == 1 and upper["samples_share"] is None  # a deterministic condition: nothing to add
    with pytest.raises(ValueError, match="each of the 3 samples"):
        retention_intervals(pq, ["a", "b"], conditions, 300, 4, 0.95, samples=per_sample.slice(1))


def test_each_samples_values_are_kept_beside_their_mean():
    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 1}}
    ranked = pl.DataFrame(
        [
            ("clean", 0, "q1", "d1", 1, 2.0),
            ("clean", 0, "q2", "d3", 1, 2.0),
            ("typo", 0, "q1", "d2", 1, 2.0),
            ("typo", 0, "q1", "d1", 2, 1.0),
            ("typo", 0, "q2", "d3", 1, 1.0),
            ("typo", 1, "q1", "d1", 1, 2.0),  # sample 1 ranks q2 nowhere: 0
        ],
        schema=["condition", "sample", "query_id", "doc_id", "rank", "score"],
        orient="row",
    )
    changed = pl.DataFrame({"condition": ["typo", "typo"], "query_id": ["q1", "q2"], "changed": [True, True]})
    values = query_values(qrels, ranked, changed, ["RR@10"])
    each = values.sample_rows().sort("query_id", "sample")
    assert each["condition"].unique().to_list() == ["typo"]  # clean has one sample: none kept
    assert each.select("query_id", "sample", "value").rows() == [
        ("q1", 0, 0.5),
        ("q1", 1, 1.0),
        ("q2", 0, 1.0),
        ("q2", 1, 0.0),
    ]
    means = values.rows().filter(pl.col("condition") == "typo").sort("query_id")["value"].to_list()
    assert means == [0.75, 0.5]
