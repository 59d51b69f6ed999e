"""Benchmark queries repeated among training queries: equal after normalisation, or nearly (rapidfuzz).

Both sides are compared as their normalised tokens joined by spaces (`normalize.joined`). An exact repeat is found
by a 64-bit hash of that form; a near repeat by rapidfuzz's `fuzz.ratio` (100 × (1 − Indel distance / total
length)) at or above a threshold, 90 by default: one typo in a 20-character query still counts, two unrelated
queries sharing one word do not. The ratio can only reach the threshold t when the shorter string has at least
t / (200 − t) of the longer's length, so each batch of benchmark queries (sorted by length) is compared only with
the training queries whose length allows it; the work is still about (benchmark queries × training queries) / 4.
For each benchmark query the best training query is kept (the first of equal scores, in reading order).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from rapidfuzz import fuzz, process

from terazi.leakage.normalize import joined

_BLOCK = 256  # benchmark queries per rapidfuzz call: a block × its length band of training queries in float32


@dataclass(frozen=True)
class Best:
    """For each benchmark query (in the order given): best score (0: none), training record and its text."""

    score: np.ndarray
    record: np.ndarray
    text: list[str | None]


class RepeatFinder:
    def __init__(self, queries: pl.Series, threshold: float | None, fold_ascii: bool):
        self.threshold, self.fold_ascii = threshold, fold_ascii
        norm = joined(queries, fold_ascii)
        self._hash = norm.hash().to_numpy()
        self._empty = (norm.str.len_chars() == 0).to_numpy()
        self._by_hash = np.argsort(self._hash, kind="stable")
        lengths = norm.str.len_chars().to_numpy()
        self._by_len = np.flatnonzero(~self._empty)[np.argsort(lengths[~self._empty], kind="stable")]
        self._len = lengths[self._by_len]
        self._text = norm.gather(self._by_len).to_list()
        n = len(norm)
        self.best = Best(np.zeros(n, np.float32), np.full(n, -1, np.int64), [None] * n)

    def feed(self, texts: pl.Series, records: np.ndarray) -> None:
        """Training query texts and the record number of each."""
        norm = joined(texts, self.fold_ascii)
        lengths = norm.str.len_chars().to_numpy()
        keep = np.flatnonzero(lengths > 0)
        if not len(keep) or not len(self._by_len):
            return
        norm, records, lengths = norm.gather(keep), records[keep], lengths[keep]
        q, t, s = self._exact(norm.hash().to_numpy())
        if self.threshold is not None and self.threshold < 100:
            nq, nt, ns = self._near(norm, lengths)
            q, t, s = np.concatenate([q, nq]), np.concatenate([t, nt]), np.concatenate([s, ns])
        self._update(q, t, s, norm, records)

    def _exact(self, h: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        sorted_h = self._hash[self._by_hash]
        lo, hi = np.searchsorted(sorted_h, h, "left"), np.searchsorted(sorted_h, h, "right")
        counts = hi - lo
        t = np.repeat(np.arange(len(h), dtype=np.int64), counts)
        at = np.repeat(lo, counts) + np.arange(len(t)) - np.repeat(np.cumsum(counts) - counts, counts)
        q = self._by_hash[at]
        ok = ~self._empty[q]
        return q[ok], t[ok], np.full(int(ok.sum()), 100.0, np.float32)

    def _near(self, norm: pl.Series, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t = float(self.threshold)
        order = np.argsort(lengths, kind="stable")
        tlen, texts = lengths[order], norm.gather(order).to_list()
        out_q, out_t, out_s = [], [], []
        for b in range(0, len(self._by_len), _BLOCK):
            blen = self._len[b : b + _BLOCK]
            lo = np.searchsorted(tlen, blen[0] * t / (200 - t) - 1e-9, "left")
            hi = np.searchsorted(tlen, blen[-1] * (200 - t) / t + 1e-9, "right")
            if lo >= hi:
                continue
            m = process.cdist(
                self._text[b : b + _BLOCK],
                texts[lo:hi],
                scorer=fuzz.ratio,
                score_cutoff=t,
                dtype=np.float32,
                workers=-1,
            )
            i, j = np.nonzero(m)
            out_q.append(self._by_len[b + i])
            out_t.append(order[lo + j])
            out_s.append(m[i, j])
        if not out_q:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32)
        return np.concatenate(out_q), np.concatenate(out_t), np.concatenate(out_s)

    def _update(self, q: np.ndarray, t: np.ndarray, s: np.ndarray, norm: pl.Series, records: np.ndarray) -> None:
        if not len(q):
            return
        order = np.lexsort((t, -s, q))  # per query: best score first, then the earliest training query
        q, t, s = q[order], t[order], s[order]
        first = np.ones(len(q), bool)
        first[1:] = q[1:] != q[:-1]
        q, t, s = q[first], t[first], s[first]
        better = s > self.best.score[q]
        for qi, ti, si in zip(q[better].tolist(), t[better].tolist(), s[better].tolist()):
            self.best.score[qi], self.best.record[qi] = si, records[ti]
            self.best.text[qi] = norm[ti]
