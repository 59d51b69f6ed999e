"""The Python API: `import terazi` is cheap; evaluate, score, analyze and compare from a notebook."""

from __future__ import annotations

import math
import subprocess
import sys

import polars as pl

import terazi


def test_import_is_cheap():
    heavy = "('polars', 'prefect', 'torch', 'numpy', 'pydantic')"
    code = f"import sys, terazi; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_score_the_worked_example():
    """METHOD's worked example: grades A=3, B=2, C=1, D=0; cutoff 3."""
    qrels = {q: {"A": 3, "B": 2, "C": 1, "D": 0} for q in ("Q1", "Q2")} | {"Q3": {"A": 0, "B": 0, "C": 0, "D": 0}}
    run = {
        "Q1": {"D": 4, "A": 3, "B": 2, "C": 1},
        "Q2": {"A": 4, "C": 3, "B": 2, "D": 1},
        "Q3": {"A": 4, "B": 3, "C": 2, "D": 1},
    }
    ev = terazi.score(qrels, run, ["RR@3", "nDCG@3"])
    ideal = 3 + 2 / math.log2(3) + 1 / 2
    assert ev.aggregate["RR@3"] == 0.5
    nd = ev.per_query_dict("nDCG@3")
    assert abs(nd["Q1"] - (3 / math.log2(3) + 2 / 2) / ideal) < 1e-12 and round(nd["Q1"], 4) == 0.6075
    assert abs(nd["Q2"] - (3 + 1 / math.log2(3) + 2 / 2) / ideal) < 1e-12 and round(nd["Q2"], 4) == 0.9725
    assert nd["Q3"] == 0.0


def test_score_reads_the_rank_column_of_a_run_file_where_the_contract_checks_it(tmp_path):
    """The strict contract's repeated-rank check needs the file's rank column: the Python API reads it as `terazi score`
    does (before, it read scores only, and a file with two documents at rank 1 passed)."""
    import pytest

    from terazi.base.errors import TeraziError
    from terazi.metrics.contracts import Policies

    (tmp_path / "qrels.txt").write_text("q1 0 a 1\nq1 0 b 0\n")
    (tmp_path / "run.txt").write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 1 1.0 t\n")
    assert terazi.score(tmp_path / "qrels.txt", tmp_path / "run.txt", ["RR@10"]).aggregate["RR@10"] == 1.0
    with pytest.raises(TeraziError, match="rank 1 appears more than once in the ranking of query 'q1'"):
        terazi.score(tmp_path / "qrels.txt", tmp_path / "run.txt", ["RR@10"], Policies.of("strict"))


def test_evaluate_analyze_and_compare_from_python(prefect_server, tmp_path, tiny_dataset):
    manifest, board = terazi.evaluate(
        {
            "datasets": [{"path": str(tiny_dataset), "name": "tiny"}],
            "conditions": ["upper"],
            "depth": 10,
            "rerank_depth": 5,
            "bootstrap_resamples": 200,
            "out_dir": str(tmp_path),
            "run_name": "nb",
            "cache_dir": str(tmp_path / "cache"),
            "offline": True,
        }
    )
    assert isinstance(board, pl.DataFrame) and board.equals(pl.read_csv(tmp_path / "nb" / "leaderboard.csv"))
    assert {r.system for r in manifest.leaderboard} == set(board["system"]) == {"first-stage", "bm25-tr", "hybrid-rrf"}
    assert manifest.kind == "python"
    ev = terazi.score(
        tmp_path / "nb" / "qrels" / "tiny.tsv",
        tmp_path / "nb" / "runs" / "tiny" / "clean" / "bm25-tr.trec",
        ["nDCG@10"],
    )
    assert abs(ev.aggregate["nDCG@10"] - board.filter(pl.col("system") == "bm25-tr")["tiny"][0]) < 1e-12
    _, again = terazi.analyze(tmp_path / "nb", out=tmp_path / "again", bootstrap_resamples=200, conditions=["upper"])
    assert (
        again.sort("system")
        .select("system", "mean_task", "upper")
        .equals(board.sort("system").select("system", "mean_task", "upper"))
    )
    cmp = terazi.compare(tmp_path / "nb", systems=("bm25-tr", "first-stage"), bootstrap_resamples=200)
    assert cmp.cells.height == 2 and set(cmp.cells["condition"]) == {"clean", "upper"}
    assert terazi.compare(tmp_path / "nb", tmp_path / "again", bootstrap_resamples=200).changed().height == 0
