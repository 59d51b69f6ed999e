"""terazi.leakage: planted overlaps are found however they were typed, 7 shared words are not 8, disjoint texts give
nothing, repeats carry rapidfuzz's own score, bad sources are one line; the vectorised matcher, the normaliser and
the banded near-repeat search are cross-checked against plain-Python implementations on random texts."""

from __future__ import annotations

import gzip
import json
import random
import re
import unicodedata
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from pydantic import ValidationError
from rapidfuzz import fuzz

from terazi.data import load_beir, write_beir
from terazi.errors import ConfigError, DatasetError
from terazi.leakage import LeakageOptions, TrainSource, check, write
from terazi.leakage.normalize import tokens
from terazi.leakage.repeats import RepeatFinder
from terazi.turkish import to_ascii, tr_lower, tr_upper
from tests.conftest import XQUAD_TR

PLANTED = "kuzey rüzgârı sabah erkenden şehrin dar sokaklarında ıslık çalarak dolaştı"  # 10 words
FILLER = "bugün hava oldukça güzeldi ve çocuklar parkta top oynadılar akşama kadar"
OTHER = "masanın üstünde kırmızı bir elma ile yarım kalmış bir kitap duruyordu"


def dataset(root: Path, name: str, docs: list[tuple[str, str]], queries: list[tuple[str, str]],
            qrels: list[tuple[str, str, int]] | None = None):
    qrels = qrels if qrels is not None else [(queries[0][0], docs[0][0], 1)]
    return load_beir(write_beir(root / name, [{"_id": i, "text": t} for i, t in docs],
                                [{"_id": i, "text": t} for i, t in queries], qrels))


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def bench(tmp_path):
    return dataset(tmp_path, "bench", [("d1", f"{FILLER}. {PLANTED}, dedi."), ("d2", OTHER)],
                   [("q1", "rüzgâr neden ıslık çalar"), ("q2", "elma nerede")], [("q1", "d1", 1), ("q2", "d2", 1)])


def hits(tmp_path, bench, text: str, **options):
    src = jsonl(tmp_path / "train.jsonl", [{"text": "başka bir şey"}, {"text": text}])
    r = check([bench], [TrainSource(path=str(src))], LeakageOptions(**options))
    return r.datasets[0].passage_hits, r.train_hits


def window(k: int, start: int = 1) -> str:
    return " ".join(PLANTED.split()[start:start + k])


# --- planted overlaps ---------------------------------------------------------------------------------------------

def test_an_eight_word_copy_among_other_words_is_found_both_ways(tmp_path, bench):
    passages, train = hits(tmp_path, bench, f"önce başka sözler {window(8)} sonra da başka")
    assert passages == ["d1"]
    assert train == [f"{tmp_path / 'train.jsonl'}:2"]


@pytest.mark.parametrize("typed", [tr_upper, lambda s: unicodedata.normalize("NFD", s),
                                   lambda s: unicodedata.normalize("NFD", tr_upper(s)),
                                   lambda s: s.replace(" ", " , ").replace("ı", "ı'")],
                         ids=["uppercase", "nfd", "nfd-uppercase", "punctuation"])
def test_the_copy_is_found_however_it_was_cased_composed_or_punctuated(tmp_path, bench, typed):
    text = typed(window(8))
    assert text != window(8)
    assert hits(tmp_path, bench, f"x y {text} z")[0] == ["d1"]


