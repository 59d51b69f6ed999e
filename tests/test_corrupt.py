"""Turkish casing and query corruptions: pinned outputs and properties every condition shares.

Mobile has its own file (test_corrupt_mobile.py), typo too (test_corrupt_typo.py)."""

from __future__ import annotations

import json
import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from terazi.base.turkish import TURKISH_LETTERS, analyse, to_ascii, tr_lower, tr_upper
from terazi.cli import app
from terazi.corrupt.conditions import RULES, changed, condition_params, corrupt, samples_for
from terazi.schemas import CorruptionSpec, MobileSpec
from tests.conftest import XQUAD_TR


@pytest.mark.parametrize(
    "word, upper, ascii_",
    [
        ("İstanbul", "İSTANBUL", "Istanbul"),
        ("ılık", "ILIK", "ilik"),
        ("IĞDIR", "IĞDIR", "IGDIR"),
        ("şoför", "ŞOFÖR", "sofor"),
        ("Ali'nin", "ALİ'NİN", "Ali'nin"),
        ("çiğköfte", "ÇİĞKÖFTE", "cigkofte"),
    ],
)
def test_upper_and_ascii_pinned(word, upper, ascii_):
    assert corrupt(word, "upper") == upper
    assert corrupt(word, "ascii_full") == ascii_


def test_ascii_partial_pinned():
    # Outputs of the version a Turkish reader checked (seed 13, sample 0, rate 0.5): they must not move.
    assert (
        corrupt("Ispanak demir açısından zengin mi?", "ascii_partial", seed=13, query_id="q11")
        == "Ispanak demir açisindan zengin mi?"
    )
    assert (
        corrupt("İstanbul'un fethi hangi yıl oldu?", "ascii_partial", seed=13, query_id="q07")
        == "Istanbul'un fethi hangi yıl oldu?"
    )
    assert (
        corrupt("Kapadokya'ya nasıl gidilir?", "ascii_partial", seed=13, query_id="q02")
        == "Kapadokya'ya nasil gidilir?"
    )
    everything = corrupt(
        "çğıöşü ÇĞİÖŞÜ", "ascii_partial", seed=1, query_id="x", spec=CorruptionSpec(ascii_partial_rate=1)
    )
    assert everything == "cgiosu CGIOSU"


def test_turkish_lower_including_combining_dot():
    assert tr_lower("IĞDIR") == "ığdır"
    assert tr_lower("İSTANBUL") == "istanbul"
    assert tr_lower("I\u0307stanbul") == "istanbul"  # capital I + combining dot above
    assert tr_upper("i\u0307") == "İ"
    assert "İ".lower() != tr_lower("İ")  # what Python gets wrong


def test_analyse_meets_ascii_and_turkish_spellings():
    assert analyse("şehirde") == analyse("SEHIRDE") == analyse("ŞEHİRDE")


def test_to_ascii_maps_every_turkish_letter():
    assert to_ascii("çğıöşüÇĞİÖŞÜ") == "cgiosuCGIOSU"


ALPHABET = "abcçdefgğhıijklmnoöprsştuüvyzABCÇDEFGĞHIİJKLMNOÖPRSŞTUÜVYZ0123456789 '’?.,-/:"
texts = st.text(alphabet=ALPHABET, min_size=1, max_size=60)
COMPOSED = sorted(RULES) + ["upper+typo", "mobile+typo", "ascii_partial+mobile", "upper+mobile"]
HIGH = CorruptionSpec(typo_rate=0.5, ascii_partial_rate=0.5, mobile=MobileSpec(slip=0.5))


@settings(max_examples=300, deadline=None)
@given(texts, st.sampled_from(COMPOSED), st.integers(0, 10**6), st.text("abc0123", max_size=4), st.integers(0, 4))
def test_deterministic_for_seed_query_and_sample_and_never_empty(text, condition, seed, qid, sample):
    a = corrupt(text, condition, seed=seed, query_id=qid, sample=sample, spec=HIGH)
    b = corrupt(text, condition, seed=seed, query_id=qid, sample=sample, spec=HIGH)
    assert a == b
    assert a.strip() or not text.strip()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.from_regex(r"[0-9]{1,4}", fullmatch=True), st.from_regex(r"[a-zçğışöüA-Z]{1,7}", fullmatch=True)),
        min_size=1,
        max_size=8,
    ),
    st.lists(
        st.sampled_from([" ", "-", "/", ".", ",", "'", "’", " - ", ", ", "? ", "'a ", "'ten "]), min_size=7, max_size=7
    ),
    st.sampled_from(COMPOSED),
    st.integers(0, 10**6),
)
def test_no_digit_sequence_is_merged_with_another(tokens, seps, condition, seed):
    text = "".join(t + s for t, s in zip(tokens, seps)).strip()
    out = corrupt(text, condition, seed=seed, query_id="q", spec=HIGH)
    assert re.findall(r"\d+", out) == re.findall(r"\d+", text), (text, out)


