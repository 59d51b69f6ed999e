"""The whole evaluation flow on tiny data, under a temporary Prefect API."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from terazi.schemas import EvalConfig
from tests.conftest import TINY_FLAGS, three_rerankers, tiny_config


@pytest.fixture
def config(tmp_path, tiny_dataset, tiny_cross_encoder):
    return EvalConfig.model_validate(
        tiny_config(
            tmp_path,
            tiny_dataset,
            rerankers=three_rerankers(tiny_cross_encoder),
            conditions=["clean", "upper", "typo"],
            corruption={"samples": 2},
            run_name="r1",
        )
    )


def test_flow_end_to_end_then_reuses_everything(prefect_server, config, tmp_path, monkeypatch):

    from terazi.flows.evaluate import evaluate

    m1 = evaluate(config)
    from tests.conftest import artifacts_of

    made = artifacts_of(m1.flow_run_id)
    assert {"terazi-leaderboard", "terazi-ranks", "terazi-card", "terazi-report"} <= set(made)
    assert "Rank intervals" in made["terazi-card"].data and "model-index" in made["terazi-card"].data
    run = tmp_path / "results" / "r1"
    for name in (
        "leaderboard.csv",
        "leaderboard.md",
        "manifest.json",
        "per_query.parquet",
        "conditions.csv",
        "candidates/tiny/clean.trec",
        "candidates/tiny/typo-1.trec",
    ):
        assert (run / name).is_file(), name
    board = pl.read_csv(run / "leaderboard.csv")
    assert set(board["system"]) == {"first-stage", "bm25", "tiny-ce", "hybrid"}
    assert {"upper", "typo", "upper retention", "typo retention", "group", "ci_low", "ci_high"} <= set(board.columns)
    assert (board["ci_low"] <= board["mean_task"]).all() and (board["mean_task"] <= board["ci_high"]).all()
    page = (run / "report.html").read_text()
    for anchor in (
        'id="leaderboard"',
        'id="per-dataset"',
        'id="robustness"',
        'id="pairwise-summary"',
        'id="pairwise"',
        'id="plot-scores"',
        'id="plot-retention"',
        'id="ranks"',
        'id="plot-ranks"',
    ):
        assert anchor in page, anchor
    assert page.count('src="data:image/png;base64,') == 3 and "http" not in page.split("<body>")[1][:200]
    comparisons = pl.read_csv(run / "comparisons.csv")
    assert comparisons.height == 6 * 3  # 4 systems -> 6 pairs, 1 dataset x 3 conditions
    assert set(comparisons["verdict"]) <= {"better", "no difference", "worse"}
    retention = pl.read_csv(run / "retention.csv")
    assert set(retention["condition"]) == {"upper", "typo"} and retention.height == 8 + 6  # + isolated, rerankers only
    # the isolated setting reorders the clean query's candidates with the corrupted text
    bm25 = pl.read_parquet(run / "rankings" / "tiny" / "bm25.parquet").filter(pl.col("rank") <= 5)
    heads = {
        c: bm25.filter((pl.col("condition") == c) & (pl.col("sample") == 0))
        .group_by("query_id")
        .agg(pl.col("doc_id").sort())
        .sort("query_id")
        for c in ("clean", "upper~isolated")
    }
    assert heads["clean"].equals(heads["upper~isolated"])
    robust = pl.read_csv(run / "robustness.csv")
    assert robust.height == 8 and robust["first_stage_recall"].is_not_null().all()
    assert robust.filter(pl.col("system") != "first-stage")["reranker_only"].is_not_null().all()
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["candidates"][0]["fingerprint"] == m1.candidates[0].fingerprint
    assert manifest["config"]["rerank_depth"] == 5
    conditions = pl.read_csv(run / "conditions.csv")
    assert conditions.filter(pl.col("condition") == "upper")["share_changed"][0] == 1.0
    pq = pl.read_parquet(run / "per_query.parquet")
    assert (
        pq.filter(
            (pl.col("system") == "bm25") & (pl.col("condition") == "clean") & (pl.col("measure") == "nDCG@10")
        ).height
        == 4
    )
    ce = next(r for r in m1.reranks if r.system == "tiny-ce")
    assert not m1.candidates[0].reused and ce.pairs_scored > 0

    # second run: frozen candidates and score cache are reused, nothing is encoded or scored, and every interval of
    # the statistics and the card is found in the cache folder (terazi.store.bootstraps), none drawn again
    from terazi.analysis import stats

    drawn, draws = [], stats.draws
    with monkeypatch.context() as mp:
        mp.setattr(stats, "draws", lambda *a: drawn.append(a) or draws(*a))
        m2 = evaluate(config.model_copy(update={"run_name": "r2"}))
    assert drawn == []
    assert m2.candidates[0].reused and m2.candidates[0].fingerprint == m1.candidates[0].fingerprint
    assert all(r.pairs_scored == 0 for r in m2.reranks)
    assert pl.read_csv(tmp_path / "results" / "r2" / "leaderboard.csv").equals(board)

    # the candidate fingerprint changes with depth
    m3 = evaluate(config.model_copy(update={"run_name": "r3", "depth": 8}))
    assert m3.candidates[0].fingerprint != m1.candidates[0].fingerprint

    from tests.conftest import artifacts_of

    assert {"terazi-leaderboard", "terazi-report", "terazi-retention", "terazi-comparisons"} <= set(
        artifacts_of(m3.flow_run_id)
    )


def test_malformed_dataset_stops_the_run_with_file_and_line(prefect_server, tmp_path, tiny_dataset):
    from terazi.cli import app

    with open(tiny_dataset / "qrels" / "test.tsv", "a") as f:
        f.write("q1\tnope\t1\n")
    run = ["run", "--dataset", str(tiny_dataset), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache")]
    result = CliRunner().invoke(app, [*run, "--offline"])
    assert result.exit_code == 2
    assert "test.tsv, line 13: unknown document id 'nope'" in result.output.replace("\n", "")


def test_cli_run_on_a_beir_folder(prefect_server, tmp_path, tiny_dataset):
    from terazi.cli import app

    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--dataset",
            str(tiny_dataset),
            "--out",
            str(out),
            "--cache",
            str(tmp_path / "cache"),
            *TINY_FLAGS,
            "--offline",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "first-stage" in result.output and "hybrid-rrf" in result.output
    assert (out / "leaderboard.csv").is_file() and (out / "candidates" / "tiny" / "upper.trec").is_file()


def test_cli_run_from_a_yaml_config_with_flag_overrides(prefect_server, tmp_path, tiny_dataset):
    from terazi.cli import app

    cfg = tmp_path / "eval.yaml"
    cfg.write_text(f"""
