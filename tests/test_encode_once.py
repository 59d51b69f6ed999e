"""A bi-encoder reranker encodes each distinct text once per run, and nothing at all when it is the first stage's
model: its vectors are the first stage's, kept in the cache folder; the model is loaded once for both roles.
Scores are checked against sentence-transformers called directly (to the model's float tolerance)."""

from __future__ import annotations

from collections import Counter, OrderedDict

import numpy as np
import polars as pl
import pytest

from terazi.corrupt.variants import corrupt_queries
from terazi.data.beir import load_beir
from terazi.data.loading import load_dataset, read_variants
from terazi.models import encoders
from terazi.models.vectors import VectorStore
from terazi.rerank import backends, metering
from terazi.rerank.backends.bi import BiEncoder
from terazi.schemas import BiEncoderSpec, CorruptionSpec, DatasetSpec, EncoderSpec, ScaleSpec
from tests.stages import first_stage, rank_row


@pytest.fixture
def run(tmp_path, tiny_dataset, monkeypatch):
    """The tiny dataset's clean and upper-cased queries, the bundled MiniLM's frozen candidates (depth 12), and a
    record of every model load and of the texts each bi-encoder call encodes."""
    monkeypatch.setattr(metering, "LATENCY_QUERIES", 0)  # the latency probe encodes on purpose: not this test's subject
    monkeypatch.setattr(encoders, "_encoders", {})  # a fresh process: no model loaded yet
    monkeypatch.setattr(backends, "_scorers", OrderedDict())
    loads, encoded = [], []
    load = encoders.load_bi_encoder
    monkeypatch.setattr(encoders, "load_bi_encoder", lambda *a, **k: loads.append(a[0].location) or load(*a, **k))
    encode = BiEncoder.encode
    monkeypatch.setattr(BiEncoder, "encode", lambda self, texts: encoded.append(list(texts)) or encode(self, texts))
    ds = load_dataset(DatasetSpec(path=str(tiny_dataset), name="tiny"), announce=False)
    vs = [corrupt_queries(ds, c, CorruptionSpec(), 7, str(tmp_path / "run")) for c in ("clean", "upper")]
    cs = first_stage(ds, vs, EncoderSpec(), 12, str(tmp_path / "cache"))
    return ds, vs, cs, loads, encoded


def texts_of(cs, vs, root, depth: int) -> set[str]:
    """The distinct query and document texts of the candidates down to `depth`."""
    top = (
        pl.read_parquet(cs.path)
        .filter(pl.col("rank") <= depth)
        .join(read_variants(vs), on=["condition", "sample", "query_id"])
    )
    docs = {d: doc.full_text for d, doc in load_beir(root).docs.items()}
    return set(top["text"]) | {docs[d] for d in top["doc_id"]}


def reference(result, vs, root, model: str, max_length: int) -> tuple[np.ndarray, np.ndarray]:
    """(the row's scores, cosines of sentence-transformers' own embeddings of each pair's two texts)."""
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(model, device="cpu")
    st.max_seq_length = max_length
    ranked = pl.read_parquet(result.path).join(
        read_variants(vs).select("condition", "sample", "query_id", "text"), on=["condition", "sample", "query_id"]
    )
    docs = {d: doc.full_text for d, doc in load_beir(root).docs.items()}
    q = st.encode(ranked["text"].to_list(), normalize_embeddings=True)
    d = st.encode([docs[i] for i in ranked["doc_id"]], normalize_embeddings=True)
    return ranked["score"].to_numpy(), (q.astype(np.float64) * d).sum(axis=1)


def test_the_first_stage_model_as_reranker_encodes_nothing(run, tmp_path, tiny_dataset, minilm_path):
    ds, vs, cs, loads, encoded = run
    assert len(loads) == 1 and encoded == []  # the first stage: its own encoder, not a reranker's calls
    spec = BiEncoderSpec(name="minilm", kind="bi-encoder", model=minilm_path)  # 256 tokens: the model's own
    result = rank_row(ds, cs, vs, spec, 8, str(tmp_path / "cache"), str(tmp_path / "out"))
    assert result.pairs_scored == result.pairs_unique > 0
    assert encoded == [] and len(loads) == 1  # every vector was the first stage's; its model was not even loaded
    got, want = reference(result, vs, tiny_dataset, minilm_path, 256)
    assert np.abs(got - want).max() < 1e-5


def test_each_distinct_text_is_encoded_once_across_chunks_and_blocks(run, tmp_path, tiny_dataset, minilm_path):
    ds, vs, cs, loads, encoded = run
    spec = BiEncoderSpec(name="minilm-64", kind="bi-encoder", model=minilm_path, max_length=64, batch_size=2)
    result = rank_row(
        ds, cs, vs, spec, 8, str(tmp_path / "cache"), str(tmp_path / "out"), ScaleSpec(chunk_pairs=40)
    )  # blocks of 16 pairs, 3 per chunk: several chunks
    distinct = texts_of(cs, vs, tiny_dataset, 8)
    assert result.pairs_unique > 3 * 16 and len(loads) == 2  # a model of another length: loaded once more
    warm, *calls = encoded
    assert len(warm) == 1 and len(calls) >= 3  # one text untimed (the meter's warm-up), then the chunks' calls
    assert Counter(t for c in calls for t in c) == Counter(distinct)  # each distinct text once, none twice
    got, want = reference(result, vs, tiny_dataset, minilm_path, 64)
    assert np.abs(got - want).max() < 1e-5

    encoded.clear()  # a later run, deeper: only the texts of its new pairs that no pair had before are encoded
    deeper = rank_row(ds, cs, vs, spec, 12, str(tmp_path / "cache"), str(tmp_path / "out"))
    assert deeper.pairs_scored == deeper.pairs_unique - result.pairs_unique > 0
    assert Counter(t for c in encoded for t in c) == Counter(texts_of(cs, vs, tiny_dataset, 12) - distinct)


def test_vector_store_finds_what_was_put_and_skips_a_damaged_part(tmp_path):
    store = VectorStore(tmp_path / "v")
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(4, 3)).astype(np.float32)
    store.put(np.array([10, 11, 12, 13, 14]), a)
    store.put(np.array([20, 21, 22, 23]), b)
    found, vectors = store.get(np.array([22, 99, 10, 14]))
    assert found.tolist() == [True, False, True, True]
    assert np.array_equal(vectors, np.stack([b[2], a[0], a[4]]))
    next(p for p in (tmp_path / "v").glob("part-*.npy") if np.load(p).shape[0] == 4).write_bytes(b"torn")
    found, vectors = store.get(np.array([22, 10]))
    assert found.tolist() == [False, True] and np.array_equal(vectors, a[:1])
