"""Borda count and means against the ranking note and MTEB's code, by hand, with ties and missing tasks; exports."""

from __future__ import annotations

import math

import polars as pl
import pytest

from terazi.analysis.leaderboard import board_of_scores, read_long_table
from terazi.analysis.retention import retention_intervals


def long_table():
    # t1 (type x): A 0.5, B 0.5 (tie), C 0.3     t2 (type x): A 0.2, B 0.4, C 0.6
    # t3 (type y): A 0.9, B 0.1, C missing;  D only ran t4, which is out of the ranking.  t1 has two splits for A.
    rows = [
        ("A", "t1", "x", 0.4),
        ("A", "t1", "x", 0.6),
        ("B", "t1", "x", 0.5),
        ("C", "t1", "x", 0.3),
        ("A", "t2", "x", 0.2),
        ("B", "t2", "x", 0.4),
        ("C", "t2", "x", 0.6),
        ("A", "t3", "y", 0.9),
        ("B", "t3", "y", 0.1),
        ("D", "t4", "y", 0.7),
    ]
    return pl.DataFrame(rows, schema=["system", "task", "task_type", "score"], orient="row")


def test_borda_by_hand():
    # MTEB's code: N = 3 systems with any ranked result. Points = N - rank (average ranks on ties).
    # t1: A=B rank 1.5 -> 1.5 each, C rank 3 -> 0.  t2: C 2, B 1, A 0.  t3: A 2, B 1, C missing -> 0.
    board = {r["system"]: r for r in board_of_scores(long_table(), {"t4"}, borda="mteb").iter_rows(named=True)}
    assert board["A"]["borda_votes"] == 3.5 and board["B"]["borda_votes"] == 3.5
    assert board["C"]["borda_votes"] == 2.0 and board["D"]["borda_votes"] == 0.0
    assert [board[s]["borda_rank"] for s in "ABCD"] == [1, 1, 3, 4]  # competition ranking
    assert board["A"]["mean_task_complete"] == pytest.approx((0.5 + 0.2 + 0.9) / 3)
    assert board["A"]["mean_task_type_complete"] == pytest.approx(((0.5 + 0.2) / 2 + 0.9) / 2)
    assert board["C"]["mean_task_complete"] is None and board["C"]["mean_task_type_complete"] is None
    assert board["C"]["mean_task"] == pytest.approx(0.45) and board["C"]["mean_task_type"] == pytest.approx(0.45)


def test_borda_per_task_follows_the_note():
    # The note: "on a task where N models were evaluated, the first gets N-1 points, ..., the last 0".
    # t3 had N = 2 (C skipped it): A 1, B 0.  t1, t2 as above (N = 3).  D has no ranked result.
    board = {r["system"]: r for r in board_of_scores(long_table(), {"t4"}).iter_rows(named=True)}
    assert [board[s]["borda_votes"] for s in "ABCD"] == [2.5, 2.5, 2.0, 0.0]
    assert board["C"]["mean_task"] == pytest.approx((0.3 + 0.6) / 2)  # over the tasks C was run on
    assert board["C"]["tasks"] == 2 and board["D"]["tasks"] == 0 and board["D"]["mean_task"] is None


def test_per_task_and_mteb_rank_differently_when_a_task_is_missing():
    # t1: all four run, A > B > C > D.  t2: only C and D run, C > D.
    rows = [("A", "t1", 0.9), ("B", "t1", 0.8), ("C", "t1", 0.7), ("D", "t1", 0.6), ("C", "t2", 0.9), ("D", "t2", 0.8)]
    long = pl.DataFrame(
        [(s, t, "r", v) for s, t, v in rows], schema=["system", "task", "task_type", "score"], orient="row"
    )
    note = {r["system"]: r["borda_votes"] for r in board_of_scores(long).iter_rows(named=True)}
    mteb = {r["system"]: r["borda_votes"] for r in board_of_scores(long, borda="mteb").iter_rows(named=True)}
    assert note == {"A": 3, "B": 2, "C": 1 + 1, "D": 0 + 0}  # t2: N = 2, so C 1 and the last, D, 0
    assert mteb == {"A": 3, "B": 2, "C": 1 + 3, "D": 0 + 2}  # t2: N = 4, so even D earns 2
    assert board_of_scores(long)["system"][0] == "A" and board_of_scores(long, borda="mteb")["system"][0] == "C"
    for _task, part in long.group_by("task"):  # per task the last earns 0 and the first N - 1
        n = part.height
        pts = board_of_scores(part).filter(pl.col("tasks") > 0)["borda_votes"].sort()
        assert pts[0] == 0 and pts[-1] == n - 1


