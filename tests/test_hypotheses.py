"""The randomization test, the adjustments, the equivalence test and the minimum detectable effect equal what the
field's references (scipy, statsmodels) compute on the same numbers."""

from __future__ import annotations

import numpy as np
import pytest

from terazi.analysis.hypotheses import adjust, adjust_families, detectable_effect, effect_size, randomization
from terazi.analysis.stats import EQUIVALENT, NOT_EQUIVALENT, paired_difference

stats = pytest.importorskip("scipy.stats")
multitest = pytest.importorskip("statsmodels.stats.multitest")
power = pytest.importorskip("statsmodels.stats.power")
weightstats = pytest.importorskip("statsmodels.stats.weightstats")


def _scipy_p(x: np.ndarray, y: np.ndarray, split: int | None = None, n_resamples: float = np.inf) -> float:
    """scipy's paired permutation test of the (dataset-balanced, when `split` cuts two datasets) mean difference."""

    def statistic(a, b, axis):
        d = a - b
        if split is None:
            return np.mean(d, axis=axis)
        return (np.mean(d[..., :split], axis=axis) + np.mean(d[..., split:], axis=axis)) / 2

    return stats.permutation_test(
        (x, y), statistic, permutation_type="samples", vectorized=True, n_resamples=n_resamples, random_state=0
    ).pvalue


def test_exact_randomization_equals_scipy():
    rng = np.random.default_rng(3)
    for n in (5, 9, 12, 16):
        x, y = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
        y[:2] += 0.3 * (n % 2)  # some cells far from 0, some near
        got = randomization({"d": x - y}, n_resamples=2**n)
        assert got.exact and abs(got.p_value - _scipy_p(x, y)) <= 1e-12, n
    # balanced by dataset: two datasets of 10 and 4 queries weigh the same
    x, y = rng.uniform(0, 1, 14), rng.uniform(0, 1, 14) - 0.2
    got = randomization({"a": (x - y)[:10], "b": (x - y)[10:]}, n_resamples=2**14)
    assert abs(got.p_value - _scipy_p(x, y, split=10)) <= 1e-12
    # ties: differences of 0 flip nothing, equal magnitudes tie; identical systems are p = 1
    x = np.array([0.5, 0.5, 0.0, 1.0, 0.2, 0.2, 0.7, 0.1])
    y = np.array([0.0, 0.0, 0.0, 0.5, 0.2, 0.0, 0.2, 0.1])
    assert abs(randomization({"d": x - y}, n_resamples=256).p_value - _scipy_p(x, y)) <= 1e-12
    assert randomization({"d": np.zeros(50)}).p_value == 1.0


def test_resampled_randomization_within_three_monte_carlo_errors():
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 1, 18)
    y = x + rng.normal(0, 0.25, 18)
    exact = _scipy_p(x, y)
    got = randomization({"d": x - y}, n_resamples=4000, seed=1)
    assert not got.exact and 0.01 < exact < 0.5
    assert abs(got.p_value - exact) <= 3 * np.sqrt(exact * (1 - exact) / 4000), (got.p_value, exact)


def test_holm_and_bh_equal_statsmodels():
    rng = np.random.default_rng(8)
    p = np.concatenate([rng.uniform(0, 0.05, 12), rng.uniform(0, 1, 25), [0.01, 0.01, 1.0]])
    for ours, theirs in (("holm", "holm"), ("bh", "fdr_bh")):
        want = multitest.multipletests(p, method=theirs)[1]
        assert np.max(np.abs(adjust(p, ours) - want)) <= 1e-12, ours
    assert np.array_equal(adjust(p, "none"), p)
    by_pair = adjust_families([0.01, 0.04, 0.02, 0.03], ["a", "b", "a", "b"], "holm")
    assert np.allclose(by_pair, [0.02, 0.06, 0.02, 0.06])  # each pair a family of two


def test_minimum_detectable_effect_equals_statsmodels():
    rng = np.random.default_rng(2)
    for n, alpha in ((10, 0.05), (58, 0.05), (1024, 0.01)):
        d = rng.normal(0.01, 0.2, n)
        want = power.TTestPower().solve_power(nobs=n, alpha=alpha, power=0.8, alternative="two-sided") * d.std(ddof=1)
        assert abs(detectable_effect(n, alpha).effect * d.std(ddof=1) - want) <= 1e-6, n
    assert detectable_effect(1, 0.05).effect is None
    assert effect_size(np.array([0.1, 0.3])) == pytest.approx(0.2 / np.std([0.1, 0.3], ddof=1))
    assert effect_size(np.zeros(5)) is None


