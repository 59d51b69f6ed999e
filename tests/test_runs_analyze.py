"""TREC runs in the results folder: they rescore to the leaderboard's numbers, and `terazi analyze` on them
reproduces the leaderboard `terazi run` wrote."""

from __future__ import annotations

import json
import shutil

import numpy as np
import polars as pl
import pytest
import pytrec_eval
from typer.testing import CliRunner

from terazi.cli import app
from terazi.schemas import EvalConfig
from tests.conftest import three_rerankers, tiny_config


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory, tiny_cross_encoder, prefect_server):
    """One `terazi run` with a model reranker, a fusion, and a stochastic condition with two samples."""
    from terazi.flows.evaluate import evaluate
    from tests.conftest import make_tiny

    tmp = tmp_path_factory.mktemp("runs")
    data = make_tiny(tmp / "tiny")
    config = EvalConfig.model_validate(
        tiny_config(
            tmp,
            data,
            rerankers=three_rerankers(tiny_cross_encoder),
            conditions=["clean", "upper", "typo"],
            corruption={"samples": 2},
            bootstrap_resamples=300,
            run_name="r",
        )
    )
    evaluate(config)
    return tmp / "results" / "r", config


def test_every_system_has_trec_runs_that_rescore_to_the_leaderboard(evaluated):
    run, config = evaluated
    board = pl.read_csv(run / "leaderboard.csv")
    systems = board["system"].to_list()
    assert sorted(p.stem for p in (run / "runs" / "tiny" / "clean").glob("*.trec")) == sorted(systems)
    assert sorted(p.name for p in (run / "runs" / "tiny" / "typo").iterdir()) == ["sample-0", "sample-1"]
    assert (run / "changed" / "tiny" / "upper.txt").read_text().split() == ["q1", "q2", "q3", "q4"]
    qrels = run / "qrels" / "tiny.tsv"
    for system in systems:
        trec = run / "runs" / "tiny" / "clean" / f"{system}.trec"
        # the fifth column gives back the flow's ranking exactly when read by score, as trec_eval reads it
        ranking = pl.read_parquet(run / "rankings" / "tiny" / f"{system}.parquet").filter(
            pl.col("condition") == "clean"
        )
        lines = [line.split() for line in trec.read_text().splitlines()]
        by_score = {}
        for q, _, d, _, s, tag in lines:
            by_score.setdefault(q, []).append((float(s), d))
            assert tag == system
        for q, part in ranking.group_by("query_id"):
            assert [d for _, d in sorted(by_score[q[0]], reverse=True)] == part.sort("rank")["doc_id"].to_list()
        # `terazi score` on the file gives the leaderboard's per-dataset number, and so does pytrec_eval
        res = CliRunner().invoke(
            app,
            ["score", "--qrels", str(qrels), "--run", str(trec), "-m", "nDCG@10", "--format", "json", "--per-query"],
        )
        assert res.exit_code == 0, res.output
        value = json.loads(res.output)["aggregate"]["nDCG@10"]
        assert abs(value - board.filter(pl.col("system") == system)["tiny"][0]) < 1e-12
        with open(qrels) as fq, open(trec) as fr:
            ref = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(fq), {"ndcg_cut.10"}).evaluate(
                pytrec_eval.parse_run(fr)
            )
        assert abs(np.mean([v["ndcg_cut_10"] for v in ref.values()]) - value) < 1e-12
    # a condition with two samples: the mean of the two files' per-query values is the per-query table's value
    pq = pl.read_parquet(run / "per_query.parquet").filter(
        (pl.col("system") == "bm25") & (pl.col("condition") == "typo") & (pl.col("measure") == "nDCG@10")
    )
    per_sample = []
    for k in (0, 1):
        res = CliRunner().invoke(
            app,
            [
                "score",
                "--qrels",
                str(qrels),
                "--run",
                str(run / "runs" / "tiny" / "typo" / f"sample-{k}" / "bm25.trec"),
                "-m",
                "nDCG@10",
                "--format",
                "json",
                "--per-query",
            ],
        )
        per_sample.append(json.loads(res.output)["per_query"]["nDCG@10"])
    for q, v in pq.select("query_id", "value").iter_rows():
        assert abs((per_sample[0][q] + per_sample[1][q]) / 2 - v) < 1e-12


