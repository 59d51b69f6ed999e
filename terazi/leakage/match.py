"""Shared n-grams between two sides, one held in memory as sorted 64-bit hashes and the other streamed past it.

Items on each side (a benchmark query or passage; a training record) are numbered 0… in reading order and fall
into groups (a benchmark dataset; a training source) that are consecutive ranges of those numbers. The answer is
given both ways: each streamed item that shares an n-gram with some held item of group g, and each held item that
shares one with a streamed item of group g, every such (item, group) once, with the first hash found and an item
of the other side that has it (the partner shown in examples). Everything is numpy arrays; what is kept between
batches is bounded by the items hit and the held side's distinct hashes, not by the stream's length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Hits:
    """Items hit, one row per (item, other side's group): parallel arrays."""

    item: np.ndarray  # int64, this side's item number
    group: np.ndarray  # int64, the other side's group whose items share an n-gram with it
    hash: np.ndarray  # uint64, one shared n-gram
    partner: np.ndarray  # int64, an item of that group that has the n-gram

    @staticmethod
    def empty() -> Hits:
        return Hits(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.uint64), np.empty(0, np.int64))

    def concat(self, other: Hits) -> Hits:
        return Hits(*(np.concatenate([a, b]) for a, b in zip(self._arrays(), other._arrays())))

    def _arrays(self) -> tuple[np.ndarray, ...]:
        return self.item, self.group, self.hash, self.partner

    def take(self, idx: np.ndarray) -> Hits:
        return Hits(*(a[idx] for a in self._arrays()))

    def first_per_item_group(self) -> Hits:
        """One row per (item, group), the earliest, sorted by item then group."""
        order = np.lexsort((self.group, self.item))
        item, group = self.item[order], self.group[order]
        first = np.ones(len(order), bool)
        first[1:] = (item[1:] != item[:-1]) | (group[1:] != group[:-1])
        return self.take(order[first])


def group_of(items: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The group of each item, where group g holds items starts[g] ≤ i < starts[g+1]."""
    return np.searchsorted(starts, items, side="right") - 1


def _expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All positions lo[j] ≤ p < hi[j], with the j each came from."""
    counts = hi - lo
    src = np.repeat(np.arange(len(lo), dtype=np.int64), counts)
    offset = np.arange(len(src), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return lo[src] + offset, src


def _distinct(keys: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Indices of the first row of each distinct (key, group), sorted by key then group."""
    order = np.lexsort((group, keys))  # stable: earlier rows first within equal pairs
    k, g = keys[order], group[order]
    first = np.ones(len(order), bool)
    first[1:] = (k[1:] != k[:-1]) | (g[1:] != g[:-1])
    return order[first]


class HeldIndex:
    """The held side: every (n-gram hash, item) pair, fed in batches, then sorted once by `freeze`."""

    def __init__(self) -> None:
        self._hashes: list[np.ndarray] = []
        self._items: list[np.ndarray] = []

    def add(self, hashes: np.ndarray, items: np.ndarray) -> None:
        self._hashes.append(hashes)
        self._items.append(items)

    def freeze(self, group_starts: np.ndarray) -> None:
        """Sort what was added; `group_starts`: the first item of each group (items being numbered in groups)."""
        h = np.concatenate(self._hashes) if self._hashes else np.empty(0, np.uint64)
        items = np.concatenate(self._items) if self._items else np.empty(0, np.int64)
        self._hashes, self._items = [], []
        order = np.argsort(h, kind="stable")
        self.hash = h[order]
        del h
        self.item = items[order]
        del items, order
        distinct = np.ones(len(self.hash), bool)
        distinct[1:] = self.hash[1:] != self.hash[:-1]
        self.unique = self.hash[distinct]
        # a bitmap of the hashes' top bits, ~32 bits per distinct hash: most streamed n-grams are not held, and one
        # look-up in it rules out all but ~3% of them far faster than a binary search over all the held hashes
        self._bits = int(min(max(np.ceil(np.log2(32 * max(len(self.unique), 1))), 16), 36))
        self._bitmap = np.zeros(1 << (self._bits - 3), np.uint8)
        top = self.unique >> np.uint64(64 - self._bits)
        np.bitwise_or.at(self._bitmap, top >> np.uint64(3), (np.uint8(1) << (top & np.uint64(7)).astype(np.uint8)))
        # one row per (hash, group) with its first item: a streamed n-gram is hit once per group holding it
        pick = _distinct(self.hash, group_of(self.item, group_starts))
        self.pair_hash, self.pair_item = self.hash[pick], self.item[pick]
        self.pair_group = group_of(self.pair_item, group_starts)

    @property
    def size(self) -> int:
        return len(self.hash)

    def contains(self, hashes: np.ndarray) -> np.ndarray:
        top = hashes >> np.uint64(64 - self._bits)
        out = ((self._bitmap[top >> np.uint64(3)] >> (top & np.uint64(7)).astype(np.uint8)) & 1).astype(bool)
        maybe = np.flatnonzero(out)
        if len(maybe):
            at = np.searchsorted(self.unique, hashes[maybe])
            at[at == len(self.unique)] = 0
            out[maybe] = self.unique[at] == hashes[maybe]
        return out


class Scan:
    """The streamed side, fed batch by batch against a frozen `HeldIndex`."""

    def __init__(self, held: HeldIndex):
        self.held = held
        self._hits = Hits.empty()  # streamed items hit (folded to one row per item and group as it grows)
        self._found = Hits.empty()  # distinct (hash, streamed group) met, with the first streamed item
        self._pending = 0

    def feed(self, hashes: np.ndarray, items: np.ndarray, group: int) -> Hits:
        """A batch of n-gram hashes, the streamed item of each, and the group all those items are in; returns the
        batch's hits (one row per item and held group)."""
        m = self.held.contains(hashes)
        if not m.any():
            return Hits.empty()
        h, it = hashes[m], items[m]
        lo = np.searchsorted(self.held.pair_hash, h, side="left")
        hi = np.searchsorted(self.held.pair_hash, h, side="right")
        at, src = _expand(lo, hi)
        new = Hits(it[src], self.held.pair_group[at], h[src], self.held.pair_item[at]).first_per_item_group()
        self._hits = self._hits.concat(new)
        # the n-grams met, one row per (hash, streamed group), with the first streamed item that has it as partner
        _, pick = np.unique(h, return_index=True)
        self._found = self._found.concat(Hits(it[pick], np.full(len(pick), group, np.int64), h[pick], it[pick]))
        self._pending += len(new.item) + len(pick)
        if self._pending > 4_000_000:  # keep what is carried between batches small
            self._fold()
        return new

    def _fold(self) -> None:
        self._hits = self._hits.first_per_item_group()
        pick = _distinct(self._found.hash, self._found.group)
        self._found = self._found.take(pick)
        self._pending = 0

    def finish(self) -> tuple[Hits, Hits]:
        """(streamed items hit, held items hit), each one row per (item, other side's group)."""
        self._fold()
        streamed = self._hits.first_per_item_group()
        found = self._found  # sorted by hash (then group): `_distinct` sorts
        lo = np.searchsorted(self.held.hash, found.hash, side="left")
        hi = np.searchsorted(self.held.hash, found.hash, side="right")
        at, src = _expand(lo, hi)
        held = Hits(self.held.item[at], found.group[src], found.hash[src], found.partner[src]).first_per_item_group()
        return streamed, held
