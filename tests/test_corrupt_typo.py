"""typo: edits at the rate asked (measured with an edit distance written here, independently of
terazi's), every kind of slip, the capital stays in place, and the flow passes the configured rate
to every part of a composed condition."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import OSA

from terazi.corrupt.conditions import corrupt, edit_rate
from terazi.corrupt.keyboard import KEY_NEIGHBOURS
from terazi.corrupt.typo import typo_with_edits
from terazi.schemas import CorruptionSpec, DatasetSpec
from tests.conftest import XQUAD_TR

DEMO = Path(__file__).resolve().parents[1] / "terazi" / "demo" / "queries.jsonl"
_LOWER = {"İ": "i", "I": "ı"}


def lower(text: str) -> str:
    return "".join(_LOWER.get(c, c.lower()) for c in text)


def osa_plain(a: str, b: str) -> int:
    """Optimal string alignment distance: insert, delete, substitute, swap two adjacent characters."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


def osa(a: str, b: str) -> int:
    """The same distance on what differs: a shared prefix and suffix cost nothing."""
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    j = 0
    while j < min(len(a), len(b)) - i and a[-1 - j] == b[-1 - j]:
        j += 1
    return osa_plain(a[i : len(a) - j], b[i : len(b) - j])


@settings(max_examples=300, deadline=None)
@given(st.text("abcab ", max_size=9), st.text("abcab ", max_size=9))
def test_trimming_shared_ends_keeps_the_distance(a, b):
    assert osa(a, b) == osa_plain(a, b) == OSA.distance(a, b)  # rapidfuzz's, used below where texts are long


def measured_rate(pairs: list[tuple[str, str]], distance=osa) -> float:
    """Edits between the lowercased texts ÷ letters of the originals: case changes are not slips."""
    return sum(distance(lower(o), lower(v)) for o, v in pairs) / sum(c.isalpha() for o, _ in pairs for c in o)


def demo_queries() -> list[tuple[str, str]]:
    return [(r["_id"], r["text"]) for r in map(json.loads, DEMO.read_text(encoding="utf-8").splitlines())]


def variants(qs, rate: float, samples: int, condition: str = "typo", **spec) -> list[tuple[str, str]]:
    spec = CorruptionSpec(typo_rate=rate, **spec)
    return [(t, corrupt(t, condition, seed=13, query_id=q, sample=s, spec=spec)) for q, t in qs for s in range(samples)]


@pytest.mark.parametrize("rate", [0.05, 0.15, 0.4])
def test_rate_on_the_demo_queries(rate):
    pairs = variants(demo_queries(), rate, 40)
    got = measured_rate(pairs)
    assert abs(got - rate) <= 0.15 * rate, got
    assert got == pytest.approx(edit_rate(pairs))  # what terazi reports is what was measured here


def test_no_hidden_minimum_and_min_edits_on_request():
    qs = demo_queries()
    low = variants(qs, 0.02, 20)
    unchanged = sum(o == v for o, v in low) / len(low)
    letters = [sum(c.isalpha() for c in t) for _, t in qs]
    expected = sum((1 - 0.02) ** n for n in letters) / len(letters)  # no letter picked for an edit
    assert abs(unchanged - expected) < 0.06, (unchanged, expected)
    forced = variants(qs, 0.02, 5, typo_min_edits=1)
    assert all(o != v for o, v in forced)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text("abcçdefgğhıijklmnoöprsştuüvyzABÇĞİIŞÜ", min_size=1, max_size=9), min_size=1, max_size=7),
    st.integers(0, 10**6),
)
def test_each_edit_is_the_slip_it_names(words, seed):
    text = " ".join(words)
    out, edits = typo_with_edits(text, random.Random(seed), rate=0.3)
    rebuilt, last = [], 0
    for e in edits:
        assert text[e.at : e.at + len(e.before)] == e.before
        lb, la = lower(e.before), lower(e.after)
        if e.op == "substitute":
            assert la in KEY_NEIGHBOURS[lb] and e.after.isupper() == e.before.isupper()
        elif e.op == "insert":
            assert la[0] == lb and la[1] in KEY_NEIGHBOURS[lb]
        elif e.op == "double":
            assert e.after == e.before * 2
        elif e.op == "delete":
            assert e.after == ""
        elif e.op == "transpose":
            assert la == lb[::-1] and la[0] != la[1]
            assert [c.isupper() for c in e.after] == [c.isupper() for c in e.before]  # the capital stays put
        elif e.op == "missing_space":
            assert e.before[1] == " " and e.after == e.before[0]
        else:
            assert e.op == "extra_space" and e.after == e.before + " "
        rebuilt += [text[last : e.at], e.after]
        last = e.at + len(e.before)
    assert "".join(rebuilt) + text[last:] == out
    if all(b.at - (a.at + len(a.before)) >= 2 for a, b in itertools.pairwise(edits)):  # apart: none can merge
        assert osa(lower(text), lower(out)) == len(edits)


