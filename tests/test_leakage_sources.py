"""terazi.leakage's inputs and outputs: every kind of training source with its record names, bad sources one line
each, validated options, the output folder, and planted copies of XQuAD passages all found."""

from __future__ import annotations

import gzip
import json
import unicodedata

import numpy as np
import pytest
from pydantic import ValidationError

from terazi.base.errors import ConfigError, DatasetError
from terazi.base.turkish import to_ascii, tr_upper
from terazi.data.beir import load_beir, write_beir
from terazi.leakage import LeakageOptions, TrainSource, check, write
from tests.conftest import XQUAD_TR
from tests.leakage_inputs import PLANTED, bench_dataset, jsonl, python_ngrams, reference_tokens, window


@pytest.fixture
def bench(tmp_path):
    return bench_dataset(tmp_path)


# --- sources ------------------------------------------------------------------------------------------------------


def test_every_kind_of_source_is_read_with_its_record_names(tmp_path, bench):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "mixed"
    (folder / "sub").mkdir(parents=True)
    jsonl(folder / "a.jsonl", [{"text": "yok"}])
    (folder / "a.jsonl").write_text(
        "\n" + (folder / "a.jsonl").read_text() + "\n" + json.dumps({"text": PLANTED}) + "\n"
    )
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

    beir = write_beir(
        tmp_path / "beir-train",
        [{"_id": "t1", "title": "Başlık", "text": window(8)}],
        [{"_id": "tq", "text": "Rüzgâr neden ıslık çalar?"}],
        [("tq", "t1", 1)],
    )
    saved = tmp_path / "saved"
    datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict({"text": ["yok", PLANTED]}),
            "test": datasets.Dataset.from_dict({"text": ["yok"]}),
        }
    ).save_to_disk(str(saved))
    r = check([bench], [TrainSource(path=str(beir)), TrainSource(path=f"hf:{saved}")])
    assert r.train_hits == [f"{beir}/corpus.jsonl:1 (id t1)", f"{saved}/train:2"]  # named by an id where there is one
    assert [(x.query_id, x.kind, x.train) for x in r.datasets[0].repeats] == [
        ("q1", "exact", f"{beir}/queries.jsonl:1 (id tq)")
    ]
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
    src = jsonl(
        tmp_path / "t.jsonl", [{"text": "yok", "query": "ELMA NEREDE"}, {"text": f"— {window(8)} —", "query": None}]
    )
    r = check([bench], [TrainSource(path=str(src), fields=("text", "query"))])
    out = write(r, tmp_path / "out")
    assert (out / "bench" / "queries.txt").read_text() == "q2\n"
    assert (out / "bench" / "passages.txt").read_text() == "d1\n"
    assert (out / "bench" / "relevant_hit.txt").read_text() == "q1\n"
    assert (out / "bench" / "train_hits.txt").read_text() == (out / "train_hits.txt").read_text() == f"{src}:2\n"
    assert (out / "bench" / "repeats.tsv").read_text().splitlines()[1].split("\t")[:3] == ["q2", "exact", "100.0"]
    s = json.loads((out / "summary.json").read_text())
    d = s["datasets"][0]
    assert (d["passage_hits"], d["query_hits"], d["exact_repeats"], d["contaminated_queries"], s["train_hits"]) == (
        1,
        0,
        1,
        1,
        1,
    )
    assert d["shares"]["passages"] == 0.5 and d["shares"]["relevant_hit"] == 0.5
    assert d["examples"][0]["ngram"] == " ".join(reference_tokens(window(8), True))
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
    probe = np.concatenate(
        [rng.integers(0, 2**64, 300_000, dtype=np.uint64), held_hashes[::7], held_hashes[::11] ^ np.uint64(1)]
    )  # near misses: one bit off
    assert np.array_equal(index.contains(probe), np.isin(probe, held_hashes))
    empty = HeldIndex()
    empty.freeze(np.array([0], np.int64))
    assert not empty.contains(probe).any()


@pytest.mark.xquad
def test_planted_copies_of_xquad_passages_and_queries_are_all_found(tmp_path):
    """Real Turkish text (XQuAD tr): 12-word windows of every 4th passage, typed four ways, and every 10th query
    upper-cased and re-punctuated, planted among the English XQuAD contexts. All are found, and the hits equal what
    Python sets say (the English contexts do share some: Latin titles such as "dux et magister italiae …")."""
    from terazi.data.squad import squad_to_beir

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
            rows.append({"text": "Kaynak metin: " + typings[k // 4 % 4](" ".join(words[at : at + 12])), "query": None})
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
    assert [x.query_id for x in d.repeats if x.kind == "exact"] == [
        q for q, x in ds.queries.items() if " ".join(reference_tokens(x.text, True)) in said
    ]
    train_grams = set().union(*(python_ngrams(row[f] or "", 8, fold=True) for row in rows for f in ("text", "query")))
    assert d.passage_hits == [i for i, doc in ds.docs.items() if python_ngrams(doc.full_text, 8, True) & train_grams]
    assert d.query_hits == [q for q, x in ds.queries.items() if python_ngrams(x.text, 8, True) & train_grams]
    bench_grams = set().union(
        *(
            python_ngrams(t, 8, True)
            for t in [doc.full_text for doc in ds.docs.values()] + [x.text for x in ds.queries.values()]
        )
    )
    assert r.train_hits == [
        f"{src}:{k + 1}"
        for k, row in enumerate(rows)
        if (python_ngrams(row["text"], 8, True) | python_ngrams(row["query"] or "", 8, True)) & bench_grams
    ]
    assert d.examples and all(e.ngram in e.text and e.ngram in e.train_text for e in d.examples)


def test_9_training_records_named_by_id_mixed_fields_read_a_record_with_none_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    bench = bench_dataset(tmp_path)
    copy = window(8).upper()  # as a non-Turkish tool upper-cases it: i → I, read ı by Turkish rules
    mixed = jsonl(
        tmp_path / "mixed.jsonl",
        [
            {"id": "r1", "query": "elma nerede"},  # a query record
            {"_id": 7, "text": f"x {copy} y"},  # a passage record, numeric id
            {"text": PLANTED},
        ],
    )  # no id: named by its line
    r = check([bench], [TrainSource(path=str(mixed), fields=("text", "query"))])
    assert r.train_hits == [f"{mixed}:2 (id 7)", f"{mixed}:3"] and r.datasets[0].passage_hits == ["d1"]
    table = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "text": ["yok", copy]}), table)  # no `query` column: skipped
    assert check([bench], [TrainSource(path=str(table), fields=("text", "query"))]).train_hits == [f"{table}:2 (id b)"]
    bad = jsonl(tmp_path / "bad.jsonl", [{"text": "yok"}, {"body": copy, "id": "r9"}])
    with pytest.raises(DatasetError, match=r"bad.jsonl, line 2: no field 'text' or 'query' \(fields: body, id\)"):
        check([bench], [TrainSource(path=str(bad), fields=("text", "query"))])
