"""Hostile values (issue 21): ids, numbers and encodings, each a case that failed before its fix.

Ids are checked once, as they are read (no control characters; whitespace is percent-encoded in TREC files); texts
are put in Unicode NFC as they are read; NaN and infinity are refused up front or computed exactly. The run cases go
through `terazi run` as tests/test_reliability.py does (docs/reliability.md lists them with the catalogue).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import threading
import unicodedata
from fractions import Fraction
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from terazi.base.turkish import TURKISH_LETTERS
from terazi.cli import app
from terazi.corrupt.conditions import corrupt
from terazi.data.loading import load_dataset
from terazi.schemas import CorruptionSpec, DatasetSpec, MobileSpec
from terazi.schemas.layout import RunLayout
from tests.conftest import make_tiny
from tests.stages import corpus_of
from tests.test_reliability import (
    Case,
    append,
    assert_nothing_looks_complete,
    edit,
    replace_line,
    run_cli,
    with_config,
    with_data,
)

DOCS = Path(__file__).resolve().parents[1] / "docs" / "reliability.md"

CASES = [
    Case(
        "document id with a line feed",
        with_data(edit("corpus.jsonl", lambda b: b.replace(b'"d10"', b'"d\\n10"'))),
        r"corpus\.jsonl, line 10: field '_id': id 'd\\n10' holds the control character U\+000A",
    ),
    Case(
        "document id with a carriage return",
        with_data(edit("corpus.jsonl", lambda b: b.replace(b'"d7"', b'"d\\r7"'))),
        r"corpus\.jsonl, line 7: field '_id': id 'd\\r7' holds the control character U\+000D",
    ),
    Case(
        "query id with a C1 control",
        with_data(edit("queries.jsonl", replace_line(2, b'{"_id": "q\\u00852", "text": "x"}'))),
        r"queries\.jsonl, line 2: field '_id': id 'q\\x852' holds the control character U\+0085",
    ),
    Case(
        "qrels id with a unit separator",
        with_data(edit("qrels/test.tsv", append(b"q1\td\x1f1\t1\n"))),
        r"test\.tsv, line 13: control character U\+001F at column 5",
    ),
    Case(
        "infinite number in the config",
        with_config("datasets: [{path: DATASET}]\nrerankers: [{name: b, kind: bm25, k1: .inf}]\n"),
        r"field 'rerankers\.0\.bm25\.k1': Input should be a finite number",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_ids_and_numbers_are_one_line_at_load(case: Case, tmp_path: Path):
    ds = make_tiny(tmp_path / "tiny")
    result = run_cli(tmp_path, case.prepare(tmp_path, ds), case.env, case.out)
    assert "Traceback" not in result.output and "ComputeError" not in result.output, result.output
    assert result.exit_code == 2, result.output
    assert [line for line in result.output.splitlines() if line.startswith("error:")] != []
    assert re.search(case.message, result.output.replace("\n", "")), result.output
    assert_nothing_looks_complete(tmp_path)


def test_docs_list_these_cases():
    text = DOCS.read_text()
    assert not [c.name for c in CASES if c.name not in text]
    assert "first stage alone" in text and "NFD" in text and "inf" in text


# ---------------------------------------------------------------- a run of hostile values that must complete


def _hostile(root: Path, nfd: bool = True) -> Path:
    """The tiny dataset with one grade of 5000 and its queries in NFD (letter + combining mark); `nfd=False`: its NFC
    twin (the queries as written)."""
    ds = make_tiny(root)
    qs = [json.loads(line) for line in (ds / "queries.jsonl").read_text().splitlines()]
    (ds / "queries.jsonl").write_text(
        "".join(
            json.dumps({**q, "text": unicodedata.normalize("NFD" if nfd else "NFC", q["text"])}, ensure_ascii=False)
            + "\n"
            for q in qs
        )
    )
    qrels = ds / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text().replace("q1\td1\t2", "q1\td1\t5000"))
    return ds


def test_first_stage_alone_nfd_queries_and_a_huge_grade_run_end_to_end(prefect_server, tmp_path):
    """rerankers: [] (the retriever alone), queries in NFD, exponential gain over a grade of 5000: the run completes,
    with no NaN anywhere, the corruption sees composed letters, and the fingerprint is the NFC twin's."""
    ds = _hostile(tmp_path / "tiny")
    exp = "nDCG(dcg='exp-log2')@10"
    (tmp_path / "eval.yaml").write_text(
        f"datasets: [{{path: {ds}}}]\nrerankers: []\nconditions: [clean, ascii_partial]\n"
        f'corruption: {{ascii_partial_rate: 1}}\nmetrics: ["{exp}", ndcg]\nheadline: "{exp}"\n'
        "depth: 10\nrerank_depth: 5\nbootstrap_resamples: 100\n"
    )
    result = run_cli(tmp_path, ["--config", str(tmp_path / "eval.yaml")])
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    layout = RunLayout(tmp_path / "results" / "run")
    assert layout.is_complete()
    assert pl.read_csv(layout.leaderboard_csv)["system"].to_list() == ["first-stage"]
    per_query = pl.read_parquet(layout.per_query)
    assert set(per_query["measure"]) == {exp, "ndcg"} and per_query["value"].is_finite().all()
    numbers = pl.read_csv(layout.retention_csv).select(pl.col(pl.Float64))
    assert numbers.height and not any(numbers.select(pl.all().is_nan().any()).row(0))
    variants = pl.read_parquet(layout.variants("tiny", "ascii_partial"))
    assert variants["changed"].all() and not any(ch in TURKISH_LETTERS for t in variants["text"] for ch in t)
    twin = load_dataset(DatasetSpec(path=str(_hostile(tmp_path / "nfc", nfd=False)), name="tiny"), announce=False)
    assert json.loads(layout.manifest.read_text())["datasets"][0]["fingerprint"] == twin.fingerprint