datasets:
  - {{path: {tiny_dataset}, name: from-yaml}}
rerankers:
  - {{name: lexical, kind: bm25, k1: 1.2}}
conditions: [clean, ascii_full]
depth: 10
rerank_depth: 4
cache_dir: {tmp_path / "cache"}
offline: true
""")
    out = tmp_path / "yaml-run"
    result = CliRunner().invoke(app, ["run", "--config", str(cfg), "--out", str(out), "--rerank-depth", "3"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["rerank_depth"] == 3 and manifest["config"]["rerankers"][0]["k1"] == 1.2
    assert set(pl.read_csv(out / "leaderboard.csv")["system"]) == {"first-stage", "lexical"}
    assert "ascii_full" in pl.read_csv(out / "conditions.csv")["condition"].to_list()


def test_a_failed_artifact_upload_fails_the_run_but_leaves_its_results_complete(
    prefect_server, config, tmp_path, monkeypatch
):
    import terazi.flows.evaluate as evaluate_flow
    from terazi.flows import lifecycle
    from terazi.schemas.layout import RunLayout

    def down(*_):
        raise ConnectionError("injected: the Prefect API went away")

    monkeypatch.setattr(lifecycle, "publish", down)
    small = config.model_copy(update={"rerankers": config.rerankers[:1], "conditions": ["clean"], "run_name": "up"})
    with pytest.raises(ConnectionError):
        evaluate_flow.evaluate(small)
    run = tmp_path / "results" / "up"
    assert RunLayout(run).is_complete() and (run / "manifest.json").is_file() and (run / "leaderboard.csv").is_file()