def test_out_of_ranking_task_is_not_aggregated():
    board = {r["system"]: r for r in board_of_scores(long_table(), out_of_ranking={"t3", "t4"}).iter_rows(named=True)}
    assert board["C"]["mean_task_complete"] == pytest.approx(0.45)
    assert board["A"]["borda_votes"] == 1.5


def test_missing_columns_are_reported():
    with pytest.raises(ValueError, match="missing column"):
        board_of_scores(pl.DataFrame({"system": ["a"], "score": [1.0]}))


@pytest.mark.parametrize(
    "score, message", [(math.nan, "row 3: score of 'B' on 't1' is NaN"), (None, "row 3: score of 'B' on 't1' is empty")]
)
def test_nan_or_missing_scores_are_errors_naming_the_row(score, message):
    long = long_table().with_columns(
        pl.when(pl.int_range(pl.len()) == 2).then(score).otherwise(pl.col("score")).alias("score")
    )
    with pytest.raises(ValueError, match=message):
        board_of_scores(long)


@pytest.mark.parametrize(
    "text, message",
    [
        ("nan", "line 4: score of 'C' on 't1' is NaN"),
        ("0,4x", "line 4: score '0,4x' of 'C' on 't1' is not a number"),
        ("", "line 4: score of 'C' on 't1' is empty"),
    ],
)
def test_csv_scores_that_are_not_numbers_name_the_line(tmp_path, text, message):
    src = tmp_path / "scores.csv"
    src.write_text(f'system,task,task_type,score\nA,t1,x,0.5\n\nC,t1,x,"{text}"\nB,t1,x,0.4\n')  # line 3 blank
    with pytest.raises(ValueError, match=f"scores.csv, {message}"):
        read_long_table(src)


def test_retention_by_hand():
    # Two queries; the condition changed only q1. Clean q1 = 0.8, corrupted q1 = 0.6 -> 0.75.
    pq = pl.DataFrame(
        {
            "dataset": ["d"] * 4,
            "system": ["s"] * 4,
            "condition": ["clean", "clean", "typo", "typo"],
            "query_id": ["q1", "q2", "q1", "q2"],
            "measure": ["nDCG@10"] * 4,
            "value": [0.8, 0.4, 0.6, 0.4],
            "changed": [False, False, True, False],
        }
    )
    r = retention_intervals(pq, ["d"], ["clean", "typo"], 200, 0, 0.95).row(0, named=True)
    assert r["retention"] == pytest.approx(0.75) and r["changed_queries"] == 1
    assert r["share_changed"] == 0.5 and r["delta"] == pytest.approx(-0.2)


def _csv(tmp_path, rows=None):
    src = tmp_path / "mteb-like.csv"
    rows = rows if rows is not None else long_table().iter_rows()
    src.write_text("system,task,task_type,score\n" + "\n".join(f"{s},{t},{tt},{v}" for s, t, tt, v in rows) + "\n")
    return src