# ---------------------------------------------------------------- encodings


def test_nfd_text_loads_as_nfc_and_keeps_the_nfc_fingerprint(tmp_path):
    nfc = load_dataset(DatasetSpec(path=str(make_tiny(tmp_path / "a")), name="tiny"), announce=False)
    nfd_root = make_tiny(tmp_path / "b")
    for name in ("corpus.jsonl", "queries.jsonl"):
        p = nfd_root / name
        p.write_text(unicodedata.normalize("NFD", p.read_text()))
    assert (nfd_root / "queries.jsonl").read_text() != (tmp_path / "a" / "queries.jsonl").read_text()
    nfd = load_dataset(DatasetSpec(path=str(nfd_root), name="tiny"), announce=False)
    assert nfc.fingerprint == "79cbff410146fdd6"  # what terazi gave the tiny dataset before texts were normalised
    assert (nfd.fingerprint, nfd.corpus_fingerprint) == (nfc.fingerprint, nfc.corpus_fingerprint)
    texts = corpus_of(nfd_root, tmp_path / "cache").texts(["d4"])
    assert texts["d4"] == unicodedata.normalize("NFC", texts["d4"]) and "ğ" in texts["d4"]


def test_letter_by_letter_corruptions_see_composed_letters():
    text = unicodedata.normalize("NFD", "Işık şehir güneş")
    assert len(text) > len("Işık şehir güneş")  # ş, ü as a letter and a combining mark
    none = {k: 0.0 for k in MobileSpec.model_fields}
    spec = CorruptionSpec(ascii_partial_rate=1, mobile=MobileSpec(**{**none, "ascii_letter": 1.0}))
    assert corrupt(text, "ascii_partial", spec=spec) == corrupt(text, "mobile", spec=spec) == "Isik sehir gunes"


def test_corrupt_command_strips_nfd_letters(tmp_path):
    line = json.dumps({"_id": "q", "text": unicodedata.normalize("NFD", "şeker çay")}, ensure_ascii=False)
    res = CliRunner().invoke(app, ["corrupt", "--condition", "ascii_partial", "--rate", "1"], input=line + "\n")
    out = json.loads(res.output)
    assert res.exit_code == 0 and out["text"] == "seker cay" and out["changed"] is True


def test_carriage_return_between_json_fields_builds_the_corpus_table(tmp_path):
    ds = make_tiny(tmp_path / "tiny")
    corpus = ds / "corpus.jsonl"
    corpus.write_bytes(corpus.read_bytes().replace(b'"d3", ', b'"d3",\r '))  # JSON whitespace, not a line end
    assert corpus_of(ds, tmp_path / "cache").texts(["d3"])["d3"].startswith("Dakika.")


# ---------------------------------------------------------------- numbers and pipes in `terazi score`


def _score(tmp_path: Path, qrels: str, run: str, *args: str):
    (tmp_path / "q.txt").write_text(qrels)
    (tmp_path / "r.txt").write_text(run)
    return CliRunner().invoke(
        app, ["score", "--qrels", str(tmp_path / "q.txt"), "--run", str(tmp_path / "r.txt"), "--format", "json", *args]
    )


