"""BM25 as a scoring backend: bm25s over Turkish-lowercased, Snowball-stemmed, ASCII-folded tokens of the corpus."""

from __future__ import annotations

import logging
from functools import lru_cache

import numpy as np

from terazi.base.shutdown import check
from terazi.base.turkish import analyse
from terazi.rerank.pairs import Corpus, Pair


class BM25Scorer:
    """BM25 (bm25s) over Turkish-lowercased, Snowball-stemmed, ASCII-folded tokens of the whole corpus.

    The index (corpus statistics) covers the whole corpus; a pair is scored from its document's entries only, so the
    cost grows with the pairs, not with queries × corpus. The index's entries are one sorted array of keys
    (token × documents + row), so every (pair, query token) of a block is looked up at once (`np.searchsorted`), and
    the sums are the ones `bm25s.BM25.get_scores` forms (float32, in query-token order): the scores are the same."""

    batch_size = 4096
    # Scoring a pair (a few array lookups) costs less than claiming, writing and reading it in the score store, so
    # BM25's scores bypass it (terazi.rerank.work.score_unstored); a stored ranking still makes a warm run free.
    in_store = False

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
        bm25.index(
            [analyse(t, self.language) or [""] for batch in self._corpus.batches() for t in batch], show_progress=False
        )
        s = bm25.scores
        data, indices, indptr = s["data"], s["indices"], s["indptr"]
        ids = self._corpus.ids()
        self._docs = len(ids)
        keys = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr)) * self._docs + indices
        order = np.argsort(keys, kind="stable")
        self._keys, self._values = keys[order], data[order]
        self._row = dict(zip(ids.to_list(), range(len(ids))))
        self._tokens = lru_cache(maxsize=200_000)(self._token_ids)
        return bm25

    def _token_ids(self, query: str) -> np.ndarray:
        return np.asarray(self._bm25.get_tokens_ids(analyse(query, self.language)), dtype=np.int64)

    def score(self, pairs: list[Pair]) -> np.ndarray:
        if self._bm25 is None:
            self._bm25 = self._index()
        if not pairs:
            return np.zeros(0, dtype=np.float64)
        number: dict[str, int] = {}
        which = np.fromiter((number.setdefault(p.query, len(number)) for p in pairs), dtype=np.int64, count=len(pairs))
        rows = np.fromiter((self._row[p.doc_id] for p in pairs), dtype=np.int64, count=len(pairs))
        tokens = []
        for q in number:
            check()  # a stop ends the stage within one query's analysis
            tokens.append(self._tokens(q))
        width = max(len(t) for t in tokens)
        table = np.full((len(tokens), max(width, 1)), -1, dtype=np.int64)  # each query's tokens, -1 after its last
        for i, t in enumerate(tokens):
            table[i, : len(t)] = t
        acc = np.zeros(len(pairs), dtype=self._values.dtype)
        for j in range(width):  # token by token, as get_scores adds them
            t = table[which, j]
            live = np.flatnonzero(t >= 0)
            keys = t[live] * self._docs + rows[live]
            pos = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
            acc[live] += np.where(self._keys[pos] == keys, self._values[pos], 0)
        extra = self._bm25.nonoccurrence_array
        if extra is not None:  # BM25L/BM25+: what each query token adds where it does not occur
            acc += np.array([extra[t].sum() if len(t) else 0 for t in tokens], dtype=acc.dtype)[which]
        return acc.astype(np.float64)