def test_cli_on_a_csv_not_produced_by_terazi(tmp_path):
    import json

    from typer.testing import CliRunner

    from terazi.analysis.leaderboard import BOARD_COLUMNS
    from terazi.cli import app

    src = _csv(tmp_path)
    res = CliRunner().invoke(app, ["leaderboard", str(src), "--format", "json", "--out-of-ranking", "t4"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert [r["system"] for r in rows] == ["A", "B", "C", "D"] and [r["borda_votes"] for r in rows] == [2.5, 2.5, 2, 0]
    assert all(tuple(r) == BOARD_COLUMNS for r in rows)  # every column, the complete-only means included
    assert rows[2]["mean_task_complete"] is None and rows[2]["mean_task"] == pytest.approx(0.45)
    mteb = json.loads(
        CliRunner()
        .invoke(app, ["leaderboard", str(src), "--format", "json", "--borda", "mteb", "--out-of-ranking", "t4"])
        .output
    )
    assert [r["borda_votes"] for r in mteb] == [3.5, 3.5, 2, 0]
    csv = CliRunner().invoke(app, ["leaderboard", str(src), "--format", "csv"])
    assert csv.output.splitlines()[0] == ",".join(BOARD_COLUMNS)
    table = CliRunner().invoke(app, ["leaderboard", str(src)])
    assert table.exit_code == 0 and "Mean (Task), complete only" in table.output and "Borda per-task" in table.output
    bad = tmp_path / "bad.csv"
    bad.write_text("model,score\nA,1\n")
    err = CliRunner().invoke(app, ["leaderboard", str(bad)])
    assert err.exit_code == 2 and "missing column" in err.output
    nan = _csv(tmp_path, [("A", "t1", "x", 0.5), ("B", "t1", "x", "NaN")])
    err = CliRunner().invoke(app, ["leaderboard", str(nan)])
    assert err.exit_code == 2 and "line 3: score of 'B' on 't1' is NaN" in err.output.replace("\n", "")
    fmt = CliRunner().invoke(app, ["leaderboard", str(src), "--format", "xml"])
    assert fmt.exit_code == 2 and "latex" in fmt.output


def _latex_shape(tex: str, n_rows: int, n_cols: int) -> list[str]:
    """Check what makes booktabs LaTeX compile: balanced environments and braces, one cell per column."""
    import re

    for env in ("table", "tabular"):
        assert tex.count(f"\\begin{{{env}}}") == tex.count(f"\\end{{{env}}}") == 1
    assert (
        tex.index("\\begin{tabular}")
        < tex.index("\\toprule")
        < tex.index("\\midrule")
        < tex.index("\\bottomrule")
        < tex.index("\\end{tabular}")
    )
    spec = re.search(r"\\begin\{tabular\}\{([lcr]+)\}", tex)[1]
    assert len(spec) == n_cols
    unescaped = re.sub(r"\\[{}&%$#_]", "", tex)
    depth = 0
    for ch in unescaped:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0
    assert depth == 0
    body = tex[tex.index("\\toprule") + 8 : tex.index("\\bottomrule")].replace("\\midrule", "").split("\n")
    body = [line for line in body if line.strip()]
    assert len(body) == n_rows + 1  # header and rows
    for line in body:
        assert line.endswith("\\\\") and len(re.findall(r"(?<!\\)&", line)) == n_cols - 1, line
    return body


def test_latex_export_is_compile_shaped_with_escaped_names_and_bold_best(tmp_path):
    from typer.testing import CliRunner

    from terazi.cli import app

    rows = [
        ("a_b&c%", "t1", "x", 0.9),
        ("a_b&c%", "t2", "x", 0.4),
        ("x$y#{z}~^\\", "t1", "x", 0.5),
        ("x$y#{z}~^\\", "t2", "x", 0.7),
        ("plain", "t1", "x", 0.1),
    ]
    src = _csv(tmp_path, rows)
    res = CliRunner().invoke(app, ["leaderboard", str(src), "--format", "latex"])
    assert res.exit_code == 0, res.output
    tex = res.output
    body = _latex_shape(tex, n_rows=3, n_cols=8)
    assert "a\\_b\\&c\\%" in tex and "a_b&c%" not in tex
    assert "x\\$y\\#\\{z\\}\\textasciitilde{}\\textasciicircum{}\\textbackslash{}" in tex
    assert "Mean (TaskType), complete only" in body[0]
    # a_b&c% has the best Mean (Task) (0.9 + 0.4) / 2, bold in the four mean columns (one task type here)
    assert tex.count("\\textbf{0.6500}") == 4 and "\\textbf{0.6000}" not in tex
    assert "\\caption{" in tex and "Borda per-task" in tex


def test_latex_of_a_terazi_results_folder_marks_significance_groups(tmp_path):
    from typer.testing import CliRunner

    from terazi.cli import app

    run = tmp_path / "run"
    run.mkdir()
    pl.DataFrame(
        {
            "system": ["ce_1", "bm25"],
            "borda_votes": [1.0, 0.0],
            "borda_rank": [1, 2],
            "group": [1, 2],
            "mean_task": [0.61, 0.42],
            "ci_low": [0.55, 0.37],
            "ci_high": [0.66, 0.47],
            "demo": [0.61, 0.42],
            "upper": [0.5, 0.4],
            "upper retention": [0.82, 0.95],
        }
    ).write_csv(run / "leaderboard.csv")
    res = CliRunner().invoke(app, ["leaderboard", str(run), "--format", "latex"])
    assert res.exit_code == 0, res.output
    _latex_shape(res.output, n_rows=2, n_cols=9)  # the group column becomes superscripts
    assert "ce\\_1$^{1}$" in res.output and "bm25$^{2}$" in res.output and "significance groups" in res.output
    assert "\\textbf{0.9500}" in res.output and "\\textbf{0.55" not in res.output  # CI bounds are never "best"
    md = CliRunner().invoke(app, ["leaderboard", str(run), "--format", "markdown"]).output
    assert md.splitlines()[0] == (
        "| System | Borda votes | Borda rank | Group | Mean (Task) | CI low | CI high | demo | upper "
        "| upper retention |"
    )
    assert "| ce_1 | **1** | 1 | 1 | **0.6100** |" in md
    err = CliRunner().invoke(app, ["leaderboard", str(run), "--borda", "mteb"])
    assert err.exit_code == 2 and "aggregated by its run" in err.output


def _mteb_file(folder, model, revision, task, scores):
    import json

    path = folder / model / revision / f"{task}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "dataset_revision": "abc",
                "task_name": task,
                "mteb_version": "1.38.0",
                "evaluation_time": 1.5,
                "kg_co2_emissions": None,
                "scores": scores,
            }
        )
    )


