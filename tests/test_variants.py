"""Judged variants: a seeded query subset, the headline difference with its paired interval, speed and size ratios,
written as the Kalbur card writes its int8 sentence; and the whole flow with torch, ONNX and int8 rows."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from terazi.analysis import stats
from terazi.analysis.judged import Judgement, judge, subset
from terazi.present.notes import variant_sentence
from terazi.present.tables import leaderboard, variants_table
from terazi.schemas import EvalConfig, ModelCost, Statistics
from tests.conftest import needs_onnx


def per_query(n: int = 300, shift: float = 0.01, seed: int = 0) -> pl.DataFrame:
    """Two datasets of clean nDCG@10 values for `base` and `variant` (variant = base + shift + noise)."""
    rng = np.random.default_rng(seed)
    rows = []
    for ds in ("a", "b"):
        base = rng.uniform(0, 1, n)
        var = np.clip(base + shift + rng.normal(0, 0.02, n), 0, 1)
        for sysname, values in (("base", base), ("variant", var)):
            rows += [
                {
                    "dataset": ds,
                    "system": sysname,
                    "condition": "clean",
                    "query_id": f"q{i}",
                    "measure": "nDCG@10",
                    "value": float(v),
                    "changed": False,
                }
                for i, v in enumerate(values)
            ]
    return pl.DataFrame(rows)


def test_difference_and_interval_on_a_seeded_subset():
    pq = per_query()
    j = judge(pq, "base", "variant", "nDCG@10", ["a", "b"], 100, Statistics(seed=7, bootstrap_resamples=500))
    keys = subset(pq.filter(pl.col("system") == "base"), 100, 7)
    assert keys.height == j.queries == 100 and keys.equals(subset(pq.filter(pl.col("system") == "base"), 100, 7))
    assert not keys.equals(subset(pq.filter(pl.col("system") == "base"), 100, 8))  # the seed picks the queries
    wide = pq.pivot(on="system", index=["dataset", "query_id"], values="value").join(
        keys, on=["dataset", "query_id"], how="semi"
    )
    diffs = (wide["variant"] - wide["base"]).to_numpy()
    assert abs(j.delta - diffs.mean()) < 1e-12  # plain mean over the subset's queries
    ref = stats.paired_difference(
        {"s": wide.sort("dataset", "query_id")["variant"].to_numpy()},
        {"s": wide.sort("dataset", "query_id")["base"].to_numpy()},
        500,
        7,
        0.95,
    )
    assert (j.low, j.high) == (ref.low, ref.high) and j.low < j.delta < j.high
    assert j.verdict == "better"  # a +0.01 shift with little noise is detected
    whole = judge(pq, "base", "variant", "nDCG@10", ["a", "b"], None, Statistics(seed=7, bootstrap_resamples=500))
    assert whole.queries == 600


def test_equivalence_at_the_pairs_margin():
    """No true difference: equivalent within a margin wider than the interval, not shown equivalent within a
    narrower one (a pair's own margin overrides the run's); the run's verdict: p asks the randomization test."""
    pq, settings = per_query(shift=0.0), Statistics(bootstrap_resamples=500, equivalence_margin=0.01)
    args = (pq, "base", "variant", "nDCG@10", ["a", "b"], None)
    assert judge(*args, settings).verdict == "equivalent within δ"
    narrow = judge(*args, settings, margin=0.0005)
    assert narrow.verdict == "not shown equivalent" and narrow.margin == 0.0005
    shifted = judge(
        per_query(shift=0.01),
        "base",
        "variant",
        "nDCG@10",
        ["a", "b"],
        None,
        settings.model_copy(update={"verdict": "p"}),
    )
    assert shifted.verdict == "better"
    config = EvalConfig.model_validate(
        {
            "datasets": [{"path": "x"}],
            "rerankers": [{"name": "r", "kind": "bm25"}, {"name": "r2", "kind": "bm25"}],
            "variants": [{"base": "r", "variant": "r2", "equivalence_margin": 0.05}],
        }
    )
    assert config.variants[0].equivalence_margin == 0.05 and config.equivalence_margin == 0.01


