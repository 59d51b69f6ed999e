"""Backends: torch and ONNX (fp32, int8) score alike, each with its own identity; a model's own ONNX file is used;
the export is made once; the registry picks by kind and backend."""

from __future__ import annotations

import shutil

import numpy as np
import polars as pl
import pytest

from terazi.data.beir import load_beir
from terazi.rerank.backends import make_scorer
from terazi.rerank.pairs import Pair
from terazi.rerank.store import ModelKey, Scores
from terazi.schemas import BiEncoderSpec, CrossEncoderSpec
from tests.conftest import needs_onnx
from tests.stages import corpus_of


def tiny_pairs(tiny_dataset) -> list[Pair]:
    """Every judged query against every document: 48 pairs of very different lengths."""
    ds = load_beir(tiny_dataset)
    return [Pair(ds.queries[q].text, d, doc.full_text) for q in ds.judged_query_ids for d, doc in ds.docs.items()]


def ce(model: str, **kw) -> CrossEncoderSpec:
    return CrossEncoderSpec(name="ce", kind="cross-encoder", model=model, max_length=64, **kw)


@pytest.fixture
def corpus(tmp_path, tiny_dataset):
    """The corpus table the reranking stage gives every scorer (a model backend does not read it)."""
    return corpus_of(tiny_dataset, tmp_path)


