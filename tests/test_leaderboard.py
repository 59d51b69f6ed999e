"""Borda count and means, checked against a hand-worked example with ties and missing tasks."""

from __future__ import annotations

import math

import polars as pl
import pytest

from terazi.leaderboard import aggregate
from terazi.analysis import retention_intervals


def long_table():
    # t1 (type x): A 0.5, B 0.5 (tie), C 0.3     t2 (type x): A 0.2, B 0.4, C 0.6
    # t3 (type y): A 0.9, B 0.1, C missing;  D has only a NaN score.  t1 has two splits for A.
    rows = [("A", "t1", "x", 0.4), ("A", "t1", "x", 0.6), ("B", "t1", "x", 0.5), ("C", "t1", "x", 0.3),
            ("A", "t2", "x", 0.2), ("B", "t2", "x", 0.4), ("C", "t2", "x", 0.6),
            ("A", "t3", "y", 0.9), ("B", "t3", "y", 0.1), ("D", "t3", "y", math.nan)]
    return pl.DataFrame(rows, schema=["system", "task", "task_type", "score"], orient="row")


def test_borda_by_hand():
    # N = 3 systems with any result (D's only score is NaN). Points = N - rank (average ranks on ties).
    # t1: A=B rank 1.5 -> 1.5 each, C rank 3 -> 0.  t2: C 2, B 1, A 0.  t3: A 2, B 1, C missing -> 0.
    board = {r["system"]: r for r in aggregate(long_table()).iter_rows(named=True)}
    assert board["A"]["borda_votes"] == 3.5 and board["B"]["borda_votes"] == 3.5
    assert board["C"]["borda_votes"] == 2.0 and board["D"]["borda_votes"] == 0.0
    assert [board[s]["borda_rank"] for s in "ABCD"] == [1, 1, 3, 4]  # competition ranking
    assert board["A"]["mean_task"] == pytest.approx((0.5 + 0.2 + 0.9) / 3)
    assert board["A"]["mean_task_type"] == pytest.approx(((0.5 + 0.2) / 2 + 0.9) / 2)
    assert board["C"]["mean_task"] is None and board["C"]["mean_task_type"] is None
    assert board["C"]["mean_task_available"] == pytest.approx(0.45)


def test_out_of_ranking_task_is_not_aggregated():
    board = {r["system"]: r for r in aggregate(long_table(), out_of_ranking={"t3"}).iter_rows(named=True)}
    assert board["C"]["mean_task"] == pytest.approx(0.45)
    assert board["A"]["borda_votes"] == 1.5


def test_missing_columns_are_reported():
    with pytest.raises(ValueError, match="missing column"):
        aggregate(pl.DataFrame({"system": ["a"], "score": [1.0]}))


def test_retention_by_hand():
    # Two queries; the condition changed only q1. Clean q1 = 0.8, corrupted q1 = 0.6 -> 0.75.
    pq = pl.DataFrame({
        "dataset": ["d"] * 4, "system": ["s"] * 4,
        "condition": ["clean", "clean", "typo", "typo"], "query_id": ["q1", "q2", "q1", "q2"],
        "measure": ["nDCG@10"] * 4, "value": [0.8, 0.4, 0.6, 0.4], "changed": [False, False, True, False],
    })
    r = retention_intervals(pq, ["d"], ["clean", "typo"], 200, 0, 0.95).row(0, named=True)
    assert r["retention"] == pytest.approx(0.75) and r["changed_queries"] == 1
    assert r["share_changed"] == 0.5 and r["delta"] == pytest.approx(-0.2)


def test_cli_on_a_csv_not_produced_by_terazi(tmp_path):
    import json

    from typer.testing import CliRunner

    from terazi.cli import app

    src = tmp_path / "mteb-like.csv"
    src.write_text("system,task,task_type,score\n" + "\n".join(
        f"{s},{t},{tt},{'' if v != v else v}" for s, t, tt, v in long_table().iter_rows()) + "\n")
    res = CliRunner().invoke(app, ["leaderboard", str(src), "--format", "json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert [r["system"] for r in rows] == ["A", "B", "C", "D"]
    assert [r["borda_rank"] for r in rows] == [1, 1, 3, 4]
    assert rows[2]["mean_task"] is None and set(rows[0]) == {"system", "borda_votes", "borda_rank", "mean_task", "mean_task_type"}
    csv = CliRunner().invoke(app, ["leaderboard", str(src), "--format", "csv"])
    assert csv.output.splitlines()[0] == "system,borda_votes,borda_rank,mean_task,mean_task_type"
    bad = tmp_path / "bad.csv"
    bad.write_text("model,score\nA,1\n")
    err = CliRunner().invoke(app, ["leaderboard", str(bad)])
    assert err.exit_code == 2 and "missing column" in err.output
