"""Examples of shared n-grams: a benchmark text and a training text, the shared words shown in both.

They are chosen while the streamed side passes, whose texts are kept then (the first hit queries and passages of
each dataset when the benchmark is streamed; the first hit training records for each dataset when training is);
the partners' texts are read again at the end from the held side, which is the smaller. Each example's shared
words are found again in both texts and compared word by word, so a 64-bit hash collision is never shown.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np
import polars as pl

from terazi.leakage.match import Hits, group_of
from terazi.leakage.ngrams import text_ngrams
from terazi.leakage.normalize import tokens
from terazi.leakage.result import Example
from terazi.leakage.sides import BenchmarkSide, TrainingSide
from terazi.schemas.leakage import LeakageOptions

_WIDTH = 12  # words shown on each side of the shared ones
TextsOf = Callable[[np.ndarray], dict[int, list[str]]]  # streamed item numbers → their texts


class Examples:
    def __init__(self, bench: BenchmarkSide, train: TrainingSide, streamed: str, options: LeakageOptions):
        self.bench, self.train, self.streamed, self.options = bench, train, streamed, options
        self.picked: dict[int, list[tuple[int, int, int]]] = {}  # dataset → (benchmark item, training record, hash)
        self.kept: dict[int, list[str]] = {}  # streamed item → its texts
        self._count: Counter[tuple[int, bool]] = Counter()

    def offer(self, new: Hits, texts_of: TextsOf) -> None:
        """New hits of the streamed side (one row per item and group), in stream order."""
        k = self.options.max_examples
        if not len(new.item) or not k:
            return
        if self.streamed == "benchmark":  # item: benchmark item, group: source, partner: training record
            _, first = np.unique(new.item, return_index=True)
            new = new.take(np.sort(first))
            d = group_of(new.item, self.bench.group_starts)
            passage = new.item >= np.array([self.bench.passage_start(x) for x in range(len(self.bench.datasets))])[d]
            keys, room = list(zip(d.tolist(), passage.tolist())), k
            bench_item, train_item = new.item, new.partner
        else:  # item: training record, group: dataset, partner: benchmark item
            keys, room = [(g, False) for g in new.group.tolist()], 2 * k
            bench_item, train_item, d = new.partner, new.item, new.group
        chosen = []
        for j, key in enumerate(keys):
            if self._count[key] < room:
                self._count[key] += 1
                chosen.append(j)
                self.picked.setdefault(int(d[j]), []).append((int(bench_item[j]), int(train_item[j]), int(new.hash[j])))
        if chosen:
            self.kept.update(texts_of(new.item[chosen]))

    def of(self, d: int) -> list[Example]:
        """The examples of dataset d: benchmark queries first, then passages."""
        picked = sorted(self.picked.get(d, []), key=lambda p: (p[0] >= self.bench.passage_start(d), p[0]))
        if not picked:
            return []
        bench_texts = self._bench_texts(d, [p[0] for p in picked])
        records = [p[1] for p in picked]
        train_texts = {r: self.kept[r] for r in records} if self.streamed == "training" else self.train.texts(records)
        refs = dict(zip(records, self.train.refs(np.array(records, np.int64))))
        start, pstart = int(self.bench.starts[d]), self.bench.passage_start(d)
        qids, doc_ids = self.bench.query_ids[d], self.bench.datasets[d].doc_ids
        out = []
        for item, record, h in picked:
            ours = _locate(bench_texts[item], h, self.options)
            theirs = next(filter(None, (_locate(t, h, self.options) for t in train_texts.get(record, []))), None)
            if ours is None or theirs is None or ours[2] != theirs[2]:
                continue  # a 64-bit hash collision: not shown
            kind = "query" if item < pstart else "passage"
            out.append(
                Example(
                    kind=kind,
                    id=qids[item - start] if kind == "query" else doc_ids[item - pstart],
                    train=refs[record],
                    ngram=ours[2],
                    text=_window(*ours[:2], self.options.ngram),
                    train_text=_window(*theirs[:2], self.options.ngram),
                )
            )
        return out

    def _bench_texts(self, d: int, items: list[int]) -> dict[int, str]:
        if self.streamed == "benchmark":
            return {i: self.kept[i][0] for i in items}
        start, pstart = int(self.bench.starts[d]), self.bench.passage_start(d)
        queries = self.bench.datasets[d].queries
        out = {i: queries[self.bench.query_ids[d][i - start]].text for i in items if i < pstart}
        passages = self.bench.passages(d, {i - pstart for i in items if i >= pstart})
        return out | {pstart + row: text for row, text in passages.items()}


def _locate(text: str, h: int, options: LeakageOptions) -> tuple[list[str], int, str] | None:
    """(tokens, position, the n-gram's words) of the n-gram hashing to `h` in `text`, or None."""
    hashes, _ = text_ngrams(pl.Series([text], dtype=pl.Utf8), options.ngram, options.fold_ascii)
    at = np.flatnonzero(hashes == np.uint64(h))
    if not len(at):
        return None
    toks = tokens(pl.Series([text], dtype=pl.Utf8), options.fold_ascii)[0].to_list()
    return toks, int(at[0]), " ".join(toks[at[0] : at[0] + options.ngram])


def _window(toks: list[str], at: int, n: int) -> str:
    before, after = toks[max(0, at - _WIDTH) : at], toks[at + n : at + n + _WIDTH]
    return " ".join(
        (["…"] if at > _WIDTH else [])
        + before
        + toks[at : at + n]
        + after
        + (["…"] if at + n + _WIDTH < len(toks) else [])
    )
