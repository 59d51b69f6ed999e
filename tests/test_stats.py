"""Bootstrap intervals cover what they should; identical systems are rarely called different."""

from __future__ import annotations

import numpy as np
import pytest

from terazi.analysis.stats import balanced_bootstrap, interval, paired_difference, significance_groups


def test_balanced_means_weight_datasets_equally():
    values = {"big": np.ones(1000), "small": np.zeros(10)}
    boot = balanced_bootstrap(values, n_resamples=50, seed=1)
    assert np.allclose(boot, 0.5)  # not 1000/1010


def test_interval_covers_a_known_difference_about_95_percent():
    """300 simulated benchmarks, two datasets, true difference 0.03: coverage 95% ± 3.5 points."""
    rng = np.random.default_rng(7)
    true_delta, covered = 0.03, 0
    for sim in range(300):
        a, b = {}, {}
        for name, n in (("d1", 150), ("d2", 60)):
            base = rng.uniform(0, 1, n)
            a[name] = base + true_delta + rng.normal(0, 0.2, n)
            b[name] = base + rng.normal(0, 0.2, n)
        ci = paired_difference(a, b, n_resamples=1000, seed=sim)
        covered += ci.low <= true_delta <= ci.high
    assert 0.915 <= covered / 300 <= 0.985, covered / 300


def test_identical_systems_are_rarely_declared_different():
    """Exchangeable systems: the 95% interval excludes 0 in about 5% of benchmarks (≤ 8.5% here)."""
    rng = np.random.default_rng(11)
    false_alarms = 0
    for sim in range(300):
        a, b = {}, {}
        for name, n in (("d1", 120), ("d2", 80)):
            base = rng.uniform(0, 1, n)
            a[name] = np.clip(base + rng.normal(0, 0.15, n), 0, 1)
            b[name] = np.clip(base + rng.normal(0, 0.15, n), 0, 1)
        false_alarms += paired_difference(a, b, n_resamples=1000, seed=sim).significant
    assert false_alarms / 300 <= 0.085, false_alarms / 300


def test_interval_fields_and_errors():
    ci = interval({"d": np.array([0.1, 0.2, 0.3, 0.4])}, n_resamples=500, seed=0)
    assert ci.estimate == pytest.approx(0.25) and ci.low < 0.25 < ci.high and ci.p_value < 0.05
    with pytest.raises(ValueError, match="different datasets"):
        paired_difference({"a": np.ones(2)}, {"b": np.ones(2)})
    with pytest.raises(ValueError, match="aligned"):
        paired_difference({"a": np.ones(2)}, {"a": np.ones(3)})


def test_groups():
    assert significance_groups(["A", "B", "C", "D"], [False, True, False]) == {"A": 1, "B": 1, "C": 2, "D": 2}


def test_thousands_of_resamples_of_thousands_of_queries_is_vectorised():
    rng = np.random.default_rng(0)
    values = {"d1": rng.random(3000), "d2": rng.random(2000)}
    boot = balanced_bootstrap(values, n_resamples=2000, seed=0)
    assert boot.shape == (2000,) and abs(boot.mean() - np.mean([v.mean() for v in values.values()])) < 0.005


def test_shared_draws_are_the_queries_a_generator_of_the_seed_draws():
    """The counts are the resamples an interval drawing its own indexes would draw (the same generator calls, in the
    same chunks), so every mean is the gathered mean to rounding; drawn once per seed and sizes, reused after."""
    from terazi.analysis.stats import draws, resampled_means

    rng_values = np.random.default_rng(3)
    values = {"a": rng_values.random(700), "b": rng_values.random(45)}
    chunk = 50_000  # several chunks per dataset
    counts = draws((700, 45), 300, 11, chunk)
    assert draws((700, 45), 300, 11, chunk) is counts
    rng = np.random.default_rng(11)
    for (_name, v), c in zip(sorted(values.items()), counts):
        step = max(1, chunk // v.size)
        gathered = np.concatenate(
            [
                v[rng.integers(0, v.size, size=(min(300, s + step) - s, v.size))].mean(axis=1)
                for s in range(0, 300, step)
            ]
        )
        assert c.shape == (300, v.size) and (c.rows(0, 300).sum(axis=1) == v.size).all()
        assert c.nbytes == 300 * ((v.size + 1) // 2)  # two counts to a byte
        np.testing.assert_allclose(resampled_means([v], c, chunk)[0], gathered, rtol=1e-13, atol=0)
    boot = balanced_bootstrap(values, 300, 11, chunk)
    assert np.allclose(
        boot, (resampled_means([values["a"]], counts[0])[0] + resampled_means([values["b"]], counts[1])[0]) / 2
    )
    with pytest.raises(ValueError, match="finite"):
        resampled_means([np.array([0.5, np.nan])], draws((2,), 10, 0, chunk)[0])


def test_counts_are_given_back_as_drawn_packed_or_not():
    """Counts below 16 are kept two to a byte, a block holding a larger one a byte each; any range of rows, across
    blocks, comes back as the counts themselves (odd and even query counts)."""
    from terazi.analysis.stats import Counts

    rng = np.random.default_rng(4)
    for size in (1, 6, 7):
        blocks = [rng.poisson(1.0, (5, size)), rng.poisson(1.0, (3, size)), rng.poisson(1.0, (4, size))]
        blocks[1][0, 0] = 300  # this block's counts need two bytes
        counts = Counts(size)
        for b in blocks:
            counts.add(b)
        whole = np.vstack(blocks)
        assert counts.shape == (12, size) and [packed for packed, _ in counts.blocks] == [True, False, True]
        for start, stop in [(0, 12), (2, 9), (5, 8), (11, 12), (3, 3)]:
            got = counts.rows(start, stop)
            assert got.dtype == np.float64 and got.flags.c_contiguous and np.array_equal(got, whole[start:stop])
