"""Rerankers behind one small interface: score a batch of (query, document) pairs.

Each scorer has an `identity` that changes whenever its scores could (model files or revision, backend,
precision, device kind, max_length, activation; the corpus statistics of BM25); the score cache is keyed on it.
The model backends live in `terazi/backends/`, one module each; `make_scorer` picks one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from schemas.config import RerankerSpec
from terazi import fingerprint
from terazi.models import resolve
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


def make_scorer(spec: RerankerSpec, docs: dict[str, str], corpus_fingerprint: str, offline: bool,
                cache_dir: str = ".terazi-cache") -> PairScorer:
    """The row's scorer, metered (`cost()`): BM25 here, models from the backend table in `terazi.backends`
    (`cache_dir` holds ONNX exports and int8 copies)."""
    from terazi.backends import Metered, make_backend

    if spec.kind == "bm25":
        return Metered(BM25Scorer(docs, corpus_fingerprint, spec.language, spec.k1, spec.b))
    return make_backend(spec, resolve(spec.model, spec.revision, offline), cache_dir)


def pair_key(query: str, doc_id: str, doc: str) -> tuple[str, str, str]:
    """Cache key of a pair: hashes of the query text and of the document text, with its id."""
    return fingerprint.of_text(query), doc_id, fingerprint.of_text(doc)
