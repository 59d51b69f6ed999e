"""Word n-grams as 64-bit hashes, computed for a whole batch of texts in numpy (no Python object per n-gram).

Each distinct token of a batch is hashed once (polars' 64-bit string hash, in Rust); an n-gram's hash is the
polynomial Σ token[i+k]·P^(n-1-k) mod 2^64 over those token hashes, run through splitmix64's finaliser so that the
bits are evenly spread for sorting and searching. Both sides of a check are hashed in one process with one seed,
so equal n-grams have equal hashes; two different n-grams share a hash with a chance of about 2^-64 per pair
(about 10^-5 for 10^7 × 10^7 n-grams, and the examples shown are checked word by word).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from terazi.leakage.normalize import tokens

_SEED = 0x7E8A21
_P = np.uint64(0x9E3779B97F4A7C15)  # odd: multiplication by it is a bijection mod 2^64


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place on a uint64 array."""
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def token_hashes(texts: pl.Series, fold_ascii: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(hash of every token of every text, in order; number of tokens of each text)."""
    toks = tokens(texts, fold_ascii)
    lengths = toks.list.len().to_numpy().astype(np.int64)
    flat = toks.explode().drop_nulls()  # an empty list explodes to a null in some polars versions
    return flat.hash(seed=_SEED).to_numpy(), lengths


def ngram_hashes(tok: np.ndarray, lengths: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(hash of every n-gram, index of the text it comes from), text by text and left to right within a text.

    `tok` is the token hashes of all texts end to end and `lengths` each text's token count; n-grams never run
    across two texts, and a text of fewer than n tokens has none."""
    total = len(tok)
    if total < n:
        return np.empty(0, np.uint64), np.empty(0, np.int64)
    with np.errstate(over="ignore"):
        h = tok[: total - n + 1].copy()
        for k in range(1, n):
            h *= _P
            h += tok[k : total - n + 1 + k]
    counts = np.maximum(lengths - n + 1, 0)
    owner = np.repeat(np.arange(len(lengths), dtype=np.int64), counts)
    starts = np.cumsum(lengths) - lengths  # first token of each text
    first_ngram = np.cumsum(counts) - counts  # index, among kept n-grams, of each text's first
    keep = np.repeat(starts, counts) + (np.arange(len(owner), dtype=np.int64) - np.repeat(first_ngram, counts))
    with np.errstate(over="ignore"):
        return _mix(h[keep]), owner


def text_ngrams(texts: pl.Series, n: int, fold_ascii: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """`ngram_hashes` of a batch of raw texts."""
    tok, lengths = token_hashes(texts, fold_ascii)
    return ngram_hashes(tok, lengths, n)