def test_the_cards_sentence():
    j = Judgement(
        "kalbur",
        "kalbur-int8",
        "int8 sürüm",
        "nDCG@10",
        1000,
        0.0,
        -0.0035,
        0.0035,
        0.01,
        "equivalent within δ",
        ModelCost(items=30, seconds=10, size_bytes=2_272_000_000, device="cpu", precision="fp32"),
        ModelCost(items=20, seconds=10, size_bytes=570_000_000, device="cpu", precision="int8"),
    )
    text = variant_sentence(j, "tr")
    assert text.startswith(
        "int8 sürüm: benchmark alt kümesinde (1000 sorgu) nDCG@10 farkı +0.0000 (%95 GA [-0.0035, +0.0035])"
    )  # the Kalbur card, verbatim
    assert text.endswith("; hız 3.0 → 2.0 çift/sn (×0.67); boyut 2.3 GB → 570 MB (×0.25).")
    assert "(%95 GA [-0.0035, +0.0035]), δ = 0.01 içinde eşdeğer; hız" in text  # the margin it was judged at
    assert abs(j.speed_ratio - 2 / 3) < 1e-12
    en = variant_sentence(Judgement("a", "b", "b vs a", "nDCG@10", 50, 0.01, 0.002, 0.02, 0.01, "better"), "en")
    assert en == (
        "b vs a: on a benchmark subset (50 queries) nDCG@10 difference +0.0100 (95% CI [+0.0020, +0.0200]), "
        "significantly better."
    )
    table = variants_table([j], "en")
    assert table.rows[0][:6] == [
        "kalbur-int8",
        "kalbur",
        "1000",
        "+0.0000",
        "[-0.0035, +0.0035]",
        "equivalent within δ",
    ]


def test_interval_labels_follow_the_configured_confidence():
    """A run at confidence 0.9 prints 90% beside its intervals, never the default's 95%."""
    j = Judgement("a", "b", "b vs a", "nDCG@10", 50, 0.01, 0.002, 0.02, 0.01, "better")
    assert "(90% CI [+0.0020, +0.0200])" in variant_sentence(j, "en", 0.9)
    assert "%97.5 GA" in variants_table([j], "tr", 0.975).columns
    board = pl.DataFrame(
        {
            "system": ["s"],
            "group": [1],
            "borda_rank": [1],
            "borda_votes": [0.0],
            "mean_task": [0.5],
            "ci_low": [0.4],
            "ci_high": [0.6],
            "mean_task_type": [0.5],
        }
    )
    assert "99% CI" in leaderboard(board, ["clean"], "en", task_types=1, confidence=0.99).columns


def test_variants_must_name_two_rows():
    from pydantic import ValidationError

    rows = [{"name": "bm25", "kind": "bm25"}]
    with pytest.raises(ValidationError, match="'bm25-int8' vs 'bm25' must name two different rows"):
        EvalConfig(datasets=[{"path": "x"}], rerankers=rows, variants=[{"base": "bm25", "variant": "bm25-int8"}])
    with pytest.raises(ValidationError, match="must name two different rows"):
        EvalConfig(datasets=[{"path": "x"}], rerankers=rows, variants=[{"base": "bm25", "variant": "bm25"}])


