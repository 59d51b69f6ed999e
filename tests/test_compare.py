"""`terazi compare`: two runs with one system changed report that system's cells; two systems of one run;
the nightly's changes.md comes from the same comparison."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from terazi.cli import app
from terazi.present.changes import changes_since as nightly_changes
from terazi.schemas import EvalConfig, Statistics


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, tiny_cross_encoder, prefect_server):
    from terazi.flows.evaluate import evaluate
    from tests.conftest import make_tiny, tiny_config

    tmp = tmp_path_factory.mktemp("cmp")
    data = make_tiny(tmp / "tiny")
    base = tiny_config(tmp, data, bootstrap_resamples=200)
    bm25 = {"name": "bm25", "kind": "bm25"}
    evaluate(
        EvalConfig.model_validate({**base, "run_name": "a", "rerankers": [bm25, {"name": "mine", "kind": "bm25"}]})
    )
    changed = {"name": "mine", "kind": "cross-encoder", "model": tiny_cross_encoder, "max_length": 64}
    evaluate(EvalConfig.model_validate({**base, "run_name": "b", "rerankers": [bm25, changed]}))
    return tmp / "results" / "a", tmp / "results" / "b"


def _means(run, system, condition):
    pq = pl.read_parquet(run / "per_query.parquet")
    return pq.filter(
        (pl.col("system") == system) & (pl.col("condition") == condition) & (pl.col("measure") == "nDCG@10")
    )["value"].mean()


def test_compare_two_runs_reports_the_changed_system(two_runs):
    a, b = two_runs
    res = CliRunner().invoke(app, ["compare", str(a), str(b), "--format", "json", "--resamples", "200"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["measure"] == "nDCG@10" and out["added"] == [] and out["removed"] == []
    cells = pl.DataFrame(out["cells"])
    assert cells.select("system", "dataset", "condition").sort("system", "condition").rows() == [
        ("bm25", "tiny", "clean"),
        ("bm25", "tiny", "upper"),
        ("first-stage", "tiny", "clean"),
        ("first-stage", "tiny", "upper"),
        ("mine", "tiny", "clean"),
        ("mine", "tiny", "upper"),
    ]
    for r in cells.iter_rows(named=True):
        expected = _means(b, r["system"], r["condition"]) - _means(a, r["system"], r["condition"])
        assert abs(r["delta"] - expected) < 1e-12 and r["queries"] == 4
        assert r["ci_low"] <= r["delta"] <= r["ci_high"]
        assert r["verdict"] in ("better", "worse", "equivalent within δ", "not shown equivalent")
        assert r["p_randomization"] <= r["p_adjusted"] <= 1  # Benjamini–Hochberg over the six cells
    untouched = cells.filter(pl.col("system") != "mine")
    assert (untouched["delta"] == 0).all() and (untouched["verdict"] == "equivalent within δ").all()
    assert (untouched["p_randomization"] == 1).all() and untouched["effect_size"].is_null().all()
    assert out["correction"] == "bh" and out["equivalence_margin"] == 0.01
    assert (cells.filter(pl.col("system") == "mine")["delta"].abs() > 0).any()

    table = CliRunner().invoke(app, ["compare", str(a), str(b), "--resamples", "200"])
    assert table.exit_code == 0, table.output
    assert "cells that changed" in table.output and "mine" in table.output
    assert "unchanged in every cell: first-stage, bm25" in table.output
    md = CliRunner().invoke(app, ["compare", str(a), str(b), "--format", "markdown", "--resamples", "200"])
    assert "| mine | tiny | clean |" in md.output and "| bm25 | tiny |" not in md.output


def test_compare_two_systems_of_one_run(two_runs):
    _, b = two_runs
    res = CliRunner().invoke(
        app, ["compare", str(b), "--systems", "mine", "bm25", "--format", "json", "--all", "--resamples", "200"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    for r in out["cells"]:
        assert r["system"] == "mine" and r["versus"] == "bm25"
        assert abs(r["delta"] - (_means(b, "mine", r["condition"]) - _means(b, "bm25", r["condition"]))) < 1e-12
    bad = CliRunner().invoke(app, ["compare", str(b), "--systems", "mine", "nope"])
    assert bad.exit_code == 2 and "no system(s) ['nope']" in bad.output
    neither = CliRunner().invoke(app, ["compare", str(b)])
    assert neither.exit_code == 2 and "--systems" in neither.output


def test_nightly_changes_use_the_same_comparison(two_runs):
    a, b = two_runs
    text = nightly_changes(a, b, "nDCG@10", Statistics(bootstrap_resamples=200))
    from terazi.analysis.comparison import compare_runs

    cmp = compare_runs(a, b, "nDCG@10", Statistics(bootstrap_resamples=200))
    for r in cmp.significant().iter_rows(named=True):
        assert f"- {r['system']} on {r['dataset']} / {r['condition']}: {r['delta']:+.4f}" in text
    assert "bm25 on tiny" not in text


def test_nightly_lists_significant_cells(tmp_path):
    import numpy as np

    from tests.test_changes import fake_run

    base = np.random.default_rng(1).uniform(0.2, 0.8, 100)
    a = fake_run(tmp_path / "a", [("x", 1, 1), ("y", 2, 1)], {"x": base, "y": base})
    b = fake_run(tmp_path / "b", [("x", 1, 1), ("y", 2, 1)], {"x": base, "y": base + 0.3})
    text = nightly_changes(a, b, "nDCG@10", Statistics(bootstrap_resamples=300))
    assert "- y on d / clean: +0.3000 [+0.3000, +0.3000] (better)" in text
    assert "x on d" not in text
