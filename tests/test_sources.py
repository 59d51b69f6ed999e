"""Datasets by name: a dataset saved with `datasets` (hub layout), an MTEB task and an ir_datasets id load with the
fingerprint of their BEIR export; offline, a dataset the cache lacks is a one-line error."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from terazi.base.errors import DatasetError
from terazi.data.beir import load_beir, write_beir
from terazi.data.loading import load_dataset
from terazi.schemas import DatasetSpec, EvalConfig
from terazi.schemas.sources import parse
from tests.conftest import TINY_DOCS, TINY_QRELS, TINY_QUERIES

CONFIGS = """---
configs:
- config_name: {p}corpus
  data_files:
  - split: corpus
    path: {p}corpus/corpus.parquet
- config_name: {p}queries
  data_files:
  - split: queries
    path: {p}queries/queries.parquet
- config_name: {q}
  data_files:
  - split: {split}
    path: {p}qrels/{split}.parquet
---
"""


def hub_layout(target, subset=None, split="test", titles=True):
    """The tiny dataset as MTEB publishes retrieval data on the hub: parquet files per config, written with
    `datasets`, with the README's `configs:` that `load_dataset` reads (an extra unjudged query, as on the hub)."""
    import datasets

    datasets.disable_progress_bars()
    p = f"{subset}-" if subset else ""
    docs = [{"_id": i, "title": t if titles else "", "text": x} for i, t, x in TINY_DOCS]
    queries = [{"_id": i, "text": x} for i, x in TINY_QUERIES] + [{"_id": "q-unjudged", "text": "yargısız soru"}]
    qrels = [{"query-id": q, "corpus-id": d, "score": g} for q, d, g in TINY_QRELS]
    for part, rows in (("corpus/corpus", docs), ("queries/queries", queries), (f"qrels/{split}", qrels)):
        path = target / f"{p}{part}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        datasets.Dataset.from_list(rows).to_parquet(str(path))
    (target / "README.md").write_text(CONFIGS.format(p=p, q=f"{p}qrels" if subset else "default", split=split))
    return target


def beir_export(root, titles=True):
    return write_beir(
        root,
        [{"_id": i, "title": t if titles else "", "text": x} for i, t, x in TINY_DOCS],
        [{"_id": i, "text": x} for i, x in TINY_QUERIES],
        TINY_QRELS,
    )


@pytest.fixture(autouse=True)
def datasets_cache(tmp_path, monkeypatch):
    """Whatever `datasets` caches goes to the test's folder, not the user's."""
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-datasets")


def test_parse_names():
    assert parse("data/beir") is None and parse("/abs/x") is None
    s = parse("hf:mteb/scifact-tr@0123#tr")
    assert (s.scheme, s.name, s.revision, s.subset, s.label) == ("hf", "mteb/scifact-tr", "0123", "tr", "scifact-tr-tr")
    assert parse("mteb:TurHistQuadRetrieval").label == "TurHistQuadRetrieval"
    assert parse("ir_datasets:beir/scifact/test").label == "beir-scifact-test"
    for bad in ("hf:justname", "hf:a/b/c", "mteb:Task@abc", "ir_datasets:"):
        with pytest.raises(DatasetError):
            parse(bad)
    assert (
        EvalConfig.model_validate({"datasets": [{"path": "hf:org/turkish-set@v1"}]}).datasets[0].name == "turkish-set"
    )
    # what parse lets through as a folder (no ORG/NAME shape required) is a folder, not a hub name
    assert all(parse(p).local for p in ("hf:/abs/x", "hf:./x", "hf:../x", "hf:~/x", "hf:.x/y/z", "hf:.."))


def test_hf_dataset_saved_locally_has_the_fingerprint_of_its_beir_export(tmp_path):
    beir = load_beir(beir_export(tmp_path / "beir"))
    hub = hub_layout(tmp_path / "hub")
    m = load_dataset(DatasetSpec(path=f"hf:{hub}", name="tiny"), str(tmp_path / "cache"))
    assert m.fingerprint == beir.fingerprint and m.corpus_fingerprint == beir.corpus_fingerprint
    assert (m.n_docs, m.n_queries, m.n_judgments) == (12, 4, 11)
    assert m.source.startswith(f"hf:{hub}") and m.path.startswith(str(tmp_path / "cache" / "datasets"))
    # a multilingual repository's subset, and a split other than test
    sub = hub_layout(tmp_path / "multi", subset="tr", split="validation")
    m2 = load_dataset(DatasetSpec(path=f"hf:{sub}#tr", split="validation"), str(tmp_path / "cache"))
    assert m2.fingerprint == beir.fingerprint and m2.name == "multi-tr"
    # a changed document changes the fingerprint (a local folder is read again every time)
    import datasets

    rows = [{"_id": i, "title": t, "text": x + ("!" if i == "d1" else "")} for i, t, x in TINY_DOCS]
    datasets.Dataset.from_list(rows).to_parquet(str(hub / "corpus" / "corpus.parquet"))
    assert (
        load_dataset(DatasetSpec(path=f"hf:{hub}", name="tiny"), str(tmp_path / "cache")).fingerprint != m.fingerprint
    )


