"""The reranking stage's vocabulary: a (query, document) pair, a scorer of pairs, and the corpus it reads from.

Every scorer (each backend of `terazi.rerank.backends`, BM25 included) follows `PairScorer`; its `identity` changes
whenever its scores could (model files or revision, backend, precision, device kind, max_length, activation; the
corpus statistics of BM25), and the score store is keyed on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple, Protocol

import numpy as np


class Pair(NamedTuple):
    """One (query text, document) to score; a tuple, since a run builds one per pair it scores."""

    query: str
    doc_id: str
    doc: str


class PartlyScored(Exception):
    """A scoring call that failed after scoring some of its pairs (a remote scorer whose requests were answered
    before one failed for good): `scores` has NaN where no score came back, and `error` is the failure. Paid-for
    scores are stored before `error` is raised (`terazi.rerank.work.score_rows`)."""

    def __init__(self, scores: np.ndarray, error: BaseException):
        super().__init__(str(error))
        self.scores, self.error = scores, error


class PairScorer(Protocol):
    identity: str
    max_length: int
    batch_size: int

    def score(self, pairs: list[Pair]) -> np.ndarray: ...


class Corpus(Protocol):
    """Where scorers and the reranking stage read documents (`terazi.data.corpus.CorpusTable`)."""

    def ids(self): ...

    def first_rows(self): ...

    def batches(self) -> Iterator[list[str]]: ...

    def texts(self, doc_ids: Iterable[str]) -> dict[str, str]: ...

    def keys(self, doc_ids=None): ...