def test_exponential_gain_is_exact_for_huge_grades(tmp_path):
    res = _score(
        tmp_path,
        "q 0 a 5000\nq 0 b 4999\nq 0 c 3\n",
        "q Q0 b 1 3 x\nq Q0 c 2 2 x\nq Q0 a 3 1 x\n",
        "-m",
        "nDCG(dcg='exp-log2')@10",
    )
    assert res.exit_code == 0, res.output
    value = json.loads(res.output)["aggregate"]["nDCG(dcg='exp-log2')@10"]
    gain = {g: Fraction(2**g - 1, 2**5000) for g in (5000, 4999, 3)}  # exact gains, scaled to be floats
    dcg = sum(float(gain[g]) / math.log2(i + 2) for i, g in enumerate((4999, 3, 5000)))
    ideal = sum(float(gain[g]) / math.log2(i + 2) for i, g in enumerate((5000, 4999, 3)))
    assert value == pytest.approx(dcg / ideal, rel=1e-12) and math.isfinite(value)


def test_nan_scores_rank_below_minus_infinity(tmp_path):
    # ranking c (1), a (−∞), b (NaN): the relevant b is third; before, NaN was −∞ and b (a larger id) came second
    res = _score(tmp_path, "q 0 a 0\nq 0 b 1\nq 0 c 0\n", "q Q0 b 1 nan x\nq Q0 a 2 -inf x\nq Q0 c 3 1 x\n", "-m", "RR")
    assert res.exit_code == 0 and json.loads(res.output)["aggregate"]["RR"] == pytest.approx(1 / 3), res.output


def test_score_names_the_line_of_a_control_character(tmp_path):
    res = _score(tmp_path, "q 0 a 1\nq 0 b\x1fx 1\n", "q Q0 a 1 3 x\n")
    assert res.exit_code == 2 and "q.txt, line 2: control character U+001F at column 6" in res.output.replace("\n", "")


def test_score_reads_stdin_and_pipes(tmp_path):
    qrels, run = "q 0 a 1\nq 0 b 0\n", "q Q0 b 1 2 x\nq Q0 a 2 1 x\n"
    (tmp_path / "q.txt").write_text(qrels)
    stdin = CliRunner().invoke(
        app, ["score", "--qrels", str(tmp_path / "q.txt"), "--run", "-", "-m", "RR@10", "--format", "json"], input=run
    )
    assert stdin.exit_code == 0 and json.loads(stdin.output)["aggregate"]["RR@10"] == 0.5, stdin.output
    fifo = tmp_path / "run.pipe"  # what `--run <(…)` hands over: a pipe, not a regular file
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text(run))
    writer.start()
    piped = CliRunner().invoke(
        app, ["score", "--qrels", str(tmp_path / "q.txt"), "--run", str(fifo), "-m", "ndcg", "--format", "json"]
    )
    writer.join(5)
    assert piped.exit_code == 0, piped.output
    assert json.loads(piped.output)["aggregate"]["nDCG"] == pytest.approx(1 / math.log2(3))
    # as a shell hands them over: the qrels through process substitution, the run on /dev/stdin
    shell = subprocess.run(
        [
            "bash",
            "-c",
            f"printf '{run}' | {sys.executable} -m terazi.cli score --qrels "
            f"<(cat {tmp_path / 'q.txt'}) --run /dev/stdin -m RR@10 --format json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shell.returncode == 0 and json.loads(shell.stdout)["aggregate"]["RR@10"] == 0.5, shell.stderr


# ---------------------------------------------------------------- leaderboards


@pytest.mark.parametrize("score", ["inf", "-inf"])
def test_leaderboard_refuses_an_infinite_score(tmp_path, score):
    src = tmp_path / "scores.csv"
    src.write_text(f"system,task,task_type,score\nA,t1,x,0.5\nB,t1,x,{score}\n")
    res = CliRunner().invoke(app, ["leaderboard", str(src)])
    assert res.exit_code == 2 and "scores.csv, line 3: score of 'B' on 't1' is infinite" in res.output.replace("\n", "")


def test_leaderboard_refuses_an_infinite_mteb_score(tmp_path):
    path = tmp_path / "org__m" / "rev" / "TurQA.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"task_name": "TurQA", "scores": {"test": [{"hf_subset": "default", "main_score": Infinity}]}}')
    res = CliRunner().invoke(app, ["leaderboard", str(tmp_path)])
    assert res.exit_code == 2 and "main_score is inf, not a finite number" in res.output.replace("\n", "")