def test_hf_errors_are_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DatasetError, match="offline .*HF_HUB_OFFLINE=1.*load it once with network access"):
        load_dataset(DatasetSpec(path="hf:terazi-nobody/not-cached@" + "0" * 40), str(tmp_path / "cache"))
    hub = hub_layout(tmp_path / "hub")
    (hub / "README.md").write_text(CONFIGS.format(p="", q="default", split="test").replace("queries", "questions"))
    with pytest.raises(DatasetError, match=r"not a BEIR-style dataset: no config\(s\) \['queries'\]"):
        load_dataset(DatasetSpec(path=f"hf:{hub}"), str(tmp_path / "cache"))
    res = CliRunner().invoke(
        __import__("terazi.cli", fromlist=["app"]).app,
        [
            "run",
            "--dataset",
            "hf:terazi-nobody/not-cached",
            "--out",
            str(tmp_path / "o"),
            "--cache",
            str(tmp_path / "cache"),
            "--offline",
        ],
    )
    assert res.exit_code == 2 and res.output.count("error:") == 1 and "hf:terazi-nobody/not-cached" in res.output


def test_mteb_task_through_its_own_loader(tmp_path, monkeypatch):
    """MTEB's own loading code (mteb.get_task(...).load_data()) on the hub layout in a local folder: the task's
    metadata points at it instead of the hub."""
    mteb = pytest.importorskip("mteb")
    beir = load_beir(beir_export(tmp_path / "beir"))
    hub = hub_layout(tmp_path / "hub", subset="tr", split="validation")
    cls = type(mteb.get_task("XQuADRetrieval"))
    monkeypatch.setattr(
        cls, "metadata", cls.metadata.model_copy(update={"dataset": {"path": str(hub), "revision": "r1"}})
    )
    m = load_dataset(DatasetSpec(path="mteb:XQuADRetrieval#tr", split="validation"), str(tmp_path / "cache"))
    assert m.fingerprint == beir.fingerprint and m.name == "XQuADRetrieval-tr"
    assert m.source == "mteb:XQuADRetrieval#tr (revision r1)"
    # without a subset, the task's one Turkish subset is taken; with several, the user must choose
    assert (
        load_dataset(DatasetSpec(path="mteb:XQuADRetrieval", split="validation"), str(tmp_path / "cache")).name
        == "XQuADRetrieval"
    )
    with pytest.raises(DatasetError, match="choose a subset: mteb:BelebeleRetrieval#SUBSET, e.g. .*tur_Latn"):
        load_dataset(DatasetSpec(path="mteb:BelebeleRetrieval"), str(tmp_path / "cache"))
    with pytest.raises(DatasetError, match="NoSuchTask' not found"):
        load_dataset(DatasetSpec(path="mteb:NoSuchTask"), str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DatasetError, match="mteb:TurHistQuadRetrieval: not in the local Hugging Face cache"):
        load_dataset(DatasetSpec(path="mteb:TurHistQuadRetrieval"), str(tmp_path / "cache"))


def test_ir_datasets_id(tmp_path):
    ir_datasets = pytest.importorskip("ir_datasets")
    beir = load_beir(beir_export(tmp_path / "beir", titles=False))
    (tmp_path / "docs.tsv").write_text("".join(f"{i}\t{x}\n" for i, _, x in TINY_DOCS), encoding="utf-8")
    (tmp_path / "queries.tsv").write_text("".join(f"{i}\t{x}\n" for i, x in TINY_QUERIES), encoding="utf-8")
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in TINY_QRELS))
    name = f"terazi-test/{tmp_path.name}"
    ir_datasets.registry.register(
        name,
        ir_datasets.create_dataset(
            docs_tsv=str(tmp_path / "docs.tsv"),
            queries_tsv=str(tmp_path / "queries.tsv"),
            qrels_trec=str(tmp_path / "qrels.txt"),
        ),
    )
    cache = str(tmp_path / "cache")
    m = load_dataset(DatasetSpec(path=f"ir_datasets:{name}"), cache)
    assert m.fingerprint == beir.fingerprint
    copy = json.loads((tmp_path / "cache" / "datasets").glob("*/source.json").__next__().read_text())
    assert copy["documents"] == 12 and copy["revision"].startswith("ir_datasets ")
    (tmp_path / "docs.tsv").write_text("gone")  # an ir_datasets id cannot change: the copy is reused
    assert load_dataset(DatasetSpec(path=f"ir_datasets:{name}"), cache).fingerprint == beir.fingerprint
    with pytest.raises(DatasetError, match="no such ir_datasets id"):
        load_dataset(DatasetSpec(path="ir_datasets:terazi-test/none"), cache)


def test_served_policy_allows_only_the_named_datasets_it_serves(tmp_path):
    from terazi.base.errors import PolicyError
    from terazi.config.policy import ServicePolicy

    served = EvalConfig.model_validate(
        {"datasets": [{"path": "hf:org/served@v1"}], "out_dir": str(tmp_path), "cache_dir": str(tmp_path / "c")}
    )
    policy = ServicePolicy.for_service(served)
    assert policy.apply(served).datasets[0].path == "hf:org/served@v1"
    other = served.model_copy(update={"datasets": [DatasetSpec(path="hf:org/other")]})
    with pytest.raises(PolicyError, match="named dataset the served benchmark does not use"):
        policy.apply(other)
