"""terazi.leakage (the leakage check): planted overlaps are found however they were typed, 7 shared words are not
8, disjoint texts give nothing, repeats carry rapidfuzz's own score, bad sources are one line; the vectorised matcher,
the normaliser and the banded near-repeat search are cross-checked against plain-Python implementations on random
texts."""

from __future__ import annotations

import json
import random
import unicodedata

import numpy as np
import polars as pl
import pytest
from rapidfuzz import fuzz

from terazi.base.turkish import to_ascii, tr_upper
from terazi.leakage import LeakageOptions, TrainSource, check
from terazi.leakage.normalize import tokens
from terazi.leakage.repeats import RepeatFinder
from tests.leakage_inputs import (
    FILLER,
    OTHER,
    PLANTED,
    bench_dataset,
    dataset,
    hits,
    jsonl,
    python_ngrams,
    reference_tokens,
    window,
)


@pytest.fixture
def bench(tmp_path):
    return bench_dataset(tmp_path)


# --- planted overlaps ---------------------------------------------------------------------------------------------


def test_an_eight_word_copy_among_other_words_is_found_both_ways(tmp_path, bench):
    passages, train = hits(tmp_path, bench, f"önce başka sözler {window(8)} sonra da başka")
    assert passages == ["d1"]
    assert train == [f"{tmp_path / 'train.jsonl'}:2"]


@pytest.mark.parametrize(
    "typed",
    [
        tr_upper,
        lambda s: unicodedata.normalize("NFD", s),
        lambda s: unicodedata.normalize("NFD", tr_upper(s)),
        lambda s: s.replace(" ", " , ").replace("ı", "ı'"),
    ],
    ids=["uppercase", "nfd", "nfd-uppercase", "punctuation"],
)
def test_the_copy_is_found_however_it_was_cased_composed_or_punctuated(tmp_path, bench, typed):
    text = typed(window(8))
    assert text != window(8)
    assert hits(tmp_path, bench, f"x y {text} z")[0] == ["d1"]


def test_a_copy_without_turkish_letters_is_found_unless_fold_ascii_is_off(tmp_path, bench):
    copy = to_ascii(window(8)).upper()  # typed on a keyboard without Turkish letters, then upper-cased by ASCII rules
    assert copy.isascii()
    assert hits(tmp_path, bench, copy)[0] == ["d1"]
    assert hits(tmp_path, bench, copy, fold_ascii=False)[0] == []


def test_a_copy_upper_cased_by_a_non_turkish_tool_is_found_by_default(tmp_path, bench):
    """Issue 37: `gecesi` → `GECESI` (str.upper), which Turkish lowercasing reads `gecesı`, is found without any
    option; so is a Turkish-cased copy, and either one's lower case."""
    text = "o gece gecesi ile birlikte içeri girdi ve kimse bir şey demedi"
    ds = dataset(tmp_path, "b", [("d1", text)], [("q1", "a")])
    for copy in (text.upper(), tr_upper(text), tr_upper(text).lower(), text.upper().lower()):
        src = jsonl(tmp_path / "t.jsonl", [{"text": copy}])
        assert check([ds], [TrainSource(path=str(src))], LeakageOptions(fold_ascii=False)).datasets[0].passage_hits == [
            "d1"
        ], copy


def test_seven_shared_words_are_not_eight(tmp_path, bench):
    assert hits(tmp_path, bench, f"önce {window(7)} sonra")[0] == []
    assert hits(tmp_path, bench, f"önce {window(7)} sonra", ngram=7)[0] == ["d1"]
    # eight words of the passage, but with one replaced in the middle: two runs of 4 and 3
    broken = PLANTED.split()[1:9]
    broken[4] = "geniş"
    assert hits(tmp_path, bench, " ".join(broken))[0] == []