@pytest.mark.slow
@needs_onnx
def test_flow_with_torch_onnx_and_int8_rows(prefect_server, tmp_path, tiny_dataset, tiny_cross_encoder):
    from terazi.flows.evaluate import evaluate

    ce = {"kind": "cross-encoder", "model": tiny_cross_encoder, "max_length": 64}
    config = EvalConfig.model_validate(
        {
            "datasets": [{"path": str(tiny_dataset), "name": "tiny"}],
            "rerankers": [
                {"name": "bm25", "kind": "bm25"},
                {"name": "ce", **ce},
                {"name": "ce-onnx", **ce, "backend": "onnx"},
                {"name": "ce-int8", **ce, "backend": "onnx", "quantization": "int8"},
            ],
            "variants": [{"base": "ce", "variant": "ce-int8", "label": "int8"}, {"base": "ce", "variant": "ce-onnx"}],
            "subset": 3,
            "conditions": ["clean", "upper"],
            "depth": 10,
            "rerank_depth": 5,
            "bootstrap_resamples": 200,
            "robustness": "end-to-end",
            "out_dir": str(tmp_path / "results"),
            "cache_dir": str(tmp_path / "cache"),
            "run_name": "r1",
            "offline": True,
        }
    )
    manifest = evaluate(config)
    run = tmp_path / "results" / "r1"
    ids = {r.system: r.identity for r in manifest.reranks}
    assert len({ids["ce"], ids["ce-onnx"], ids["ce-int8"]}) == 3
    judged = pl.read_csv(run / "variants.csv")
    assert judged["queries"].to_list() == [3, 3] and (judged["ci_low"] <= judged["delta"]).all()
    onnx_row = judged.filter(pl.col("variant") == "ce-onnx").row(0, named=True)
    assert onnx_row["delta"] == 0 and onnx_row["verdict"] == "equivalent within δ"  # fp32 ONNX ranks as torch
    assert judged.filter(pl.col("variant") == "ce-int8")["size_ratio"][0] < 0.5
    costs = pl.read_csv(run / "costs.csv")
    by = {r["system"]: r for r in costs.iter_rows(named=True)}
    assert by["ce-int8"]["precision"] == "int8" and by["ce"]["per_second"] > 0 and by["bm25"]["params"] is None
    assert by["first-stage"]["unit"] == "texts" and by["first-stage"]["params"] > 20_000_000
    md = (run / "leaderboard.md").read_text()
    assert "## Judged variants" in md and "- int8: on a benchmark subset (3 queries) nDCG@10 difference" in md
    assert "| Param |" in md.splitlines()[4] and "pairs/s (cpu int8)" in md
    tables = json.loads((run / "tables.json").read_text())
    header = tables["leaderboard"]["columns"]
    assert header[2] == "Param" and header[-2:] == ["Size", "Pairs/s"]
    page = (run / "report.html").read_text()
    assert 'id="costs"' in page and 'id="variants-table"' in page and "int8: on a benchmark subset" in page
    board_html = page.split('<table id="leaderboard">')[1].split("</table>")[0]
    assert ">Param<" in board_html and "Pairs/s" not in board_html  # size and speed: the Cost section, so it fits
    assert "Size, warm speed and latency per query: the Cost section." in page

    from tests.conftest import artifacts_of

    made = artifacts_of(manifest.flow_run_id)
    assert {"terazi-costs", "terazi-variants"} <= set(made)
    assert "int8: on a benchmark subset (3 queries)" in made["terazi-variants"].description
    board = made["terazi-leaderboard"].data
    board = json.loads(board) if isinstance(board, str) else board  # a table artifact's rows, stored as JSON
    assert {"System", "Param", "Size", "Pairs/s"} <= set(board[0])

    again = evaluate(config.model_copy(update={"run_name": "r2"}))  # everything cached: the figures come back
    assert all(r.pairs_scored == 0 for r in again.reranks if r.pairs_needed)
    cached = {r.system: r.cost for r in again.reranks if r.cost}
    assert (
        cached["ce"].cached and cached["ce"].items == {r.system: r.cost for r in manifest.reranks if r.cost}["ce"].items
    )
    row = next(
        r
        for r in json.loads((tmp_path / "results" / "r2" / "tables.json").read_text())["leaderboard"]["rows"]
        if r[1] == "ce"
    )
    assert row[-1].startswith("cached: ") and row[-1].endswith("pairs/s (cpu fp32)")