def test_analyze_on_the_runs_reproduces_the_leaderboard(evaluated, tmp_path):
    run, config = evaluated
    folder = tmp_path / "mine"  # only what a team that ran its models elsewhere would have
    for part in ("runs", "qrels", "changed"):
        shutil.copytree(run / part, folder / part)
    (folder / "datasets.yaml").write_text("tiny: {task_type: retrieval, in_ranking: true}\n")
    res = CliRunner().invoke(
        app,
        [
            "analyze",
            str(folder),
            "--out",
            str(tmp_path / "analysed"),
            "--resamples",
            "300",
            "--condition",
            "upper",
            "--condition",
            "typo",
        ],
    )
    assert res.exit_code == 0, res.output
    out = tmp_path / "analysed"
    for name in (
        "leaderboard.csv",
        "leaderboard.md",
        "retention.csv",
        "comparisons.csv",
        "report.html",
        "per_query.parquet",
        "scores.csv",
        "conditions.csv",
        "manifest.json",
        "runs/tiny/clean/bm25.trec",
    ):
        assert (out / name).is_file(), name
    a = pl.read_csv(run / "leaderboard.csv").sort("system")
    b = pl.read_csv(out / "leaderboard.csv").sort("system")
    assert a.columns == b.columns and a["system"].to_list() == b["system"].to_list()
    for col in a.columns:
        if a[col].dtype.is_numeric():
            assert np.allclose(
                a[col].to_numpy().astype(float), b[col].to_numpy().astype(float), atol=1e-9, rtol=0, equal_nan=True
            ), col
        else:
            assert a[col].equals(b[col]), col
    for name, keys in (
        ("retention.csv", ["system", "condition", "setting", "aggregation"]),
        ("conditions.csv", ["dataset", "condition"]),
    ):
        # edit rates need the query texts, and the isolated setting the clean candidates: run files carry neither
        x, y = (
            pl.read_csv(f / name).filter(pl.col("setting") == "end-to-end")
            if name == "retention.csv"
            else pl.read_csv(f / name).drop("edit_rate")
            for f in (run, out)
        )
        x, y = x.sort(keys), y.sort(keys)
        assert x.height == y.height > 0
        assert x.drop(keys).equals(y.drop(keys)) or np.allclose(
            x.drop(keys).to_numpy().astype(float), y.drop(keys).to_numpy().astype(float), atol=1e-9, equal_nan=True
        )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["datasets"][0]["n_queries"] == 4 and manifest["variants"][2]["samples"] == 2
    # the report describes the analysed run files, not the defaults of a `terazi run` configuration
    systems = json.loads((out / "tables.json").read_text())["systems"]
    assert sorted(r[0] for r in systems["rows"]) == sorted(b["system"].to_list())
    assert all(r[1] == "TREC run" and r[2].startswith("trec-run:") for r in systems["rows"])
    md = (out / "leaderboard.md").read_text()
    assert "TREC runs made elsewhere" in md and "- robustness: end to end\n" in md and "Reranker only" not in md


def test_analyze_takes_the_runs_statistics_settings(evaluated, tmp_path):
    """Retention aggregation, Borda variant, labels, level and featured system reach the analysis, as in
    `terazi run`."""
    run, _ = evaluated
    folder = tmp_path / "mine"
    for part in ("runs", "qrels", "changed"):
        shutil.copytree(run / part, folder / part)
    args = [
        "analyze",
        str(folder),
        "--resamples",
        "300",
        "--retention",
        "pooled",
        "--borda",
        "mteb",
        "--labels",
        "tr",
        "--confidence",
        "0.9",
        "--featured",
        "bm25",
    ]
    res = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    out = tmp_path / "a"
    config = json.loads((out / "manifest.json").read_text())["config"]
    assert (config["retention"], config["borda"], config["labels"], config["featured"]) == (
        "pooled",
        "mteb",
        "tr",
        "bm25",
    )
    assert set(pl.read_csv(out / "retention.csv")["aggregation"]) == {"pooled"}
    md = (out / "leaderboard.md").read_text()
    assert "Koruma" in md and "%90 GA" in md and "## Significant cells: bm25" in md
    res = CliRunner().invoke(app, [*args[:-1], "nope", "--out", str(tmp_path / "b")])
    assert res.exit_code == 2 and "featured system 'nope' has no runs" in res.output and not (tmp_path / "b").exists()


def test_analyze_errors_name_the_file(tmp_path):
    folder, out = tmp_path / "in", str(tmp_path / "o")  # beside each other: outputs never overlap inputs
    (folder / "runs" / "d" / "upper").mkdir(parents=True)
    (folder / "runs" / "d" / "upper" / "s.trec").write_text("q1 Q0 a 1 1.0 s\n")
    res = CliRunner().invoke(app, ["analyze", str(folder), "--out", out])
    assert res.exit_code == 2 and "qrels/d.tsv: missing qrels file for dataset 'd'" in res.output.replace("\n", "")
    (folder / "qrels").mkdir()
    (folder / "qrels" / "d.tsv").write_text("q1 0 a 1\n")
    res = CliRunner().invoke(app, ["analyze", str(folder), "--out", out])
    assert res.exit_code == 2 and "no clean/ condition" in res.output
    (folder / "runs" / "d" / "clean").mkdir()
    (folder / "runs" / "d" / "clean" / "t.trec").write_text("q1 Q0 a 1 1.0 t\n")
    res = CliRunner().invoke(app, ["analyze", str(folder), "--out", out])
    assert res.exit_code == 2 and "every condition needs every system" in res.output.replace("\n", " ")
    assert not (tmp_path / "o").exists()


def test_ids_with_whitespace_match_across_qrels_runs_and_changed_files(tmp_path):
    """The exported files write an id holding a space the same way (percent-encoded), so they still read and match."""
    from terazi.data import runfolder
    from terazi.data.trec import read_qrels, read_run

    qrels = runfolder.write_qrels({"q 1": {"d 1": 1, "d2": 0}, "q2": {"d2": 2}}, tmp_path / "qrels" / "x.tsv")
    ranking = pl.DataFrame(
        {
            "condition": ["upper"] * 3,
            "sample": [0] * 3,
            "query_id": ["q 1", "q 1", "q2"],
            "rank": [1, 2, 1],
            "doc_id": ["d 1", "d2", "d2"],
            "score": [2.0, 1.0, 1.0],
        }
    )
    [run] = runfolder.write_rankings(ranking, tmp_path, "x", "sys", {})
    changed = runfolder.write_changed(["q 1"], tmp_path / "changed" / "x" / "upper.txt")
    judged = read_qrels(qrels)
    assert set(judged["query_id"]) == set(read_run(run)["query_id"]) == {"q%201", "q2"}
    assert set(judged["doc_id"]) == {"d%201", "d2"}
    assert runfolder.read_changed(changed, set(judged["query_id"])) == {"q%201"}