def test_an_ngram_does_not_run_across_two_fields_or_two_lines(tmp_path, bench):
    src = jsonl(tmp_path / "split.jsonl", [{"text": window(4, 1), "query": window(4, 5)}])
    txt = tmp_path / "split.txt"
    txt.write_text(window(4, 1) + "\n" + window(4, 5) + "\n", encoding="utf-8")
    r = check([bench], [TrainSource(path=str(src), fields=("text", "query")), TrainSource(path=str(txt))])
    assert r.train_hits == [] and r.datasets[0].passage_hits == []


def test_disjoint_texts_give_zero_hits(tmp_path, bench):
    src = jsonl(
        tmp_path / "t.jsonl",
        [
            {
                "text": f"{OTHER[:20]} tamamen farklı kelimelerden kurulu uzun bir cümle {i}",
                "query": "bambaşka bir soru",
            }
            for i in range(50)
        ],
    )
    r = check([bench], [TrainSource(path=str(src), fields=("text", "query"))])
    d = r.datasets[0]
    assert (d.query_hits, d.passage_hits, d.repeats, d.train_hits, r.train_hits, d.examples) == ([], [], [], [], [], [])
    assert d.shares == {k: 0.0 for k in d.shares} and r.sources[0].records == 50 and r.sources[0].records_hit == 0


def test_a_long_query_copied_into_training_is_a_query_hit_and_short_queries_are_counted(tmp_path):
    long_q = "Türkiye'nin en kalabalık şehri olan İstanbul hangi iki kıtaya yayılır"
    ds = dataset(tmp_path, "b", [("d1", OTHER)], [("q1", long_q), ("q2", "kısa soru")])
    src = jsonl(tmp_path / "t.jsonl", [{"text": f"Soru: {tr_upper(long_q)} Cevap: Avrupa ve Asya"}])
    d = check([ds], [TrainSource(path=str(src))]).datasets[0]
    assert d.query_hits == ["q1"] and d.contaminated_queries == ["q1"] and d.queries_long_enough == 1
    assert d.examples[0].kind == "query" and d.examples[0].ngram in d.examples[0].train_text


def test_queries_whose_relevant_passage_is_hit(tmp_path):
    ds = dataset(
        tmp_path,
        "b",
        [("d1", OTHER), ("d2", PLANTED), ("d3", FILLER)],
        [("q1", "a"), ("q2", "b"), ("q3", "c"), ("q4", "d")],
        [("q1", "d2", 1), ("q1", "d1", 1), ("q2", "d2", 0), ("q3", "d3", 2), ("q4", "d1", 1)],
    )
    src = jsonl(tmp_path / "t.jsonl", [{"text": PLANTED}])
    d = check([ds], [TrainSource(path=str(src))]).datasets[0]
    # q2 judges d2 non-relevant (grade 0): not counted, and not among the judged queries' denominator either
    assert d.passage_hits == ["d2"] and d.relevant_hit_queries == ["q1"] and d.judged_queries == 3
    assert d.shares["relevant_hit"] == pytest.approx(1 / 3)


# --- repeats ------------------------------------------------------------------------------------------------------


