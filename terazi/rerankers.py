"""Reranker backends behind one small interface: score a batch of (query, document) pairs.

Each backend has an `identity` that changes whenever its scores could (model files or revision,
parameters, the corpus statistics of BM25); the score cache is keyed on it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from schemas.config import RerankerSpec
from terazi import fingerprint
from terazi.models import ModelRef, load_bi_encoder, load_cross_encoder, resolve
from terazi.turkish import analyse


@dataclass(frozen=True)
class Pair:
    query: str
    doc_id: str
    doc: str


class PairScorer(Protocol):
    identity: str
    max_length: int
    batch_size: int

    def score(self, pairs: list[Pair]) -> np.ndarray: ...


class _ModelScorer:
    """A sentence-transformers model loaded on first use, so a fully cached run never loads it."""

    kind = ""

    def __init__(self, ref: ModelRef, max_length: int | None, batch_size: int, device: str, trust_remote_code: bool):
        self.ref, self.batch_size, self.device, self.trust = ref, batch_size, device, trust_remote_code
        self.max_length = max_length or 0
        self.identity = f"{self.kind}:{ref.identity}"
        self._model = None

    def _load(self):
        raise NotImplementedError

    @property
    def model(self):
        if self._model is None:
            self._model = self._load()
        return self._model


class CrossEncoderScorer(_ModelScorer):
    """sentence-transformers CrossEncoder (CUDA fp16 when present)."""

    kind = "cross-encoder"

    def _load(self):
        return load_cross_encoder(self.ref, self.device, self.max_length or None, self.trust)

    def score(self, pairs: list[Pair]) -> np.ndarray:
        out = self.model.predict([(p.query, p.doc) for p in pairs], batch_size=self.batch_size,
                                 show_progress_bar=False, convert_to_numpy=True)
        return np.asarray(out, dtype=np.float64).reshape(len(pairs), -1)[:, -1]


class BiEncoderScorer(_ModelScorer):
    """Cosine similarity of a sentence-transformers bi-encoder's embeddings."""

    kind = "bi-encoder"

    def _load(self):
        return load_bi_encoder(self.ref, self.device, self.max_length or None, self.trust)

    def score(self, pairs: list[Pair]) -> np.ndarray:
        queries = list(dict.fromkeys(p.query for p in pairs))
        docs = list(dict.fromkeys(p.doc for p in pairs))
        qe = self.model.encode(queries, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True)
        de = self.model.encode(docs, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True)
        qi = {t: i for i, t in enumerate(queries)}
        di = {t: i for i, t in enumerate(docs)}
        a = qe[[qi[p.query] for p in pairs]]
        b = de[[di[p.doc] for p in pairs]]
        return (a * b).sum(axis=1).astype(np.float64)


class BM25Scorer:
    """BM25 (bm25s) over Turkish-lowercased, Snowball-stemmed, ASCII-folded tokens of the whole corpus."""

    batch_size = 4096

    def __init__(self, docs: dict[str, str], corpus_fingerprint: str, language: str, k1: float, b: float):
        self.language, self.max_length, self.k1, self.b, self._docs = language, 0, k1, b, docs
        self.identity = f"bm25:{language}:k1={k1}:b={b}:corpus={corpus_fingerprint}"
        self._row = {d: i for i, d in enumerate(docs)}
        self._bm25 = None

    def _index(self):
        """Built on first use, so a fully cached run skips it."""
        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)
        bm25 = bm25s.BM25(k1=self.k1, b=self.b)
        bm25.index([analyse(t, self.language) or [""] for t in self._docs.values()], show_progress=False)
        return bm25

    def score(self, pairs: list[Pair]) -> np.ndarray:
        if self._bm25 is None:
            self._bm25 = self._index()
        out = np.zeros(len(pairs), dtype=np.float64)
        by_query: dict[str, list[int]] = {}
        for i, p in enumerate(pairs):
            by_query.setdefault(p.query, []).append(i)
        for query, idx in by_query.items():
            tokens = [t for t in analyse(query, self.language) if t in self._bm25.vocab_dict]
            if not tokens:
                continue
            scores = self._bm25.get_scores(tokens)
            out[idx] = scores[[self._row[pairs[i].doc_id] for i in idx]]
        return out


def make_scorer(spec: RerankerSpec, docs: dict[str, str], corpus_fingerprint: str, offline: bool) -> PairScorer:
    if spec.kind == "bm25":
        return BM25Scorer(docs, corpus_fingerprint, spec.language, spec.k1, spec.b)
    ref = resolve(spec.model, spec.revision, offline)
    cls = CrossEncoderScorer if spec.kind == "cross-encoder" else BiEncoderScorer
    return cls(ref, spec.max_length, spec.batch_size, spec.device, spec.trust_remote_code)


def pair_key(query: str, doc_id: str, doc: str) -> tuple[str, str, str]:
    """Cache key of a pair: hashes of the query text and of the document text, with its id."""
    return fingerprint.of_text(query), doc_id, fingerprint.of_text(doc)
