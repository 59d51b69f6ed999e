"""Rerankers behind one small interface: score a batch of (query, document) pairs.

Each scorer has an `identity` that changes whenever its scores could (model files or revision, backend,
precision, device kind, max_length, activation; the corpus statistics of BM25); the score cache is keyed on it.
The model backends live in `terazi/backends/`, one module each; `make_scorer` picks one.

Long texts cost what the model sees: before tokenisation a text is cut to `CHARS_PER_TOKEN` characters
per token of `max_length` (see `clip`, which the model backends apply), so a 1 MB document is not tokenised
whole only for the tokenizer to keep its first few hundred tokens.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Iterator, Protocol

import numpy as np

from terazi.schemas.config import RerankerSpec
from terazi import fingerprint
from terazi.models.refs import resolve
from terazi.turkish import analyse

CHARS_PER_TOKEN = 12  # far above the 3-6 characters a token covers in Turkish or English text


def clip(text: str, max_length: int | None) -> str:
    """`text` cut to the character budget of `max_length` tokens (unchanged when there is no limit)."""
    return text[: max_length * CHARS_PER_TOKEN] if max_length else text


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


class Corpus(Protocol):
    """Where scorers and the reranking stage read documents (`terazi.corpus.CorpusTable`, or `InMemoryCorpus`)."""

    def ids(self): ...

    def batches(self) -> Iterator[list[str]]: ...

    def texts(self, doc_ids: Iterable[str]) -> dict[str, str]: ...

    def keys(self, doc_ids=None): ...


class BM25Scorer:
    """BM25 (bm25s) over Turkish-lowercased, Snowball-stemmed, ASCII-folded tokens of the whole corpus.

    The index (corpus statistics) covers the whole corpus; a pair is scored from its document's entries
    only, query by query, so the cost grows with the pairs, not with queries × corpus. The sums are the
    ones `bm25s.BM25.get_scores` forms (float32, in query-token order), so the scores are the same."""

    batch_size = 4096

    def __init__(self, corpus: Corpus, corpus_fingerprint: str, language: str, k1: float, b: float):
        self.language, self.max_length, self.k1, self.b, self._corpus = language, 0, k1, b, corpus
        self.identity = f"bm25:{language}:k1={k1}:b={b}:corpus={corpus_fingerprint}"
        self._bm25 = None

    def _index(self):
        """Built on first use, so a fully cached run skips it."""
        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)
        bm25 = bm25s.BM25(k1=self.k1, b=self.b)
        bm25.index([analyse(t, self.language) or [""] for batch in self._corpus.batches() for t in batch],
                   show_progress=False)
        s = bm25.scores
        data, indices, indptr = s["data"], s["indices"], s["indptr"]
        for t in range(len(indptr) - 1):  # postings sorted by document row, for binary search
            a, z = indptr[t], indptr[t + 1]
            if z - a > 1 and np.any(np.diff(indices[a:z]) < 0):
                order = np.argsort(indices[a:z], kind="stable")
                indices[a:z], data[a:z] = indices[a:z][order], data[a:z][order]
        ids = self._corpus.ids()
        self._row = dict(zip(list(ids), range(len(ids))))
        self._tokens = lru_cache(maxsize=200_000)(self._token_ids)
        return bm25

    def _token_ids(self, query: str) -> np.ndarray:
        return np.asarray(self._bm25.get_tokens_ids(analyse(query, self.language)), dtype=np.int64)

    def score(self, pairs: list[Pair]) -> np.ndarray:
        if self._bm25 is None:
            self._bm25 = self._index()
        s = self._bm25.scores
        data, indices, indptr = s["data"], s["indices"], s["indptr"]
        out = np.zeros(len(pairs), dtype=np.float64)
        by_query: dict[str, list[int]] = {}
        for i, p in enumerate(pairs):
            by_query.setdefault(p.query, []).append(i)
        for query, idx in by_query.items():
            tokens = self._tokens(query)
            if not len(tokens):
                continue
            rows = np.fromiter((self._row[pairs[i].doc_id] for i in idx), dtype=indices.dtype, count=len(idx))
            acc = np.zeros(len(rows), dtype=data.dtype)
            for t in tokens:
                posting = indices[indptr[t]: indptr[t + 1]]
                if not len(posting):
                    continue
                pos = np.minimum(np.searchsorted(posting, rows), len(posting) - 1)
                acc += np.where(posting[pos] == rows, data[indptr[t] + pos], 0)
            if self._bm25.nonoccurrence_array is not None:
                acc += self._bm25.nonoccurrence_array[tokens].sum()
            out[idx] = acc
        return out


class InMemoryCorpus:
    """A corpus held as a dict (tests, small tools): the same interface as the corpus table."""

    def __init__(self, docs: dict[str, str]):
        self.docs = docs

    def ids(self) -> list[str]:
        return list(self.docs)

    def batches(self) -> Iterator[list[str]]:
        yield list(self.docs.values())

    def texts(self, doc_ids: Iterable[str]) -> dict[str, str]:
        return {d: self.docs[d] for d in doc_ids}

    def keys(self, doc_ids=None):
        import polars as pl

        ids = list(self.docs) if doc_ids is None else list(dict.fromkeys(doc_ids))
        texts = [self.docs[d] for d in ids]
        return pl.DataFrame({"doc_id": ids, "key": fingerprint.doc_keys(ids, fingerprint.text_keys(texts)),
                             "chars": [len(t) for t in texts]}, schema={"doc_id": pl.Utf8, "key": pl.Int64,
                                                                         "chars": pl.Int32})


def make_scorer(spec: RerankerSpec, corpus: Corpus, corpus_fingerprint: str, offline: bool,
                cache_dir: str = ".terazi-cache") -> PairScorer:
    """The row's scorer, metered (`cost()`): BM25 here, models from the backend table in `terazi.backends`
    (`cache_dir` holds ONNX exports and int8 copies). Nothing is loaded until the first score."""
    from terazi.rerank.backends import Metered, make_backend

    if spec.kind == "bm25":
        return Metered(BM25Scorer(corpus, corpus_fingerprint, spec.language, spec.k1, spec.b))
    return make_backend(spec, resolve(spec.model, spec.revision, offline), cache_dir)


MAX_SCORERS = 4
_scorers: OrderedDict[str, tuple[PairScorer, threading.Lock]] = OrderedDict()
_scorers_lock = threading.Lock()


def shared_scorer(spec: RerankerSpec, corpus: Corpus, corpus_fingerprint: str, offline: bool,
                  cache_dir: str = ".terazi-cache") -> tuple[PairScorer, threading.Lock]:
    """One scorer per (reranker, corpus) in this process, with the lock its users score under: chunk tasks on
    threads or on a worker load a model (or build a BM25 index) once, and never run it from two threads."""
    key = f"{spec.model_dump_json()}|{corpus_fingerprint}"
    with _scorers_lock:
        if key not in _scorers:
            _scorers[key] = (make_scorer(spec, corpus, corpus_fingerprint, offline, cache_dir), threading.Lock())
            while len(_scorers) > MAX_SCORERS:
                _scorers.popitem(last=False)
        _scorers.move_to_end(key)
        return _scorers[key]


def pair_key(query: str, doc_id: str, doc: str) -> tuple[int, int]:
    """Score-cache key of one pair: (query key, document key), 64-bit each (see `terazi.fingerprint`).

    The reranking stage computes the same keys vectorised, once per distinct query text and document."""
    text = fingerprint.text_keys([doc])
    return int(fingerprint.text_keys([query])[0]), int(fingerprint.doc_keys([doc_id], text)[0])
