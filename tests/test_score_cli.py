"""`terazi score` on TREC files: JSON contract, agreement with pytrec_eval, clear errors."""

from __future__ import annotations

import json
import re

import pytrec_eval
from typer.testing import CliRunner

from terazi.cli import app

QRELS = "Q1 0 A 3\nQ1 0 B 2\nQ1 0 C 1\nQ1 0 D 0\nQ2 0 A 3\nQ2 0 B 2\nQ2 0 C 1\nQ2 0 D 0\nQ3 0 A 0\nQ3 0 B 0\n"
# Q2 has a tie between C and B: trec_eval ranks the larger document id first (C before B)
RUN = (
    "Q1 Q0 D 1 4 x\nQ1 Q0 A 2 3 x\nQ1 Q0 B 3 2 x\nQ1 Q0 C 4 1 x\n"
    "Q2 Q0 A 1 3 x\nQ2 Q0 B 2 2 x\nQ2 Q0 C 3 2 x\nQ2 Q0 D 4 1 x\nQ3 Q0 A 1 2 x\nQ3 Q0 B 2 1 x\n"
)


def _files(tmp_path):
    (tmp_path / "q.txt").write_text(QRELS)
    (tmp_path / "r.txt").write_text(RUN)
    return str(tmp_path / "q.txt"), str(tmp_path / "r.txt")


