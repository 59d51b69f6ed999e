"""Malformed datasets stop with an error naming the file, the line and the problem."""

from __future__ import annotations

import json

import pytest

from terazi.base.errors import DatasetError
from terazi.data.beir import load_beir
from terazi.data.squad import squad_to_beir
from tests.conftest import XQUAD_TR


def test_tiny_dataset_loads_and_fingerprints(tiny_dataset):
    ds = load_beir(tiny_dataset)
    assert len(ds.docs) == 12 and len(ds.judged_query_ids) == 4
    assert ds.qrels["q1"] == {"d1": 2, "d2": 1, "d3": 0}
    assert load_beir(tiny_dataset).fingerprint == ds.fingerprint
    with open(tiny_dataset / "corpus.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps({"_id": "d13", "text": "yeni"}) + "\n")
    assert load_beir(tiny_dataset).fingerprint != ds.fingerprint


def _rewrite_line(path, n, text):
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[n - 1] = text
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    "file, line, content, problem",
    [
        ("corpus.jsonl", 2, '{"title": "x", "text": "y"}', "field '_id': Field required"),
        ("corpus.jsonl", 3, '{"_id": "d1", "text": "again"}', "duplicate id 'd1' (first on line 1)"),
        ("corpus.jsonl", 4, '{"_id": "d4", "text": ', "not valid JSON"),
        ("queries.jsonl", 2, '{"_id": "q2"}', "field 'text': Field required"),
        ("qrels/test.tsv", 3, "q1\td99\t1", "unknown document id 'd99' (not in the corpus)"),
        ("qrels/test.tsv", 4, "q1\td3\t-1", "negative grade -1"),
        ("qrels/test.tsv", 5, "q2\td4\ttwo", "grade 'two' is not an integer"),
        ("qrels/test.tsv", 6, "q9\td4\t1", "unknown query id 'q9'"),
        ("qrels/test.tsv", 7, "q1\td1\t1", "duplicate judgment for query 'q1', document 'd1'"),
    ],
)
def test_malformed_dataset_names_file_line_and_problem(tiny_dataset, file, line, content, problem):
    _rewrite_line(tiny_dataset / file, line, content)
    with pytest.raises(DatasetError) as info:
        load_beir(tiny_dataset)
    err = info.value
    assert err.path.endswith(file)
    assert err.line == line
    assert problem in str(err)
    assert f"line {line}" in str(err)


def test_missing_file(tiny_dataset):
    (tiny_dataset / "queries.jsonl").unlink()
    with pytest.raises(DatasetError, match="queries.jsonl: missing queries file"):
        load_beir(tiny_dataset)


@pytest.mark.skipif(not XQUAD_TR.is_file(), reason="../shared/data/xquad not present")
def test_squad_converter_on_xquad(tmp_path):
    counts = squad_to_beir(XQUAD_TR, tmp_path / "xq")
    assert counts == {"docs": 240, "queries": 1190}
    ds = load_beir(tmp_path / "xq")
    assert len(ds.judged_query_ids) == 1190
    assert all(len(v) == 1 and set(v.values()) == {1} for v in ds.qrels.values())
    assert not any(d.text.startswith("\ufeff") for d in ds.docs.values())