def test_a_copy_without_turkish_letters_is_found_only_with_fold_ascii(tmp_path, bench):
    copy = to_ascii(window(8)).upper()  # typed on a keyboard without Turkish letters, then upper-cased by ASCII rules
    assert copy.isascii()
    assert hits(tmp_path, bench, copy)[0] == []
    assert hits(tmp_path, bench, copy, fold_ascii=True)[0] == ["d1"]


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
    src = jsonl(tmp_path / "t.jsonl", [{"text": f"{OTHER[:20]} tamamen farklı kelimelerden kurulu uzun bir cümle {i}",
                                        "query": "bambaşka bir soru"} for i in range(50)])
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
    ds = dataset(tmp_path, "b", [("d1", OTHER), ("d2", PLANTED), ("d3", FILLER)],
                 [("q1", "a"), ("q2", "b"), ("q3", "c"), ("q4", "d")],
                 [("q1", "d2", 1), ("q1", "d1", 1), ("q2", "d2", 0), ("q3", "d3", 2), ("q4", "d1", 1)])
    src = jsonl(tmp_path / "t.jsonl", [{"text": PLANTED}])
    d = check([ds], [TrainSource(path=str(src))]).datasets[0]
    # q2 judges d2 non-relevant (grade 0): not counted, and not among the judged queries' denominator either
    assert d.passage_hits == ["d2"] and d.relevant_hit_queries == ["q1"] and d.judged_queries == 3
    assert d.shares["relevant_hit"] == pytest.approx(1 / 3)


# --- repeats ------------------------------------------------------------------------------------------------------

def test_exact_and_near_repeats_with_rapidfuzz_scores(tmp_path):
    ds = dataset(tmp_path, "b", [("d1", OTHER)], [("q1", "İstanbul'da en güzel çay bahçesi nerede?"),
                                                  ("q2", "Rüzgâr neden ıslık çalar"), ("q3", "elma kaç kalori")])
    src = jsonl(tmp_path / "t.jsonl", [{"text": "x", "question": "ISTANBULDA EN GÜZEL ÇAY BAHÇESI NEREDE"},
                                       {"text": "y", "question": "rüzgâr neden ıslık çalır"},
                                       {"text": "z", "question": "armut kaç kalori"}])
    d = check([ds], [TrainSource(path=str(src), fields=("text", "question"))]).datasets[0]
    by_id = {r.query_id: r for r in d.repeats}
    assert set(by_id) == {"q1", "q2"}  # "ISTANBULDA … BAHÇESI" reads ıstanbulda … bahçesı: the capital I is
    assert by_id["q1"].kind == "near"  # dotless in Turkish, a different letter from i without --fold-ascii
    assert by_id["q1"].score == pytest.approx(fuzz.ratio("istanbulda en güzel çay bahçesi nerede",
                                                         "ıstanbulda en güzel çay bahçesı nerede"), abs=0.01)
    assert by_id["q2"].score == pytest.approx(fuzz.ratio("rüzgâr neden ıslık çalar", "rüzgâr neden ıslık çalır"),
                                              abs=0.01)
    assert fuzz.ratio("elma kaç kalori", "armut kaç kalori") < 90  # q3: below the threshold
    assert by_id["q2"].train == f"{src}:2"
    d = check([ds], [TrainSource(path=str(src), fields=("text", "question"))],
              LeakageOptions(fold_ascii=True, near_threshold=None)).datasets[0]
    assert [(r.query_id, r.kind, r.score) for r in d.repeats] == [("q1", "exact", 100.0)]
    assert d.contaminated_queries == ["q1"]


def test_query_fields_default_to_query_like_names_and_can_be_set(tmp_path):
    ds = dataset(tmp_path, "b", [("d1", OTHER)], [("q1", "elma nerede")])
    src = jsonl(tmp_path / "t.jsonl", [{"body": "elma nerede", "anchor": "elma nerede"}])
    assert check([ds], [TrainSource(path=str(src), fields=("body", "anchor"))]).datasets[0].repeats[0].train == f"{src}:1"
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
    train = [mutate(rng, rng.choice(bench)) if rng.random() < 0.5 else " ".join(rng.choices(words, k=rng.randint(1, 6)))
             for _ in range(3000)]
    finder = RepeatFinder(pl.Series(bench), 85.0, fold_ascii=False)
    for s in range(0, len(train), 1000):  # in three batches, as training chunks come
        finder.feed(pl.Series(train[s:s + 1000]), np.arange(s, min(s + 1000, len(train)), dtype=np.int64))
    norm = lambda t: " ".join(tokens(pl.Series([t]))[0].to_list())
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