def test_exact_and_near_repeats_with_rapidfuzz_scores(tmp_path):
    ds = dataset(
        tmp_path,
        "b",
        [("d1", OTHER)],
        [
            ("q1", "İstanbul'da en güzel çay bahçesi nerede?"),
            ("q2", "Rüzgâr neden ıslık çalar"),
            ("q3", "elma kaç kalori"),
        ],
    )
    src = jsonl(
        tmp_path / "t.jsonl",
        [
            {"text": "x", "question": "ISTANBULDA EN GÜZEL ÇAY BAHÇESI NEREDE"},
            {"text": "y", "question": "rüzgâr neden ıslık çalır"},
            {"text": "z", "question": "armut kaç kalori"},
        ],
    )
    d = check(
        [ds], [TrainSource(path=str(src), fields=("text", "question"))], LeakageOptions(fold_ascii=False)
    ).datasets[0]
    by_id = {r.query_id: r for r in d.repeats}
    assert set(by_id) == {"q1", "q2"}  # "ISTANBULDA … BAHÇESI": a capital I is an i, whoever upper-cased it
    assert (by_id["q1"].kind, by_id["q1"].score) == ("exact", 100.0)
    assert by_id["q2"].kind == "near"  # ı and i are one letter: "islik" vs "islik", "calar" vs "calir" but for ç, â
    assert by_id["q2"].score == pytest.approx(
        fuzz.ratio("rüzgâr neden islik çalar", "rüzgâr neden islik çalir"), abs=0.01
    )
    assert fuzz.ratio("elma kaç kalori", "armut kaç kalori") < 90  # q3: below the threshold
    assert by_id["q2"].train == f"{src}:2"
    d = check(
        [ds],
        [TrainSource(path=str(src), fields=("text", "question"))],
        LeakageOptions(fold_ascii=True, near_threshold=None),
    ).datasets[0]
    assert [(r.query_id, r.kind, r.score) for r in d.repeats] == [("q1", "exact", 100.0)]
    assert d.contaminated_queries == ["q1"]


def test_query_fields_default_to_query_like_names_and_can_be_set(tmp_path):
    ds = dataset(tmp_path, "b", [("d1", OTHER)], [("q1", "elma nerede")])
    src = jsonl(tmp_path / "t.jsonl", [{"body": "elma nerede", "anchor": "elma nerede"}])
    assert (
        check([ds], [TrainSource(path=str(src), fields=("body", "anchor"))]).datasets[0].repeats[0].train == f"{src}:1"
    )
    assert check([ds], [TrainSource(path=str(src), fields=("body", "anchor"), queries=())]).datasets[0].repeats == []
    assert check([ds], [TrainSource(path=str(src), fields=("body",), queries=("body",))]).datasets[0].repeats


def mutate(rng: random.Random, s: str) -> str:
    chars = list(s)
    for _ in range(rng.randint(0, 3)):
        op, at = rng.random(), rng.randrange(len(chars))
        if op < 0.4:
            chars[at] = rng.choice("abcçdeğiıoöşuü ")
        elif op < 0.7:
            chars.insert(at, rng.choice("abcçdeğiıoöşuü"))
        elif len(chars) > 3:
            del chars[at]
    return "".join(chars)


def test_near_repeats_match_a_brute_force_search_over_all_pairs():
    rng = random.Random(3)
    words = ["çay", "elma", "şehir", "ıslak", "yol", "gün", "deniz", "kitap", "su", "dağ", "uzun", "kısa"]
    bench = [" ".join(rng.choices(words, k=rng.randint(1, 6))) for _ in range(700)]
    train = [
        mutate(rng, rng.choice(bench)) if rng.random() < 0.5 else " ".join(rng.choices(words, k=rng.randint(1, 6)))
        for _ in range(3000)
    ]
    finder = RepeatFinder(pl.Series(bench), 85.0, fold_ascii=False)
    for s in range(0, len(train), 1000):  # in three batches, as training chunks come
        finder.feed(pl.Series(train[s : s + 1000]), np.arange(s, min(s + 1000, len(train)), dtype=np.int64))

    def norm(t):
        return " ".join(tokens(pl.Series([t]))[0].to_list())

    nb, nt = [norm(b) for b in bench], [norm(t) for t in train]
    for i, b in enumerate(nb):
        scores = [fuzz.ratio(b, t) if b and t else 0.0 for t in nt]
        best = max(scores)
        if best >= 85:
            assert finder.best.score[i] == pytest.approx(best, abs=1e-3)
            assert finder.best.record[i] == scores.index(best)  # the first of equal scores
        else:
            assert finder.best.score[i] == 0


# --- cross-checks against plain Python ----------------------------------------------------------------------------