def test_json_output_has_aggregate_per_query_queries_and_contract(tmp_path):
    q, r = _files(tmp_path)
    res = CliRunner().invoke(
        app, ["score", "--qrels", q, "--run", r, "-m", "RR@3", "-m", "nDCG@3", "--format", "json", "--per-query"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert set(out) == {"aggregate", "per_query", "queries", "contract", "aliases"}
    assert out["aggregate"]["RR@3"] == 0.5
    assert out["queries"]["no_relevant"]["RR@3"] == 1
    assert out["contract"]["no_relevant"] == "zero" and out["contract"]["contract"] == "trec"
    with open(q) as fq, open(r) as fr:
        ref = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(fq), {"ndcg_cut.3"}).evaluate(
            pytrec_eval.parse_run(fr)
        )
    for qid, v in ref.items():
        assert abs(out["per_query"]["nDCG@3"][qid] - v["ndcg_cut_3"]) < 1e-12


def test_skip_policy_and_table_output(tmp_path):
    q, r = _files(tmp_path)
    res = CliRunner().invoke(
        app, ["score", "--qrels", q, "--run", r, "-m", "RR@3", "--no-relevant", "skip", "--format", "json"]
    )
    assert json.loads(res.output)["aggregate"]["RR@3"] == 0.75
    table = CliRunner().invoke(app, ["score", "--qrels", q, "--run", r, "-m", "RR@3"])
    assert table.exit_code == 0 and "0.5000" in table.output and "1 (zero)" in table.output


def test_errors_are_clear(tmp_path):
    q, r = _files(tmp_path)
    bad = CliRunner().invoke(app, ["score", "--qrels", q, "--run", r, "-m", "nDCG@0"])
    assert bad.exit_code == 2 and "positive integer" in bad.output
    (tmp_path / "bad.txt").write_text("Q1 0 A 3\nQ1 0 B -2\n")
    neg = CliRunner().invoke(app, ["score", "--qrels", str(tmp_path / "bad.txt"), "--run", r])
    assert neg.exit_code == 2 and "line 2: negative grade -2" in neg.output.replace("\n", "")
    pol = CliRunner().invoke(app, ["score", "--qrels", q, "--run", r, "--unjudged", "maybe"])
    assert pol.exit_code == 2 and re.search(
        r"--unjudged: invalid choice: 'maybe' \(choose from '?irrelevant'?, '?error", pol.output
    )
    missing = CliRunner().invoke(app, ["score", "--qrels", str(tmp_path / "nope.txt"), "--run", r])
    assert missing.exit_code == 2 and "nope.txt: no such file" in missing.output


def test_strict_contract_rejects_unknown_ids_and_repeated_ranks(tmp_path):
    q, r = _files(tmp_path)
    (tmp_path / "unknown.txt").write_text(RUN + "Q3 Q0 Z 3 0.5 x\n")
    res = CliRunner().invoke(
        app, ["score", "--qrels", q, "--run", str(tmp_path / "unknown.txt"), "--contract", "strict"]
    )
    assert res.exit_code == 2 and "unknown document id 'Z' in the ranking of query 'Q3'" in res.output.replace("\n", "")
    ok = CliRunner().invoke(app, ["score", "--qrels", q, "--run", str(tmp_path / "unknown.txt"), "--format", "json"])
    assert ok.exit_code == 0 and json.loads(ok.output)["queries"]["unjudged_documents"] == 1  # trec: counted
    (tmp_path / "ranks.txt").write_text(RUN.replace("Q1 Q0 A 2 3 x", "Q1 Q0 A 1 3 x"))
    res = CliRunner().invoke(app, ["score", "--qrels", q, "--run", str(tmp_path / "ranks.txt"), "--contract", "strict"])
    assert res.exit_code == 2 and "rank 1 appears more than once in the ranking of query 'Q1'" in res.output.replace(
        "\n", ""
    )
    (tmp_path / "badrank.txt").write_text(RUN.replace("Q1 Q0 A 2 3 x", "Q1 Q0 A two 3 x"))
    res = CliRunner().invoke(
        app, ["score", "--qrels", q, "--run", str(tmp_path / "badrank.txt"), "--contract", "strict"]
    )
    assert res.exit_code == 2 and "line 2: rank 'two' is not an integer" in res.output.replace("\n", "")
    good = CliRunner().invoke(app, ["score", "--qrels", q, "--run", r, "--contract", "strict", "-m", "RR@3"])
    assert good.exit_code == 0 and "contract strict" in good.output and "0.5000" in good.output


def test_policy_flags_override_the_contract_and_say_so(tmp_path):
    q, _ = _files(tmp_path)
    (tmp_path / "unknown.txt").write_text(RUN + "Q3 Q0 Z 3 0.5 x\n")
    res = CliRunner().invoke(
        app,
        [
            "score",
            "--qrels",
            q,
            "--run",
            str(tmp_path / "unknown.txt"),
            "--contract",
            "strict",
            "--unjudged",
            "irrelevant",
            "--format",
            "json",
        ],
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["contract"]["contract"] == "strict, changed: unjudged=irrelevant"
    bad = CliRunner().invoke(
        app, ["score", "--qrels", q, "--run", str(tmp_path / "unknown.txt"), "--contract", "loose"]
    )
    assert bad.exit_code == 2 and re.search(
        r"--contract: invalid choice: 'loose' \(choose from '?trec'?, '?strict", bad.output
    )


def test_neighbour_names_print_the_canonical_measure(tmp_path):
    q, r = _files(tmp_path)
    res = CliRunner().invoke(
        app,
        [
            "score",
            "--qrels",
            q,
            "--run",
            r,
            "-m",
            "mrr@3",
            "-m",
            "ndcg_cut_3",
            "-m",
            "recip_rank",
            "-m",
            "RR@3",
            "--format",
            "json",
        ],
    )
    out = json.loads(res.output)
    assert list(out["aggregate"]) == ["RR@3", "nDCG@3", "RR"]  # mrr@3 and RR@3 are one measure
    assert out["aliases"] == {"mrr@3": "RR@3", "ndcg_cut_3": "nDCG@3", "recip_rank": "RR"}
    assert out["aggregate"]["RR@3"] == 0.5
    table = CliRunner().invoke(app, ["score", "--qrels", q, "--run", r, "-m", "P_2"])
    assert "P@2" in table.output and "P_2 → P@2" in table.output


def test_run_files_with_a_wrong_field_count_name_the_line(tmp_path):
    q, _ = _files(tmp_path)
    for extra, problem in (("Q1 Q0 E 5 0.5 x y\n", "got 7"), ("Q1 Q0 E 5 0.5\n", "got 5")):
        (tmp_path / "r2.txt").write_text(RUN + extra)
        res = CliRunner().invoke(app, ["score", "--qrels", q, "--run", str(tmp_path / "r2.txt")])
        assert (
            res.exit_code == 2
            and f"line 11: expected 6 whitespace-separated columns, {problem}" in res.output.replace("\n", "")
        )
    (tmp_path / "tabs.txt").write_text(RUN.replace(" ", "\t"))
    (tmp_path / "dup.txt").write_text(QRELS + "Q2 0 B 1\n")
    tabs = CliRunner().invoke(app, ["score", "--qrels", q, "--run", str(tmp_path / "tabs.txt"), "--format", "json"])
    spaces = CliRunner().invoke(app, ["score", "--qrels", q, "--run", str(tmp_path / "r.txt"), "--format", "json"])
    assert json.loads(tabs.output)["aggregate"] == json.loads(spaces.output)["aggregate"]
    dup = CliRunner().invoke(app, ["score", "--qrels", str(tmp_path / "dup.txt"), "--run", str(tmp_path / "r.txt")])
    assert dup.exit_code == 2 and "line 11: duplicate judgment for query 'Q2', document 'B'" in dup.output.replace(
        "\n", ""
    )