def test_different_seeds_differ():
    text = "Türkiye'nin en yüksek dağı hangisidir ve kaç metredir?"
    for condition in (c for c, v in RULES.items() if v.stochastic(CorruptionSpec())):
        outs = {corrupt(text, condition, seed=s, query_id="q", spec=HIGH) for s in range(20)}
        assert len(outs) > 5, condition


@settings(max_examples=200, deadline=None)
@given(texts, st.integers(0, 10**6))
def test_ascii_output_has_no_turkish_letters(text, seed):
    assert not any(ch in TURKISH_LETTERS for ch in corrupt(text, "ascii_full"))
    assert not any(
        ch in TURKISH_LETTERS
        for ch in corrupt(text, "ascii_partial", seed=seed, spec=CorruptionSpec(ascii_partial_rate=1))
    )
    always_ascii = CorruptionSpec(mobile=MobileSpec(ascii_query=1))
    assert not any(ch in TURKISH_LETTERS for ch in corrupt(text, "mobile", seed=seed, spec=always_ascii))


def test_changed_is_text_inequality_up_to_unicode_composition(tmp_path):
    assert changed("kedi", "Kedi") and not changed("kedi", "kedi")
    nfd = unicodedata.normalize("NFD", "café çay")  # e + combining accent, c + combining cedilla
    out = corrupt(nfd, "ascii_full")
    assert out == "café cay" and changed(nfd, out)
    only_recomposed = corrupt(unicodedata.normalize("NFD", "café"), "ascii_full")
    assert only_recomposed != unicodedata.normalize("NFD", "café") and not changed(
        unicodedata.normalize("NFD", "café"), only_recomposed
    )


def test_changed_flag_and_share_in_the_task_are_exact(tmp_path):
    import polars as pl

    from terazi.corrupt.variants import corrupt_queries
    from terazi.data.beir import write_beir
    from terazi.data.loading import load_dataset
    from terazi.schemas import DatasetSpec

    queries = [("a", "kedi neden mırlar"), ("b", "ok"), ("c", "Van Gölü neden tuzlu?"), ("d", "12 34")]
    root = write_beir(
        tmp_path / "ds",
        [{"_id": "d1", "text": "x"}],
        [{"_id": i, "text": t} for i, t in queries],
        [(i, "d1", 1) for i, _ in queries],
    )
    ds = load_dataset(DatasetSpec(path=str(root), name="ds"))
    spec = CorruptionSpec(samples=4, typo_rate=0.05)
    for condition in ("upper", "ascii_full", "typo", "mobile", "upper+typo"):
        vs = corrupt_queries(ds, condition, spec, 13, str(tmp_path / "run"))
        df = pl.read_parquet(vs.path)
        assert df["changed"].to_list() == [o != t for o, t in zip(df["original"], df["text"])], condition
        any_changed = {q for q, c in zip(df["query_id"], df["changed"]) if c}
        assert vs.n_changed == len(any_changed) and vs.n_queries == 4
    upper = pl.read_parquet(corrupt_queries(ds, "upper", spec, 13, str(tmp_path / "run")).path)
    assert dict(zip(upper["query_id"], upper["changed"])) == {"a": True, "b": True, "c": True, "d": False}


def test_conditions_compose_left_to_right():
    text = "Işık şehirde yanıyor"
    spec = CorruptionSpec(typo_rate=1.0)
    up_typo = corrupt(text, "upper+typo", seed=3, query_id="q", spec=spec)
    assert up_typo == corrupt(tr_upper(text), "typo", seed=3, query_id="q", spec=spec)
    assert corrupt(text, "upper+ascii_full") == "ISIK SEHIRDE YANIYOR"
    assert corrupt(text, "ascii_full+upper") == "ISİK SEHİRDE YANİYOR"  # order matters: ascii i, then Turkish upper
    with pytest.raises(ValueError, match="unknown condition 'shout'"):
        corrupt(text, "upper+shout")


def test_every_part_of_a_composed_condition_reads_its_settings():
    spec = CorruptionSpec(typo_rate=0.4, ascii_partial_rate=0.2, mobile=MobileSpec(slip=0.1))
    assert condition_params("upper+typo", spec) == {"typo_rate": 0.4, "typo_min_edits": 0}
    both = condition_params("ascii_partial+typo+mobile", spec)
    assert both["typo_rate"] == 0.4 and both["ascii_partial_rate"] == 0.2 and both["mobile.slip"] == 0.1
    assert condition_params("upper", spec) == {}
    assert samples_for("upper+ascii_full", 5, spec) == 1 and samples_for("upper+typo", 5, spec) == 5
    assert samples_for("colloquial", 5, spec) == 1
    fixed = CorruptionSpec(mobile=MobileSpec(**{k: 1.0 for k in MobileSpec.model_fields} | {"slip": 0.0}))
    assert samples_for("mobile", 5, fixed) == 1 and samples_for("mobile", 5) == 5


