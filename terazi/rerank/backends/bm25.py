"""BM25 as a scoring backend: bm25s over Turkish-lowercased, Snowball-stemmed, ASCII-folded tokens of the corpus."""

from __future__ import annotations

import logging
from functools import lru_cache

import numpy as np

from terazi.rerank.pairs import Corpus, Pair
from terazi.shutdown import check
from terazi.turkish import analyse


class BM25Scorer:
    """BM25 (bm25s) over Turkish-lowercased, Snowball-stemmed, ASCII-folded tokens of the whole corpus.

    The index (corpus statistics) covers the whole corpus; a pair is scored from its document's entries
    only, query by query, so the cost grows with the pairs, not with queries × corpus. The sums are the
    ones `bm25s.BM25.get_scores` forms (float32, in query-token order), so the scores are the same."""

    batch_size = 4096

    @classmethod
    def create(cls, spec, *, corpus: Corpus, corpus_fingerprint: str, **_) -> BM25Scorer:
        """From a `BM25Spec` (the backend table's constructor): no model, the corpus statistics only."""
        return cls(corpus, corpus_fingerprint, spec.language, spec.k1, spec.b)

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
            check()
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
