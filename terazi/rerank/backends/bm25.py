"""BM25 as a scoring backend: bm25s over Turkish-lowercased, Snowball-stemmed, ASCII-folded tokens of the corpus."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import polars as pl

from terazi.base.shutdown import check
from terazi.base.turkish import analyse
from terazi.models.bm25_index import BM25Index, shared
from terazi.rerank.pairs import Corpus, Pair


class BM25Scorer:
    """BM25 (bm25s) over Turkish-lowercased, Snowball-stemmed, ASCII-folded tokens of the whole corpus.

    The index (corpus statistics) covers the whole corpus, built a block of documents at a time into bm25s's compact
    arrays (`terazi.models.bm25_index`); a pair is scored from its document's entries only, so the cost grows with
    the pairs, not with queries × corpus: every (pair, query token) of a block is looked up at once, and the sums are
    the ones `bm25s.BM25.get_scores` forms (float32, in query-token order): the scores are the same."""

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

    def _index(self) -> BM25Index:
        """Built on first use, so a fully cached run skips it."""
        index = shared(self._corpus.path, self._corpus.batches(), self.language, self.k1, self.b)
        self._ids = self._corpus.ids().cast(pl.Utf8).to_frame("doc_id").with_row_index("row")
        self._tokens = lru_cache(maxsize=200_000)(self._token_ids)
        return index

    def _token_ids(self, query: str) -> np.ndarray:
        return self._bm25.token_ids(analyse(query, self.language))

    def score(self, pairs: list[Pair]) -> np.ndarray:
        if self._bm25 is None:
            self._bm25 = self._index()
        if not pairs:
            return np.zeros(0, dtype=np.float64)
        number: dict[str, int] = {}
        which = np.fromiter((number.setdefault(p.query, len(number)) for p in pairs), dtype=np.int64, count=len(pairs))
        wanted = pl.DataFrame({"doc_id": [p.doc_id for p in pairs]}, schema={"doc_id": pl.Utf8})
        rows = wanted.join(self._ids, on="doc_id", how="left", maintain_order="left")["row"].to_numpy().astype(np.int64)
        tokens = []
        for q in number:
            check()  # a stop ends the stage within one query's analysis
            tokens.append(self._tokens(q))
        width = max(len(t) for t in tokens)
        table = np.full((len(tokens), max(width, 1)), -1, dtype=np.int64)  # each query's tokens, -1 after its last
        for i, t in enumerate(tokens):
            table[i, : len(t)] = t
        acc = np.zeros(len(pairs), dtype=np.float32)
        for j in range(width):  # token by token, as get_scores adds them
            t = table[which, j]
            live = np.flatnonzero(t >= 0)
            acc[live] += self._bm25.lookup(t[live], rows[live])
        return acc.astype(np.float64)