def _cli(args: list[str], stdin: str = "") -> list[dict]:
    from typer.testing import CliRunner

    from terazi.cli import app

    res = CliRunner().invoke(app, ["corrupt", *args], input=stdin)
    assert res.exit_code == 0, res.output
    return [json.loads(line) for line in res.output.splitlines()]


def test_cli_writes_one_record_per_variant(tmp_path):
    src = tmp_path / "q.jsonl"
    src.write_text(
        '{"_id": "a", "text": "Türkiye\'nin başkenti neresi"}\n{"_id": "b", "text": "42"}\n', encoding="utf-8"
    )
    recs = _cli(["--condition", "typo", "--samples", "3", "--rate", "0.5", str(src)])
    assert [(r["_id"], r["sample"]) for r in recs] == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1), ("b", 2)]
    assert all(r["changed"] == (r["text"] != r["original"]) for r in recs)
    assert all(r["changed"] for r in recs if r["_id"] == "a")
    assert all(not r["changed"] and r["text"] == "42" for r in recs if r["_id"] == "b")  # no letters, nothing to edit
    up = _cli(["--condition", "upper"], '{"_id": "x", "text": "ılık şehir"}\n')
    assert up == [
        {
            "_id": "x",
            "text": "ILIK ŞEHİR",
            "original": "ılık şehir",
            "condition": "upper",
            "seed": 13,
            "sample": 0,
            "changed": True,
        }
    ]


def test_cli_mobile_rules_and_bad_settings():
    from typer.testing import CliRunner

    from terazi.cli import app

    q = '{"_id": "x", "text": "Osmanlı Devleti ne zaman kuruldu?"}\n'
    always = _cli(["--condition", "mobile", "--samples", "20", "--mobile", "ne_zaman=1", "--slip-rate", "0"], q)
    assert len(always) == 20 and all("zmn" in r["text"] for r in always)
    never = _cli(["--condition", "mobile", "--samples", "20", "--mobile", "ne_zaman=0"], q)
    assert not any("zmn" in r["text"] for r in never)
    for args, message in (
        (["--mobile", "zaman=1"], "unknown rule 'zaman'"),
        (["--mobile", "slip"], "expected RULE=PROBABILITY"),
        (["--mobile", "slip=2"], "mobile.slip"),
        (["--rate", "0"], "--rate: must be > 0, got 0"),
    ):
        res = CliRunner().invoke(app, ["corrupt", "--condition", "mobile", *args], input=q)
        assert res.exit_code != 0 and message in res.output, (args, res.output)


@pytest.mark.xquad
@pytest.mark.skipif(not XQUAD_TR.is_file(), reason="XQuAD Turkish (../shared/data/xquad) not present")
def test_share_of_xquad_questions_changed():
    from benchmarks.bench_corruptions import questions, shares

    res = shares(questions(), samples=2, seed=13)
    share = {c: m["queries_changed"] for c, m in res.items()}
    assert share["clean"] == 0.0
    assert share["upper"] == 1.0  # every question has a lowercase letter
    assert 0.9 < share["ascii_full"] < 1.0  # a few questions have no Turkish letter
    assert share["ascii_partial"] <= share["ascii_full"]
    assert share["mobile"] > 0.99  # questions are capitalised and end in '?'
    assert 0.95 < share["typo"] < 1.0  # 52 letters on average at 0.05: a few questions escape both samples
    assert 0.05 < share["colloquial"] < 0.6
    assert res["upper"]["edit_rate"] == 0.0 and res["clean"]["edit_rate"] == 0.0  # case is not an edit


def test_every_condition_name_has_its_rule():
    from terazi.schemas import CONDITIONS

    assert set(RULES) == set(CONDITIONS)


@pytest.mark.parametrize(
    "args",
    [
        ["--condition", "ascii_partial", "--rate", "1"],
        [
            "--condition",
            "mobile",
            "--mobile",
            "ascii_letter=1",
            "--mobile",
            "lowercase=0",
            "--mobile",
            "ascii_query=0",
            "--slip-rate",
            "0",
        ],
    ],
)
def test_7_the_lower_case_of_dotted_capital_i_is_folded(tmp_path, args):
    text = unicodedata.normalize("NFD", "İyi akşamlar".lower())  # 'i̇yi akşamlar': i + U+0307 stays so in NFC too
    assert "i\u0307" in unicodedata.normalize("NFC", text)
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"_id": "q1", "text": text}, ensure_ascii=False) + "\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["corrupt", str(queries), *args])
    out = json.loads(res.output.splitlines()[0])
    assert out["text"].startswith("iyi ") and "\u0307" not in out["text"] and out["changed"], out