def test_equivalence_agrees_with_statsmodels_where_it_is_decisive():
    rng = np.random.default_rng(4)
    margin, decided = 0.03, []
    cases = [(0.0, 0.1), (0.005, 0.1), (0.01, 0.1), (0.02, 0.1), (0.04, 0.1), (0.06, 0.1), (0.04, 0.4)]
    for sim, (shift, noise) in enumerate(cases):
        base = rng.uniform(0, 1, 300)
        a, b = base + shift + rng.normal(0, noise, 300), base + rng.normal(0, noise, 300)
        p = weightstats.ttost_paired(a, b, -margin, margin)[0]
        ci = paired_difference({"d": a}, {"d": b}, n_resamples=2000, seed=sim, confidence=0.95)
        if p < 0.01 or p > 0.5:
            assert ci.equivalent(margin) == (p < 0.01), (shift, p, ci)
            decided.append(p < 0.01)
    assert sum(decided) >= 2 and len(decided) - sum(decided) >= 2, decided
    assert not ci.significant and ci.judged(margin) == NOT_EQUIVALENT  # the noisy last case: too wide to tell
    same = paired_difference({"d": np.full(40, 0.5)}, {"d": np.full(40, 0.5)}, n_resamples=200)
    assert same.judged(0.01) == EQUIVALENT


def test_settings_are_declared_once_and_the_older_holm_still_reads():
    from terazi.schemas import AnalyzeConfig, EvalConfig, Statistics

    for model in (EvalConfig, AnalyzeConfig):
        assert all(model.model_fields[k].default == f.default for k, f in Statistics.model_fields.items())
    assert Statistics().seed == 13 and Statistics().correction == "bh" and Statistics().verdict == "interval"
    older = Statistics.model_validate({"holm": True, "confidence": 0.9})
    assert (older.correction, older.correction_scope, older.verdict) == ("holm", "pair", "interval")
    assert "Holm across each pair's cells" in older.contract() and "Holm-adjusted bootstrap" in older.contract()
    with pytest.raises(ValueError, match="holm: true means"):
        Statistics.model_validate({"holm": True, "correction": "bh"})
    line = Statistics().contract()
    assert "paired randomization test" in line and "Benjamini–Hochberg across every comparison" in line
    assert "decided by the bootstrap interval" in line and "δ = 0.01" in line


def test_datasets_mde_is_the_top_two_systems_and_the_median_pair():
    import polars as pl

    from terazi.analysis.intervals import detectable_differences, uninformative_cells

    rng = np.random.default_rng(6)
    values = {s: rng.uniform(0, 1, 40) for s in ("a", "b", "c")}
    pq = pl.DataFrame(
        [("d", s, "clean", f"q{i:02d}", float(v)) for s, vs in values.items() for i, v in enumerate(vs)],
        schema=["dataset", "system", "condition", "query_id", "value"],
        orient="row",
    )
    row = detectable_differences(pq, ["d"], ["b", "a", "c"], 0.05).row(0, named=True)
    effect = power.TTestPower().solve_power(nobs=40, alpha=0.05, power=0.8, alternative="two-sided")
    sds = [np.std(values[x] - values[y], ddof=1) for x, y in (("b", "a"), ("b", "c"), ("a", "c"))]
    assert abs(row["mde"] - effect * sds[0]) <= 1e-6 and abs(row["mde_median"] - effect * np.median(sds)) <= 1e-6
    cells = pl.DataFrame(
        {"dataset": ["d"] * 2, "verdict": ["no difference"] * 2, "ci_low": [-0.01, -1.0], "ci_high": [0.01, 1.0]}
    )
    flagged = uninformative_cells(cells, pl.DataFrame({"dataset": ["d"], "mde": [row["mde"]]})).row(0, named=True)
    assert (flagged["cells"], flagged["of"]) == (1, 2)  # the narrow interval, not the wide one