def reference_tokens(text: str, fold: bool) -> list[str]:
    """The normalisation rules written out in plain Python, character by character."""
    t = tr_lower(text)
    t = to_ascii(t) if fold else t
    t = re.sub("['’‘ʼ`´]", "", t)
    out, cur = [], []
    for ch in t:
        if unicodedata.category(ch)[0] in "LMN":
            cur.append(ch)
        elif cur:
            out.append("".join(cur))
            cur = []
    return out + (["".join(cur)] if cur else [])


ALPHABET = "abcçdefgğhıijklmnoöprsştuüvyzâîûABCÇDEFGĞHIİJKLMNOÖPRSŞTUÜVYZÂÎÛ0123456789 ,.;:!?'’-_()\"«»\t\n"


def random_text(rng: random.Random) -> str:
    s = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 60)))
    return unicodedata.normalize("NFD", s) if rng.random() < 0.3 else s


@pytest.mark.parametrize("fold", [False, True])
def test_the_normaliser_matches_a_plain_python_one(fold):
    rng = random.Random(7)
    texts = [random_text(rng) for _ in range(2000)] + ["İIıi", "I\u0307ş", "i\u0307", "Şişli’de", "x_y"]
    assert tokens(pl.Series(texts), fold).to_list() == [reference_tokens(t, fold) for t in texts]


def python_ngrams(text: str, n: int, fold: bool = False) -> set[tuple[str, ...]]:
    toks = reference_tokens(text, fold)
    return {tuple(toks[i:i + n]) for i in range(len(toks) - n + 1)}


@pytest.mark.parametrize("hold", ["benchmark", "training"])
def test_both_directions_match_a_plain_python_set_implementation(tmp_path, hold):
    """Random texts over a small vocabulary (so that 3-grams are often shared), two datasets, two sources, small
    batches: every hit and every partner, per dataset, equals what Python sets of word tuples say."""
    rng = random.Random(11)
    vocab = ["çay", "Elma", "şehir", "ılık", "İzmir", "yol", "gün", "deniz", "kitap", "su", "dağ", "ÇAY", "kuş", "ev",
             "ağaç", "yağmur", "köprü", "taş", "kar", "ay"]
    sent = lambda k: " ".join(rng.choices(vocab, k=k)) + rng.choice([".", "!", ",", ""])
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
    train_grams = [(ref, python_ngrams(row["text"], 3) | python_ngrams(row["query"], 3)) for ref, row in train]
    all_train = set().union(*(g for _, g in train_grams))
    union_hits = set()
    for ds, got in zip(datasets, r.datasets):
        docs = [(i, json.loads(line)["text"]) for i, line in zip(ds.doc_ids.to_list(), ds.files[0].read_text().splitlines())]
        queries = [(q, ds.queries[q].text) for q in ds.queries]
        assert got.passage_hits == [i for i, t in docs if python_ngrams(t, 3) & all_train]
        assert got.query_hits == [q for q, t in queries if python_ngrams(t, 3) & all_train]
        bench_grams = set().union(*(python_ngrams(t, 3) for _, t in docs + queries))
        expected_train = [ref for ref, g in train_grams if g & bench_grams]
        assert got.train_hits == expected_train
        union_hits |= set(expected_train)
        assert 0 < len(got.passage_hits) < len(docs)  # the test means something: some hits, not all
        for e in got.examples:  # the shared words are shared
            assert tuple(e.ngram.split()) in all_train and tuple(e.ngram.split()) in bench_grams
    assert r.train_hits == [ref for ref, _ in train if ref in union_hits]


# --- sources ------------------------------------------------------------------------------------------------------

