"""Turkish casing and query corruptions: pinned outputs and properties."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from terazi.corrupt import CONDITIONS, KEY_NEIGHBOURS, colloquial, corrupt, mobile, typo_with_edits
from tests.conftest import XQUAD_TR
from terazi.turkish import TURKISH_LETTERS, analyse, to_ascii, tr_lower, tr_upper


@pytest.mark.parametrize("word, upper, ascii_", [
    ("İstanbul", "İSTANBUL", "Istanbul"),
    ("ılık", "ILIK", "ilik"),
    ("IĞDIR", "IĞDIR", "IGDIR"),
    ("şoför", "ŞOFÖR", "sofor"),
    ("Ali'nin", "ALİ'NİN", "Ali'nin"),
    ("çiğköfte", "ÇİĞKÖFTE", "cigkofte"),
])
def test_upper_and_ascii_pinned(word, upper, ascii_):
    assert corrupt(word, "upper") == upper
    assert corrupt(word, "ascii_full") == ascii_


def test_turkish_lower_including_combining_dot():
    assert tr_lower("IĞDIR") == "ığdır"
    assert tr_lower("İSTANBUL") == "istanbul"
    assert tr_lower("I\u0307stanbul") == "istanbul"  # capital I + combining dot above
    assert tr_upper("i\u0307") == "İ"
    assert "İ".lower() != tr_lower("İ")  # what Python gets wrong


def test_analyse_meets_ascii_and_turkish_spellings():
    assert analyse("şehirde") == analyse("SEHIRDE") == analyse("ŞEHİRDE")


def test_colloquial_rules():
    assert colloquial("ne yapıyorsun") == "ne yapıyon"
    assert colloquial("geliyorum") == "geliyom"
    assert colloquial("bir şey değil") == "bişey diil"
    assert colloquial("Geliyor musun") == "Geliyomusun"


def test_mobile_drops_punctuation_case_and_turkish_letters():
    out = mobile("Ali'nin şoförü İstanbul'a mı gidiyor?", random.Random(0), slip_rate=0.0)
    assert out == "alinin soforu istanbulami gidiyo"


texts = st.text(alphabet="abcçdefgğhıijklmnoöprsştuüvyzABCÇDEFGĞHIİJKLMNOÖPRSŞTUÜVYZ '?.,", min_size=1, max_size=60)
STOCHASTIC = [c for c, v in CONDITIONS.items() if v.stochastic]


@settings(max_examples=200, deadline=None)
@given(texts, st.sampled_from(sorted(CONDITIONS)), st.integers(0, 10**6))
def test_same_seed_same_output_and_never_empty(text, condition, seed):
    a = corrupt(text, condition, seed=seed, query_id="q", rate=0.5)
    b = corrupt(text, condition, seed=seed, query_id="q", rate=0.5)
    assert a == b
    assert a.strip() or not text.strip()


def test_different_seeds_differ():
    text = "Türkiye'nin en yüksek dağı hangisidir ve kaç metredir"
    for condition in STOCHASTIC:
        outs = {corrupt(text, condition, seed=s, query_id="q", rate=0.5, slip_rate=0.5) for s in range(20)}
        assert len(outs) > 5, condition


@settings(max_examples=200, deadline=None)
@given(texts, st.integers(0, 10**6))
def test_ascii_output_has_no_turkish_letters(text, seed):
    assert not any(ch in TURKISH_LETTERS for ch in corrupt(text, "ascii_full"))
    assert not any(ch in TURKISH_LETTERS for ch in corrupt(text, "mobile", seed=seed))
    partial = corrupt(text, "ascii_partial", seed=seed, rate=1.0)
    assert not any(ch in TURKISH_LETTERS for ch in partial)


def _damerau(a: str, b: str) -> int:
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="abcçdefgğhıijklmnoöprsştuüvyz", min_size=1, max_size=9), min_size=1, max_size=8),
       st.integers(0, 10**6))
def test_typo_changes_each_affected_word_by_exactly_its_edit(words, seed):
    text = " ".join(words)
    out, edits = typo_with_edits(text, random.Random(seed), rate=0.4)
    out_words = out.split(" ")
    assert len(out_words) == len(words)
    long_idx = [i for i, w in enumerate(words) if len(w) >= 3]
    edited = {long_idx[e.word]: e for e in edits}
    for i, (before, after) in enumerate(zip(words, out_words)):
        if i in edited:
            assert _damerau(before, after) == 1, (before, after)
            e = edited[i]
            if e.op == "substitute":
                assert tr_lower(e.after) in KEY_NEIGHBOURS[tr_lower(e.before)]
                assert after == before[: e.at] + e.after + before[e.at + 1 :]
        else:
            assert before == after
    if long_idx:
        assert out != text
    else:
        assert out == text and not edits


def test_to_ascii_maps_every_turkish_letter():
    assert to_ascii("çğıöşüÇĞİÖŞÜ") == "cgiosuCGIOSU"


def test_cli_writes_one_record_per_variant(tmp_path):
    import json

    from typer.testing import CliRunner

    from terazi.cli import app

    src = tmp_path / "q.jsonl"
    src.write_text('{"_id": "a", "text": "Türkiye\'nin başkenti neresi"}\n{"_id": "b", "text": "ok"}\n', encoding="utf-8")
    res = CliRunner().invoke(app, ["corrupt", "--condition", "typo", "--samples", "3", "--rate", "0.5", str(src)])
    assert res.exit_code == 0, res.output
    recs = [json.loads(line) for line in res.output.splitlines()]
    assert [(r["_id"], r["sample"]) for r in recs] == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1), ("b", 2)]
    assert all(r["changed"] for r in recs if r["_id"] == "a")
    assert all(not r["changed"] and r["text"] == "ok" for r in recs if r["_id"] == "b")  # too short to edit
    up = CliRunner().invoke(app, ["corrupt", "--condition", "upper"], input='{"_id": "x", "text": "ılık şehir"}\n')
    assert json.loads(up.output) == {"_id": "x", "text": "ILIK ŞEHİR", "original": "ılık şehir", "condition": "upper",
                                     "seed": 13, "sample": 0, "changed": True}


@pytest.mark.skipif(not XQUAD_TR.is_file(), reason="../shared/data/xquad not present")
def test_share_of_xquad_questions_changed():
    from benchmarks.bench_corruptions import questions, shares

    res = shares(questions(), samples=2, seed=13)
    print({c: round(q, 3) for c, (q, _) in res.items()})
    assert res["clean"][0] == 0.0
    assert res["upper"][0] == 1.0  # every question has a lowercase letter
    assert 0.9 < res["ascii_full"][0] < 1.0  # a few questions have no Turkish letter
    assert res["ascii_partial"][0] <= res["ascii_full"][0]
    assert res["typo"][0] > 0.99 and res["mobile"][0] > 0.99
    assert 0.05 < res["colloquial"][0] < 0.6


def test_conditions_compose_left_to_right():
    text = "Işık şehirde yanıyor"
    up_typo = corrupt(text, "upper+typo", seed=3, query_id="q", rate=1.0)
    assert up_typo == corrupt(tr_upper(text), "typo", seed=3, query_id="q", rate=1.0)
    assert corrupt(text, "upper+ascii_full") == "ISIK SEHIRDE YANIYOR"
    assert corrupt(text, "ascii_full+upper") == "ISİK SEHİRDE YANİYOR"  # order matters: ascii i, then Turkish upper
    with pytest.raises(ValueError, match="unknown condition 'shout'"):
        corrupt(text, "upper+shout")
