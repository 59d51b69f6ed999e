"""Pairs as numbers: the keys of the reranking stage.

Pairs live in numeric columns, never as one Python object each. In the store a pair's key is (q, d), the 64-bit keys
of its query text (hashed once per distinct text) and of its document (hashed once per corpus, see
`terazi.data.corpus`); within a run a pair is `pid` = text number × documents + document number, one int64, so that
deduplication and joins over millions of pairs stay cheap.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from terazi.base import fingerprint
from terazi.rerank.pairs import PairScorer
from terazi.rerank.store.keys import ModelKey
from terazi.schemas.tables import CLEAN, VARIANT

BLOCK_BATCHES = 8


def model_key(scorer: PairScorer) -> ModelKey:
    return ModelKey(scorer.identity, scorer.max_length)


def block_size(scorer: PairScorer) -> int:
    """Pairs per scoring call, committed to the store as one piece: enough batches for every request a scorer
    served elsewhere may have in flight (`concurrency`)."""
    return scorer.batch_size * max(BLOCK_BATCHES, getattr(scorer, "concurrency", 0))


def variant_keys(variants: pl.DataFrame) -> pl.DataFrame:
    """Each query variant with its text, the text's key q (hashed once per distinct text) and number qi."""
    texts = variants["text"].unique(maintain_order=True)
    qk = pl.DataFrame(
        {"text": texts, "q": fingerprint.text_keys(texts.to_list()), "qi": np.arange(texts.len())},
        schema={"text": pl.Utf8, "q": pl.Int64, "qi": pl.Int64},
    )
    return variants.select(*VARIANT, "text").join(qk, on="text", how="left", maintain_order="left")


def document_keys(doc_keys: pl.DataFrame) -> pl.DataFrame:
    """doc_id, d (the document's key), chars and di (its number in this table), from a corpus's key table."""
    return (
        doc_keys.select("doc_id", pl.col("key").alias("d"), "chars")
        .with_row_index("di")
        .with_columns(pl.col("di").cast(pl.Int64))
    )


def rescored(rerank_depth: int, sweep_depth: int | None = None) -> pl.Expr:
    """The candidates a row rescores: those ranked ≤ `rerank_depth`; with a depth sweep, also the clean queries'
    candidates down to `sweep_depth` (the sweep is read on clean queries, so corrupted ones cost nothing more)."""
    head = pl.col("rank") <= rerank_depth
    return head if sweep_depth is None else head | ((pl.col("condition") == CLEAN) & (pl.col("rank") <= sweep_depth))


def pair_ids(
    candidates: pl.DataFrame | pl.LazyFrame,
    var: pl.DataFrame,
    docs: pl.DataFrame,
    rerank_depth: int,
    sweep_depth: int | None = None,
) -> pl.Series:
    """`pid` of every (variant, candidate) to rescore (`rescored`), in candidate order: nothing else is held per
    pair."""
    return (
        candidates.lazy()
        .filter(rescored(rerank_depth, sweep_depth))
        .select(*VARIANT, "doc_id")
        .join(var.lazy().select(*VARIANT, "qi"), on=VARIANT, how="left", maintain_order="left")
        .join(docs.lazy().select("doc_id", "di"), on="doc_id", how="left", maintain_order="left")
        .select((pl.col("qi") * docs.height + pl.col("di")).alias("pid"))
        .collect()
        .to_series()
    )


def store_keys(pids: pl.Series, var: pl.DataFrame, docs: pl.DataFrame) -> pl.DataFrame:
    """The store's keys (q, d) of run-local pair ids."""
    n = docs.height
    q = var.unique("qi").sort("qi")["q"].to_numpy()
    ids = pids.to_numpy()
    return pl.DataFrame({"q": q[ids // n], "d": docs["d"].to_numpy()[ids % n]}, schema={"q": pl.Int64, "d": pl.Int64})


def run_ids(found: pl.DataFrame, var: pl.DataFrame, docs: pl.DataFrame) -> pl.DataFrame:
    """Scores found in the store (q, d, score) under run-local pair ids (pid, score)."""
    qmap = var.select("q", "qi").unique("q")
    return (
        found.join(qmap, on="q", how="inner")
        .join(docs.select("d", "di"), on="d", how="inner")
        .select((pl.col("qi") * docs.height + pl.col("di")).alias("pid"), "score")
    )