def test_every_kind_of_source_is_read_with_its_record_names(tmp_path, bench):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "mixed"
    (folder / "sub").mkdir(parents=True)
    jsonl(folder / "a.jsonl", [{"text": "yok"}])
    (folder / "a.jsonl").write_text("\n" + (folder / "a.jsonl").read_text() + "\n" + json.dumps({"text": PLANTED}) + "\n")
    pq.write_table(pa.table({"text": [["yok", None], [window(8)]], "n": [1, 2]}), folder / "sub" / "b.parquet")
    with gzip.open(folder / "c.txt.gz", "wt", encoding="utf-8") as f:
        f.write("yok\n\n" + window(9) + "\n")
    (folder / ".hidden.txt").write_text(PLANTED)
    (folder / "notes.md").write_text(PLANTED)
    r = check([bench], [TrainSource(path=str(folder))])
    assert r.train_hits == [f"{folder}/a.jsonl:4", f"{folder}/c.txt.gz:3", f"{folder}/sub/b.parquet:2"]
    assert (r.sources[0].files, r.sources[0].records, r.sources[0].texts) == (3, 6, 6)


def test_a_beir_folder_and_a_saved_datasets_table_are_training_sources(tmp_path, bench):
    import datasets

    beir = write_beir(tmp_path / "beir-train", [{"_id": "t1", "title": "Başlık", "text": window(8)}],
                      [{"_id": "tq", "text": "Rüzgâr neden ıslık çalar?"}], [("tq", "t1", 1)])
    saved = tmp_path / "saved"
    datasets.DatasetDict({"train": datasets.Dataset.from_dict({"text": ["yok", PLANTED]}),
                          "test": datasets.Dataset.from_dict({"text": ["yok"]})}).save_to_disk(str(saved))
    r = check([bench], [TrainSource(path=str(beir)), TrainSource(path=f"hf:{saved}")])
    assert r.train_hits == [f"{beir}/corpus.jsonl:1", f"{saved}/train:2"]
    assert [(x.query_id, x.kind, x.train) for x in r.datasets[0].repeats] == [("q1", "exact", f"{beir}/queries.jsonl:1")]
    with pytest.raises(DatasetError, match="no 'dev' among"):
        check([bench], [TrainSource(path=str(saved), split="dev")])


def one_line(exc: pytest.ExceptionInfo, *parts: str) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and all(p in msg for p in parts), msg
    return msg


def test_bad_sources_are_one_line_each(tmp_path, bench):
    import pyarrow as pa
    import pyarrow.parquet as pq

    cases = {}
    cases["missing"] = (tmp_path / "nope.jsonl", ("nope.jsonl", "not found"))
    (tmp_path / "nofield.jsonl").write_text('{"body": "x"}\n')
    cases["field"] = (tmp_path / "nofield.jsonl", ("nofield.jsonl, line 1", "no field 'text'", "body"))
    (tmp_path / "late.jsonl").write_text('{"text": "x"}\n\n{"text": 3}\n')
    cases["type"] = (tmp_path / "late.jsonl", ("late.jsonl, line 3", "field 'text' is int"))
    (tmp_path / "latin.jsonl").write_bytes('{"text": "ok"}\n{"text": "şeker"}\n'.encode("iso-8859-9"))
    cases["utf8"] = (tmp_path / "latin.jsonl", ("latin.jsonl, line 2", "not valid UTF-8", "byte 0xfe"))
    (tmp_path / "latin.txt").write_bytes("ilk satır\n".encode() + "çay\n".encode("iso-8859-9"))
    cases["utf8-text"] = (tmp_path / "latin.txt", ("latin.txt, line 2", "not valid UTF-8"))
    (tmp_path / "broken.jsonl").write_text('{"text": "x"}\n{"text": \n')
    cases["json"] = (tmp_path / "broken.jsonl", ("broken.jsonl, line 2", "not valid JSON"))
    pq.write_table(pa.table({"body": ["x"]}), tmp_path / "p.parquet")
    cases["parquet-field"] = (tmp_path / "p.parquet", ("p.parquet", "no field 'text'", "body"))
    pq.write_table(pa.table({"text": [1]}), tmp_path / "n.parquet")
    cases["parquet-type"] = (tmp_path / "n.parquet", ("n.parquet", "field 'text' is int64"))
    (tmp_path / "fake.parquet").write_text("not parquet")
    cases["parquet-bytes"] = (tmp_path / "fake.parquet", ("fake.parquet", "not a readable parquet file"))
    (tmp_path / "empty").mkdir()
    cases["folder"] = (tmp_path / "empty", ("empty", "no .jsonl"))
    (tmp_path / "x.csv").write_text("text\nx\n")
    cases["kind"] = (tmp_path / "x.csv", ("x.csv", "unknown kind of file"))
    (tmp_path / "bad.jsonl.gz").write_text("not gzip")
    cases["gzip"] = (tmp_path / "bad.jsonl.gz", ("bad.jsonl.gz", "not a gzip file"))
    for path, parts in cases.values():
        with pytest.raises(DatasetError) as exc:
            check([bench], [TrainSource(path=str(path))])
        one_line(exc, *parts)