ALPHABET = "abcçdefgğhıijklmnoöprsştuüvyzâîûABCÇDEFGĞHIİJKLMNOÖPRSŞTUÜVYZÂÎÛ0123456789 ,.;:!?'’-_()\"«»\t\n"


def random_text(rng: random.Random) -> str:
    s = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 60)))
    return unicodedata.normalize("NFD", s) if rng.random() < 0.3 else s


@pytest.mark.parametrize("fold", [False, True])
def test_the_normaliser_matches_a_plain_python_one(fold):
    rng = random.Random(7)
    texts = [random_text(rng) for _ in range(2000)] + ["İIıi", "I\u0307ş", "i\u0307", "Şişli’de", "x_y"]
    assert tokens(pl.Series(texts), fold).to_list() == [reference_tokens(t, fold) for t in texts]


@pytest.mark.parametrize("hold", ["benchmark", "training"])
def test_both_directions_match_a_plain_python_set_implementation(tmp_path, hold):
    """Random texts over a small vocabulary (so that 3-grams are often shared), two datasets, two sources, small
    batches: every hit and every partner, per dataset, equals what Python sets of word tuples say."""
    rng, fold = random.Random(11), LeakageOptions().fold_ascii  # the default normalisation, cross-checked
    vocab = [
        "çay",
        "Elma",
        "şehir",
        "ılık",
        "İzmir",
        "yol",
        "gün",
        "deniz",
        "kitap",
        "su",
        "dağ",
        "ÇAY",
        "kuş",
        "ev",
        "ağaç",
        "yağmur",
        "köprü",
        "taş",
        "kar",
        "ay",
    ]

    def sent(k):
        return " ".join(rng.choices(vocab, k=k)) + rng.choice([".", "!", ",", ""])

    datasets = []
    for name in ("a", "b"):
        docs = [(f"{name}d{i}", sent(rng.randint(0, 12))) for i in range(300)]
        queries = [(f"{name}q{i}", sent(rng.randint(1, 6))) for i in range(80)]
        datasets.append(dataset(tmp_path, name, docs, queries))
    sources, train = [], []
    for s in range(2):
        rows = [{"text": sent(rng.randint(0, 10)), "query": sent(rng.randint(1, 5))} for _ in range(400)]
        sources.append(TrainSource(path=str(jsonl(tmp_path / f"t{s}.jsonl", rows)), fields=("text", "query")))
        train += [(f"{tmp_path / f't{s}.jsonl'}:{k + 1}", r) for k, r in enumerate(rows)]
    r = check(datasets, sources, LeakageOptions(ngram=3, batch=128, hold=hold, max_examples=5))
    assert r.held == hold
    train_grams = [
        (ref, python_ngrams(row["text"], 3, fold) | python_ngrams(row["query"], 3, fold)) for ref, row in train
    ]
    all_train = set().union(*(g for _, g in train_grams))
    union_hits = set()
    for ds, got in zip(datasets, r.datasets):
        docs = [
            (i, json.loads(line)["text"]) for i, line in zip(ds.doc_ids.to_list(), ds.files[0].read_text().splitlines())
        ]
        queries = [(q, ds.queries[q].text) for q in ds.queries]
        assert got.passage_hits == [i for i, t in docs if python_ngrams(t, 3, fold) & all_train]
        assert got.query_hits == [q for q, t in queries if python_ngrams(t, 3, fold) & all_train]
        bench_grams = set().union(*(python_ngrams(t, 3, fold) for _, t in docs + queries))
        expected_train = [ref for ref, g in train_grams if g & bench_grams]
        assert got.train_hits == expected_train
        union_hits |= set(expected_train)
        assert 0 < len(got.passage_hits) < len(docs)  # the test means something: some hits, not all
        for e in got.examples:  # the shared words are shared
            assert tuple(e.ngram.split()) in all_train and tuple(e.ngram.split()) in bench_grams
    assert r.train_hits == [ref for ref, _ in train if ref in union_hits]