def _entry(score, subset="default", languages=("tur-Latn",)):
    return {"main_score": score, "ndcg_at_10": score, "hf_subset": subset, "languages": list(languages)}


def test_mteb_results_folder_is_read_into_the_leaderboard(tmp_path):
    import json

    from typer.testing import CliRunner

    from terazi.cli import app
    from terazi.data.mteb_results import read_mteb_results

    root = tmp_path / "results"
    _mteb_file(root, "org__model-a", "rev1", "TurQA", {"test": [_entry(0.6)]})
    _mteb_file(root, "org__model-a", "rev1", "TurSTS", {"test": [_entry(0.8, "tr"), _entry(0.2, "en", ["eng-Latn"])]})
    _mteb_file(root, "org__model-b", "no_revision_available", "TurQA", {"dev": [_entry(0.5)], "test": [_entry(0.7)]})
    (root / "org__model-a" / "rev1" / "model_meta.json").write_text(json.dumps({"name": "org/model-a"}))
    long = read_mteb_results(tmp_path, {"TurQA": "retrieval", "TurSTS": "sts"})
    assert sorted(long["system"].unique()) == ["org/model-a", "org/model-b"] and long.height == 5
    res = CliRunner().invoke(
        app, ["leaderboard", str(tmp_path), "--format", "json", "--task-type", "TurQA=retrieval", "--task-type", "sts"]
    )
    assert res.exit_code == 0, res.output
    rows = {r["system"]: r for r in json.loads(res.output)}
    assert rows["org/model-a"]["mean_task"] == pytest.approx((0.6 + (0.8 + 0.2) / 2) / 2)
    assert rows["org/model-b"]["mean_task"] == pytest.approx((0.5 + 0.7) / 2)  # every split in the file
    assert rows["org/model-b"]["mean_task_complete"] is None  # it did not run TurSTS
    # TurQA: a 0.6 ties b (0.5 + 0.7) / 2, so both 0.5 of N - 1 = 1 point; TurSTS: a alone, N = 1, 0 points
    assert rows["org/model-b"]["borda_votes"] == rows["org/model-a"]["borda_votes"] == 0.5
    only = {
        r["system"]: r
        for r in json.loads(
            CliRunner()
            .invoke(app, ["leaderboard", str(tmp_path), "--format", "json", "--split", "test", "--language", "tur"])
            .output
        )
    }
    assert only["org/model-a"]["mean_task"] == pytest.approx((0.6 + 0.8) / 2)
    assert only["org/model-b"]["mean_task"] == pytest.approx(0.7) and only["org/model-b"]["borda_votes"] == 1
    _mteb_file(root, "org__model-a", "rev2", "TurQA", {"test": [_entry(0.9)]})
    assert {"org/model-a@rev1", "org/model-a@rev2"} <= set(read_mteb_results(root)["system"])  # no silent pick
    _mteb_file(root, "org__model-c", "r", "TurQA", {"test": [{"hf_subset": "default", "main_score": "NaN"}]})
    err = CliRunner().invoke(app, ["leaderboard", str(tmp_path)])
    assert err.exit_code == 2 and "TurQA.json: scores.test[0].main_score is 'NaN', not a number" in err.output.replace(
        "\n", ""
    )


def test_config_chooses_the_borda_variant():
    from pydantic import ValidationError

    from terazi.schemas import EvalConfig

    assert EvalConfig(datasets=[{"path": "d"}]).borda == "per-task"
    assert EvalConfig(datasets=[{"path": "d"}], borda="mteb").borda == "mteb"
    with pytest.raises(ValidationError, match="per-task"):
        EvalConfig(datasets=[{"path": "d"}], borda="mean")
    with pytest.raises(ValueError, match="borda must be one of per-task, mteb"):
        board_of_scores(long_table(), borda="mean")
