"""BM25's index of a corpus table, built a block of documents at a time: the CSC arrays `bm25s` builds (per posting, a
(token, document) that occurs, its float32 score and int32 row: 8 bytes), without ever holding the corpus's tokens.

`bm25s.BM25.index` wants every document's tokens at once, a Python list of lists of strings: kilobytes per passage,
most of a benchmark-sized run's memory. Here a first pass analyses each block of the corpus table into token ids and
term frequencies and counts document frequencies and lengths, the block's postings spilled to a temporary folder; a
second pass reads the blocks back and puts each posting's score in its column. The scores are bm25s's ("lucene", its
default): the same float64 arithmetic per posting, rounded to float32, so a query's sums formed as bm25s forms them
(`scores`, `lookup`: in the query's token order, in float32) are bm25s's bit for bit (tests/test_rerank.py and
tests/test_bm25_first_stage.py check them against bm25s itself).
"""

from __future__ import annotations

import math
import tempfile
import threading
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from terazi.base.shutdown import check
from terazi.base.turkish import analyse
from terazi.store.files import stat_stamp


@dataclass(frozen=True)
class BM25Index:
    vocab: dict[str, int]
    data: np.ndarray  # float32: each posting's score, column by column (token id), rows ascending within a column
    indices: np.ndarray  # int32: each posting's row (document number in corpus order)
    indptr: np.ndarray  # int64: column t's postings are [indptr[t], indptr[t + 1])
    n_docs: int

    def token_ids(self, tokens: Iterable[str]) -> np.ndarray:
        """The ids of a query's tokens in their order, repeats kept, tokens the corpus lacks left out (as bm25s)."""
        return np.array([self.vocab[t] for t in tokens if t in self.vocab], dtype=np.int64)

    def scores(self, token_ids: np.ndarray) -> np.ndarray:
        """A query's float32 score of every document: bm25s's own sum (`get_scores_from_ids`)."""
        import bm25s

        return bm25s.BM25._compute_relevance_from_scores(
            self.data, self.indptr, self.indices, self.n_docs, token_ids.astype(np.int32), np.dtype(np.float32)
        )

    def lookup(self, token_ids: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The score of each (token, row) posting, 0 where the token does not occur in that document: a binary search
        within each token's column, all lookups at once."""
        lo, hi = self.indptr[token_ids], self.indptr[token_ids + 1]
        end = hi.copy()
        while (open_ := lo < hi).any():  # lower bound of `rows` in each column
            mid = (lo + hi) // 2
            below = open_ & (self.indices[np.minimum(mid, len(self.indices) - 1)] < rows)
            lo = np.where(below, mid + 1, lo)
            hi = np.where(open_ & ~below, mid, hi)
        at = np.minimum(lo, len(self.indices) - 1)
        found = (lo < end) & (self.indices[at] == rows)
        return np.where(found, self.data[at], np.float32(0))


class _Vocabulary(dict):
    """token → id, a new token numbered as it is first looked up (`in` asks without adding)."""

    def __missing__(self, token: str) -> int:
        self[token] = len(self)
        return self[token]


def build(batches: Iterable[list[str]], language: str, k1: float, b: float, spill: Path | None = None) -> BM25Index:
    """The index of every text of `batches` (the corpus in order, a block at a time), `analyse`d in `language`; a
    document without tokens counts as one empty token, as bm25s counts it. Postings wait between the passes in a
    temporary folder under `spill` (the system's default when None)."""
    vocab = _Vocabulary()
    df = np.zeros(0, dtype=np.int64)
    lengths, parts = [], []
    with tempfile.TemporaryDirectory(dir=spill, prefix="bm25-") as tmp:
        for i, texts in enumerate(batches):
            check()  # a stop ends the index within one block
            ids, n = array("q"), array("q")
            for text in texts:  # a document's tokens at a time: no block of Python strings is ever held
                tokens = analyse(text, language) or [""]
                ids.extend(map(vocab.__getitem__, tokens))
                n.append(len(tokens))
            ids, n = np.frombuffer(ids, dtype=np.int64), np.frombuffer(n, dtype=np.int64)
            doc = np.repeat(np.arange(len(n), dtype=np.int64), n)
            pair, tf = np.unique(doc * len(vocab) + ids, return_counts=True)  # each document's distinct tokens
            voc = (pair % len(vocab)).astype(np.int32)
            per_doc = np.bincount(pair // len(vocab), minlength=len(n))
            df = np.pad(df, (0, len(vocab) - len(df))) + np.bincount(voc, minlength=len(vocab))
            lengths.append(n)
            parts.append(Path(tmp) / f"{i}.npz")
            np.savez(parts[-1], voc=voc, tf=tf.astype(np.float32), per_doc=per_doc)
        lengths = np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int64)
        n_docs = len(lengths)
        avg = lengths.mean() if n_docs else 0.0
        # bm25s's idf, per token in Python floats (math.log), stored in float32
        idf = np.array([math.log(1 + (n_docs - d + 0.5) / (d + 0.5)) for d in df.tolist()], dtype=np.float32)
        indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(df, out=indptr[1:])
        data = np.empty(indptr[-1], dtype=np.float32)
        indices = np.empty(indptr[-1], dtype=np.int32)
        heads, first = indptr[:-1].copy(), 0
        for path in parts:
            check()
            with np.load(path) as part:
                voc, tf, per_doc = part["voc"], part["tf"], part["per_doc"]
            rows = np.repeat(np.arange(first, first + len(per_doc), dtype=np.int64), per_doc)
            first += len(per_doc)
            # bm25s: idf[token] * tf / (k1 * ((1 - b) + b * l_d / l_avg) + tf), in float64, kept as float32
            norm = k1 * ((1 - b) + b * lengths[rows] / avg)
            score = (idf[voc] * (tf / (norm + tf))).astype(np.float32)
            order = np.argsort(voc, kind="stable")  # column by column, rows ascending within each
            col = voc[order]
            starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
            runs = np.diff(np.r_[starts, len(col)])
            at = heads[col] + np.arange(len(col)) - np.repeat(starts, runs)
            data[at], indices[at] = score[order], rows[order]
            heads[col[starts]] += runs
    return BM25Index(vocab, data, indices, indptr, n_docs)


_last: tuple[tuple, BM25Index] | None = None
_last_lock = threading.Lock()


def shared(table: Path, batches: Iterable[list[str]], language: str, k1: float, b: float) -> BM25Index:
    """The index of the corpus table at `table` (its texts: `batches`), built once for the BM25 first stage and the BM25
    reranker of the same corpus and parameters: the process keeps the last one built, keyed by the table's device, inode
    and size (a table made again is a new file: indexed again; its time is not in the key, since using a table touches
    it). One index at a time: a run of several corpora holds one, as before."""
    global _last
    key = (str(table), tuple(stat_stamp(table)[:3]), language, k1, b)
    with _last_lock:
        if _last is None or _last[0] != key:
            _last = None  # the old index freed before the new one is built
            _last = (key, build(batches, language, k1, b, spill=table.parent))
        return _last[1]