def _slips_seen(pairs):
    """Slips found from the texts alone: doubled letters and space slips among the variants one edit
    away, and swaps of two neighbouring letters inside a word, whose case pattern must stay put."""
    kinds = {"double": 0, "space": 0, "capital_transpose": 0}
    for o, v in pairs:
        if OSA.distance(lower(o), lower(v)) == 1:
            if len(v) == len(o) + 1 and any(v[:i] + v[i + 1 :] == o and v[i] == v[i - 1] for i in range(1, len(v))):
                kinds["double"] += 1
            if v.replace(" ", "") == o.replace(" ", ""):
                kinds["space"] += 1
        if len(o.split(" ")) != len(v.split(" ")):
            continue
        for wo, wv in zip(o.split(" "), v.split(" ")):
            lo, lv = lower(wo), lower(wv)
            diff = [i for i in range(len(wo)) if len(wo) == len(wv) and lo[i] != lv[i]]
            if len(diff) == 2 and diff[1] == diff[0] + 1 and lo[diff[0]] == lv[diff[1]] and lo[diff[1]] == lv[diff[0]]:
                assert [c.isupper() for c in wv] == [c.isupper() for c in wo], (o, v)
                kinds["capital_transpose"] += wo[diff[0]].isupper() or wo[diff[1]].isupper()
    return kinds


def test_slips_on_the_demo_include_doubles_spaces_and_capital_swaps():
    qs = demo_queries() + [("r", "Ren nehri"), ("k", "Kapadokya Ürgüp"), ("i", "İzmir Iğdır")]
    kinds = _slips_seen(variants(qs, 0.05, 200))
    assert kinds["double"] > 0 and kinds["space"] > 0 and kinds["capital_transpose"] > 0, kinds


def xquad_questions() -> list[tuple[str, str]]:
    data = json.loads(XQUAD_TR.read_text(encoding="utf-8-sig"))["data"]
    return [(qa["id"], qa["question"]) for a in data for p in a["paragraphs"] for qa in p["qas"]]


needs_xquad = pytest.mark.skipif(not XQUAD_TR.is_file(), reason="XQuAD Turkish (../shared/data/xquad) not present")


@pytest.mark.xquad
@needs_xquad
@pytest.mark.parametrize("rate", [0.02, 0.05, 0.15])
def test_rate_on_all_xquad_questions(rate):
    qs = xquad_questions()
    assert len(qs) == 1190
    pairs = variants(qs, rate, 5)
    got = measured_rate(pairs, OSA.distance)  # the hand distance is quadratic in Python: minutes at this size
    print(f"typo {rate}: {got:.4f} edits per letter")
    assert abs(got - rate) <= 0.15 * rate, got
    kinds = _slips_seen(pairs)
    assert kinds["double"] > 0 and kinds["space"] > 0 and kinds["capital_transpose"] > 0, kinds


def _beir_of(tmp_path: Path, qs: list[tuple[str, str]]):
    from terazi.data.beir import write_beir
    from terazi.data.loading import load_dataset

    root = write_beir(
        tmp_path / "ds",
        [{"_id": "d", "text": "bir belge"}],
        [{"_id": q, "text": t} for q, t in qs],
        [(q, "d", 1) for q, _ in qs],
    )
    return load_dataset(DatasetSpec(path=str(root), name="ds"))


def _flow_rate(tmp_path: Path, qs: list[tuple[str, str]], samples: int) -> tuple[float, pl.DataFrame]:
    from terazi.corrupt.variants import corrupt_queries  # the flow's task, run as a plain function

    vs = corrupt_queries(
        _beir_of(tmp_path, qs), "upper+typo", CorruptionSpec(typo_rate=0.4, samples=samples), 13, str(tmp_path / "run")
    )
    assert vs.params == {"typo_rate": 0.4, "typo_min_edits": 0} and vs.samples == samples
    df = pl.read_parquet(vs.path)
    got = measured_rate(list(zip(df["original"], df["text"])), OSA.distance)
    assert vs.edit_rate == pytest.approx(got)
    return got, df


def test_flow_passes_the_typo_rate_to_a_composed_condition(tmp_path):
    got, df = _flow_rate(tmp_path, demo_queries(), 20)
    assert abs(got - 0.4) <= 0.15 * 0.4, got
    assert all(t == t.upper() for t in df["text"])  # upper ran too


@pytest.mark.xquad
@needs_xquad
def test_flow_passes_the_typo_rate_on_xquad(tmp_path):
    got, _ = _flow_rate(tmp_path, xquad_questions(), 2)
    print(f"upper+typo, typo_rate 0.4: {got:.4f} edits per letter")
    assert abs(got - 0.4) <= 0.15 * 0.4, got