@pytest.fixture(scope="module")
def tiny_bi_encoder(tmp_path_factory, minilm_path) -> str:
    """A 2-layer random BERT inside sentence-transformers modules (Transformer, mean Pooling, Normalize)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import (
        Normalize,
        Pooling,
        Transformer,
    )
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(1)
    raw = tmp_path_factory.mktemp("tiny-bert")
    tok = AutoTokenizer.from_pretrained(minilm_path)
    BertModel(
        BertConfig(
            vocab_size=tok.vocab_size, hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128
        )
    ).save_pretrained(raw)
    tok.save_pretrained(raw)
    folder = tmp_path_factory.mktemp("tiny-bi")
    st = SentenceTransformer(modules=[Transformer(str(raw), max_seq_length=64), Pooling(64, "mean"), Normalize()])
    st.save(str(folder))
    return str(folder)


@needs_onnx
def test_torch_onnx_and_int8_cross_encoders(tmp_path, tiny_dataset, tiny_cross_encoder, corpus):
    pairs = tiny_pairs(tiny_dataset)
    rows = {
        name: make_scorer(ce(tiny_cross_encoder, **kw), corpus, "", True, str(tmp_path))
        for name, kw in (
            ("torch", {}),
            ("onnx", {"backend": "onnx"}),
            ("int8", {"backend": "onnx", "quantization": "int8"}),
        )
    }
    scores = {name: s.score(pairs) for name, s in rows.items()}
    assert np.abs(scores["onnx"] - scores["torch"]).max() < 1e-4
    assert 0 < np.abs(scores["int8"] - scores["torch"]).max() < 0.05  # quantised: close, not equal
    assert len({s.identity for s in rows.values()}) == 3
    assert "torch:fp32@cpu:len=64:act=Sigmoid" in rows["torch"].identity
    assert "onnx(export torch-" in rows["onnx"].identity and ":fp32@cpu:" in rows["onnx"].identity
    import onnxruntime

    assert f"+int8 ort-{onnxruntime.__version__})" in rows["int8"].identity and ":int8@cpu:" in rows["int8"].identity
    store = Scores(tmp_path / "store")  # three rows, three sets of cache entries
    key = pl.DataFrame({"q": [1], "d": [2]}, schema={"q": pl.Int64, "d": pl.Int64})
    for name, s in rows.items():
        store.put_many(
            ModelKey(s.identity, s.max_length), key.with_columns(pl.lit(float(scores[name][0])).alias("score"))
        )
    assert sorted(store.get_many(ModelKey(s.identity, s.max_length), key)["score"][0] for s in rows.values()) == sorted(
        float(v[0]) for v in scores.values()
    )
    costs = {name: s.cost() for name, s in rows.items()}
    assert costs["int8"].precision == "int8" and costs["onnx"].precision == "fp32"
    assert costs["int8"].size_bytes < 0.5 * costs["onnx"].size_bytes  # int8 weights: about a quarter
    assert costs["torch"].params == costs["onnx"].params == costs["int8"].params > 1_000_000


@needs_onnx
def test_export_is_made_once_into_the_cache(tmp_path, tiny_dataset, tiny_cross_encoder, monkeypatch, corpus):
    pairs = tiny_pairs(tiny_dataset)[:5]
    first = make_scorer(ce(tiny_cross_encoder, backend="onnx"), corpus, "", True, str(tmp_path)).score(pairs)
    exported = list((tmp_path / "onnx").glob("*/model.onnx"))
    assert len(exported) == 1

    import torch

    def refuse(*a, **k):
        raise AssertionError("exported twice")

    monkeypatch.setattr(torch.onnx, "export", refuse)
    again = make_scorer(ce(tiny_cross_encoder, backend="onnx"), corpus, "", True, str(tmp_path)).score(pairs)
    assert np.array_equal(first, again)


@needs_onnx
def test_a_models_own_onnx_file_is_used(tmp_path, tiny_dataset, tiny_cross_encoder, corpus):
    pairs = tiny_pairs(tiny_dataset)[:8]
    exported = make_scorer(ce(tiny_cross_encoder, backend="onnx"), corpus, "", True, str(tmp_path / "c1"))
    reference = exported.score(pairs)
    model = tmp_path / "with-onnx"
    shutil.copytree(tiny_cross_encoder, model)
    (model / "onnx").mkdir()
    shutil.copyfile(exported.inner.onnx_file(), model / "onnx" / "model.onnx")
    shutil.copyfile(exported.inner.onnx_file(), model / "onnx" / "model_custom.onnx")
    own = make_scorer(ce(str(model), backend="onnx"), corpus, "", True, str(tmp_path / "c2"))
    assert "onnx(onnx/model.onnx)" in own.identity
    assert np.allclose(own.score(pairs), reference, atol=1e-6)
    assert not (tmp_path / "c2" / "onnx").exists()  # nothing exported
    named = make_scorer(
        ce(str(model), backend="onnx", file_name="onnx/model_custom.onnx"), corpus, "", True, str(tmp_path)
    )
    assert "onnx(onnx/model_custom.onnx)" in named.identity and named.identity != own.identity
    from terazi.models.refs import ModelError

    with pytest.raises(ModelError, match="has no file 'onnx/missing.onnx'"):
        make_scorer(
            ce(str(model), backend="onnx", file_name="onnx/missing.onnx"), corpus, "", True, str(tmp_path)
        ).score(pairs)


@needs_onnx
def test_onnx_bi_encoder_matches_torch(tmp_path, tiny_dataset, tiny_bi_encoder, corpus):
    pairs = tiny_pairs(tiny_dataset)
    spec = dict(name="bi", kind="bi-encoder", model=tiny_bi_encoder, max_length=64)
    torch_scores = make_scorer(BiEncoderSpec(**spec), corpus, "", True, str(tmp_path)).score(pairs)
    onnx_row = make_scorer(BiEncoderSpec(**spec, backend="onnx"), corpus, "", True, str(tmp_path))
    assert np.abs(onnx_row.score(pairs) - torch_scores).max() < 1e-4
    assert "cosine(mean_tokens)" in onnx_row.identity


def test_backend_options_are_checked():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="quantization only apply with backend: onnx"):
        CrossEncoderSpec(name="x", kind="cross-encoder", model="m", quantization="int8")
    with pytest.raises(ValidationError, match="backend onnx runs fp32"):
        CrossEncoderSpec(name="x", kind="cross-encoder", model="m", backend="onnx", precision="fp16")
    with pytest.raises(ValidationError, match="inside the model folder"):
        CrossEncoderSpec(name="x", kind="cross-encoder", model="m", backend="onnx", file_name="../x.onnx")


def test_registry_names_every_model_kind():
    """Every kind of row that scores pairs has a backend: the model kinds and BM25 (a fusion only fuses rows)."""
    from typing import get_args

    from terazi.rerank.backends import REGISTRY, backend_class
    from terazi.schemas import MODEL_KINDS, RerankerSpec

    kinds = {get_args(spec.model_fields["kind"].annotation)[0] for spec in get_args(get_args(RerankerSpec)[0])}
    assert {k for k, _ in REGISTRY} == kinds - {"rrf"} == set(MODEL_KINDS) | {"bm25", "http", "listwise"}
    assert backend_class("listwise", "served").__name__ == "ServedAnswerer"
    assert backend_class("http", "tei") is backend_class("http", "cohere")  # one backend, two dialects
    assert backend_class("cross-encoder", "onnx").__name__ == "OnnxCrossEncoder"
    with pytest.raises(ValueError, match="no backend 'onnx' for kind 'llm-reranker'"):
        backend_class("llm-reranker", "onnx")


def test_without_onnxruntime_the_error_says_what_to_install(monkeypatch, tmp_path, corpus, tiny_cross_encoder):
    import sys

    from terazi.models.refs import ModelError

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if it were not installed
    with pytest.raises(ModelError, match=r"backend: onnx needs onnxruntime: pip install 'terazi\[onnx\]'"):
        make_scorer(ce(tiny_cross_encoder, backend="onnx"), corpus, "", True, str(tmp_path))