def test_an_unreachable_hub_dataset_is_one_line(bench, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(DatasetError) as exc:
        check([bench], [TrainSource(path="hf:nobody-here/no-such-dataset")])
    one_line(exc, "hf:nobody-here/no-such-dataset", "cannot load it")
    with pytest.raises(DatasetError) as exc:
        check([bench], [TrainSource(path="hf:no-slash")])
    one_line(exc, "expected hf:ORG/NAME")


def test_inputs_are_validated(tmp_path, bench):
    with pytest.raises(ValidationError):
        LeakageOptions(ngram=1)
    with pytest.raises(ValidationError):
        LeakageOptions(near_threshold=20)
    with pytest.raises(ConfigError) as exc:
        TrainSource.of({"path": "x.jsonl", "feilds": ["text"]})
    one_line(exc, "x.jsonl", "feilds")
    assert TrainSource.of("x.jsonl", fields=("text", "query"), queries=None).query_fields == ("query",)
    with pytest.raises(ConfigError, match="share a name"):
        check([bench, bench], [TrainSource(path=str(jsonl(tmp_path / "t.jsonl", [{"text": "x"}])))])
    with pytest.raises(ConfigError, match="no training source"):
        check([bench], [])


# --- output folder ------------------------------------------------------------------------------------------------

def test_the_output_folder(tmp_path, bench):
    src = jsonl(tmp_path / "t.jsonl", [{"text": "yok", "query": "ELMA NEREDE"}, {"text": f"— {window(8)} —", "query": None}])
    r = check([bench], [TrainSource(path=str(src), fields=("text", "query"))])
    out = write(r, tmp_path / "out")
    assert (out / "bench" / "queries.txt").read_text() == "q2\n"
    assert (out / "bench" / "passages.txt").read_text() == "d1\n"
    assert (out / "bench" / "relevant_hit.txt").read_text() == "q1\n"
    assert (out / "bench" / "train_hits.txt").read_text() == (out / "train_hits.txt").read_text() == f"{src}:2\n"
    assert (out / "bench" / "repeats.tsv").read_text().splitlines()[1].split("\t")[:3] == ["q2", "exact", "100.0"]
    s = json.loads((out / "summary.json").read_text())
    d = s["datasets"][0]
    assert (d["passage_hits"], d["query_hits"], d["exact_repeats"], d["contaminated_queries"], s["train_hits"]) == (1, 0, 1, 1, 1)
    assert d["shares"]["passages"] == 0.5 and d["shares"]["relevant_hit"] == 0.5
    assert d["examples"][0]["ngram"] == " ".join(reference_tokens(window(8), False))
    page = (out / "report.html").read_text()
    assert f"<mark>{d['examples'][0]['ngram']}</mark>" in page and "<script" not in page and "http" not in page
    assert "| bench | 2 |" in (out / "report.md").read_text()


def test_held_membership_matches_numpy_isin():
    from terazi.leakage.match import HeldIndex

    rng = np.random.default_rng(5)
    held_hashes = rng.integers(0, 2**64, 200_000, dtype=np.uint64)
    index = HeldIndex()
    index.add(held_hashes[:150_000], np.arange(150_000, dtype=np.int64))
    index.add(held_hashes[100_000:], np.arange(100_000, 200_000, dtype=np.int64))  # repeats across batches
    index.freeze(np.array([0], np.int64))
    probe = np.concatenate([rng.integers(0, 2**64, 300_000, dtype=np.uint64), held_hashes[::7],
                            held_hashes[::11] ^ np.uint64(1)])  # near misses: one bit off
    assert np.array_equal(index.contains(probe), np.isin(probe, held_hashes))
    empty = HeldIndex()
    empty.freeze(np.array([0], np.int64))
    assert not empty.contains(probe).any()


@pytest.mark.xquad
def test_planted_copies_of_xquad_passages_and_queries_are_all_found(tmp_path):
    """Real Turkish text (XQuAD tr): 12-word windows of every 4th passage, typed four ways, and every 10th query
    upper-cased and re-punctuated, planted among the English XQuAD contexts. All are found, and the hits equal what
    Python sets say (the English contexts do share some: Latin titles such as "dux et magister italiae …")."""
    from terazi.squad import squad_to_beir

    if not XQUAD_TR.is_file():
        pytest.skip("../shared/data/xquad not present")
    squad_to_beir(XQUAD_TR, tmp_path / "xq")
    ds = load_beir(tmp_path / "xq")
    english = json.loads((XQUAD_TR.parent / "xquad.en.json").read_text(encoding="utf-8"))
    rows = [{"text": p["context"], "query": None} for a in english["data"] for p in a["paragraphs"]]
    planted_docs, planted_queries = [], []
    typings = [tr_upper, lambda s: unicodedata.normalize("NFD", s), to_ascii, lambda s: s.replace("'", "’")]
    for k, (doc_id, doc) in enumerate(ds.docs.items()):
        if k % 4 == 0:
            words = doc.text.split()
            at = len(words) // 3
            rows.append({"text": "Kaynak metin: " + typings[k // 4 % 4](" ".join(words[at:at + 12])), "query": None})
            planted_docs.append(doc_id)
    for k, (qid, q) in enumerate(ds.queries.items()):
        if k % 10 == 0:
            rows.append({"text": "", "query": tr_upper(q.text).replace("?", " ? ")})
            planted_queries.append(qid)
    src = jsonl(tmp_path / "train.jsonl", rows)
    r = check([ds], [TrainSource(path=str(src), fields=("text", "query"))], LeakageOptions(fold_ascii=True))
    d = r.datasets[0]
    assert set(planted_docs) <= set(d.passage_hits)
    # exact repeats: the planted ones, and the benchmark queries that read the same as one of them (XQuAD asks some
    # questions twice)
    said = {" ".join(reference_tokens(r["query"], True)) for r in rows if r["query"]}
    assert set(planted_queries) <= {x.query_id for x in d.repeats if x.kind == "exact"}
    assert [x.query_id for x in d.repeats if x.kind == "exact"] == \
        [q for q, x in ds.queries.items() if " ".join(reference_tokens(x.text, True)) in said]
    train_grams = set().union(*(python_ngrams(row[f] or "", 8, fold=True) for row in rows for f in ("text", "query")))
    assert d.passage_hits == [i for i, doc in ds.docs.items() if python_ngrams(doc.full_text, 8, True) & train_grams]
    assert d.query_hits == [q for q, x in ds.queries.items() if python_ngrams(x.text, 8, True) & train_grams]
    bench_grams = set().union(*(python_ngrams(t, 8, True) for t in
                                [doc.full_text for doc in ds.docs.values()] + [x.text for x in ds.queries.values()]))
    assert r.train_hits == [f"{src}:{k + 1}" for k, row in enumerate(rows)
                            if (python_ngrams(row["text"], 8, True) | python_ngrams(row["query"] or "", 8, True)) & bench_grams]
    assert d.examples and all(e.ngram in e.text and e.ngram in e.train_text for e in d.examples)
