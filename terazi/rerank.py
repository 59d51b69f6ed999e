"""The reranking stage: collect pairs over all conditions, skip what is stored, score the rest in chunks.

Rankings are tables with columns (condition, sample, query_id, rank, doc_id, score). A reranked
list holds the `rerank_depth` rescored candidates, then the remaining first-stage candidates in
their first-stage order, so deeper measures (R@100) still see the whole candidate list.

Pairs live in polars columns, never as one Python object each: a pair's key is (q, d), the 64-bit keys
of its query text (hashed once per distinct text) and of its document (hashed once per corpus, see
`terazi.corpus`). The work list is the unique pairs not in the store, sorted by length (less padding),
numbered by `pos`; a scoring block is `batch_size × 8` consecutive positions and a chunk (one task) a
whole number of blocks, so every chunking scores exactly the same blocks, and so gives the same scores.
"""

from __future__ import annotations

import logging
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ContextManager

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from terazi import fingerprint
from terazi.rerankers import Corpus, Pair, PairScorer
from terazi.store import ModelKey, Scores

log = logging.getLogger("terazi.rerank")
VARIANT = ["condition", "sample", "query_id"]
BLOCK_BATCHES = 8
POLL_SECONDS = 1.0


@dataclass
class PairStats:
    needed: int = 0
    unique: int = 0
    cached: int = 0
    scored: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        return (f"{self.needed} pairs needed, {self.needed - self.unique} duplicates across conditions, "
                f"{self.cached} cached, {self.scored} scored in {self.seconds:.1f}s")


def model_key(scorer: PairScorer) -> ModelKey:
    return ModelKey(scorer.identity, scorer.max_length)


def block_size(scorer: PairScorer) -> int:
    """Pairs per scoring call, committed to the store as one piece."""
    return scorer.batch_size * BLOCK_BATCHES


def variant_keys(variants: pl.DataFrame) -> pl.DataFrame:
    """Each query variant (condition, sample, query_id) with its text and the text's key q, hashed once per text."""
    texts = variants["text"].unique(maintain_order=True)
    qk = pl.DataFrame({"text": texts, "q": fingerprint.text_keys(texts.to_list())}, schema={"text": pl.Utf8, "q": pl.Int64})
    return variants.select(*VARIANT, "text").join(qk, on="text", how="left", maintain_order="left")


def document_keys(doc_keys: pl.DataFrame) -> pl.DataFrame:
    """doc_id, d (the document's key) and chars, from a corpus's key table."""
    return doc_keys.select("doc_id", pl.col("key").alias("d"), "chars")


def pair_keys(candidates: pl.DataFrame | pl.LazyFrame, var: pl.DataFrame, docs: pl.DataFrame,
              rerank_depth: int) -> pl.DataFrame:
    """(q, d) of every (variant, candidate) to rescore, in candidate order; nothing else is held per pair."""
    return (candidates.lazy().filter(pl.col("rank") <= rerank_depth).select(*VARIANT, "doc_id")
            .join(var.lazy().select(*VARIANT, "q"), on=VARIANT, how="left", maintain_order="left")
            .join(docs.lazy().select("doc_id", "d"), on="doc_id", how="left", maintain_order="left")
            .select("q", "d").collect())


def work_list(pairs: pl.DataFrame, var: pl.DataFrame, docs: pl.DataFrame, known: pl.DataFrame) -> pl.DataFrame:
    """Unique pairs not yet scored, with their texts, sorted by length (stable: ties keep first-occurrence order),
    numbered `pos`."""
    todo = pairs.unique(maintain_order=True).join(known.select("q", "d"), on=["q", "d"], how="anti", maintain_order="left")
    todo = (todo.join(var.select("q", "text").unique("q", maintain_order=True), on="q", how="left", maintain_order="left")
            .join(docs.unique("d", maintain_order=True), on="d", how="left", maintain_order="left"))
    todo = todo.with_columns((pl.col("text").str.len_chars() + pl.col("chars")).alias("length"))
    return todo.sort("length", maintain_order=True).select("q", "d", "text", "doc_id").with_row_index("pos")


def chunk_bounds(n: int, chunk_pairs: int, block: int) -> list[tuple[int, int]]:
    """[start, stop) of each chunk: `chunk_pairs` rounded up to whole blocks."""
    size = max(1, -(-chunk_pairs // block)) * block
    return [(i, min(i + size, n)) for i in range(0, n, size)]


def score_rows(rows: pl.DataFrame, corpus: Corpus, scorer: PairScorer, scores: Scores, block: int,
               lock: ContextManager = nullcontext(), on_progress: Callable[[int, int], None] | None = None,
               wait: bool = True, poll: float = POLL_SECONDS) -> tuple[int, pl.DataFrame]:
    """Score the pairs of `rows` (pos, q, d, text, doc_id) that have no score in the store yet.

    Pairs already stored are skipped; the rest are claimed under a lease and scored block by block, each
    block committed. Pairs another run holds a live lease on are left to it: returned at once (`wait=False`,
    so the caller can score other chunks first) or waited for, and taken over if that run stops. Returns
    (pairs this call scored, pairs still left to another run)."""
    model = model_key(scorer)
    need = rows.join(scores.get_many(model, rows.select("q", "d")), on=["q", "d"], how="anti", maintain_order="left")
    scored, total, waited = 0, need.height, False
    while need.height:
        with lock, scores.lease() as lease:
            mine = lease.claim(model, need.select("q", "d"))
            mine = need.join(mine, on=["q", "d"], how="semi", maintain_order="left")
            docs = corpus.texts(mine["doc_id"].unique(maintain_order=True).to_list()) if mine.height else {}
            blocks = mine["pos"].to_numpy() // block
            cuts = [0, *(np.flatnonzero(np.diff(blocks)) + 1).tolist(), mine.height] if mine.height else [0]
            for a, z in zip(cuts[:-1], cuts[1:]):
                part = mine.slice(a, z - a)
                values = scorer.score([Pair(t, d, docs[d]) for t, d in zip(part["text"].to_list(), part["doc_id"].to_list())])
                scores.put_many(model, part.select("q", "d").with_columns(pl.Series("score", values, dtype=pl.Float64)))
                lease.renew()
                scored += part.height
                if on_progress:
                    on_progress(scored, total)
        need = need.join(mine, on=["q", "d"], how="anti", maintain_order="left")
        if not need.height or not wait:
            break
        if not waited:
            log.info("%d pairs are being scored by another run on this cache: waiting for them", need.height)
            waited = True
        time.sleep(poll)
        need = need.join(scores.get_many(model, need.select("q", "d")), on=["q", "d"], how="anti", maintain_order="left")
    return scored, need


def rank_part(candidates: pl.DataFrame, var: pl.DataFrame, docs: pl.DataFrame, found: pl.DataFrame,
              rerank_depth: int) -> pl.DataFrame:
    """The reranked lists of the variants in `candidates` (all their candidates), from the scores in `found`."""
    head = (candidates.filter(pl.col("rank") <= rerank_depth).select(*VARIANT, "rank", "doc_id")
            .join(var.select(*VARIANT, "q"), on=VARIANT, how="left", maintain_order="left")
            .join(docs.select("doc_id", "d"), on="doc_id", how="left", maintain_order="left")
            .join(found, on=["q", "d"], how="left", maintain_order="left"))
    missing = head["score"].null_count()
    if missing:
        raise RuntimeError(f"{missing} pairs have no score after every chunk finished")
    return _reorder(head.drop("q", "d"), candidates, rerank_depth)


def write_ranking(path: Path, candidates: Path, var: pl.DataFrame, docs: pl.DataFrame, found: pl.DataFrame,
                  rerank_depth: int) -> None:
    """The rankings of every variant written one (condition, sample) at a time, so that only one condition's
    candidates are in memory; rows in (condition, sample, query_id, rank) order, as `_reorder` gives them."""
    scan = pl.scan_parquet(candidates)
    groups = scan.select("condition", "sample").unique().collect().sort("condition", "sample").rows()
    tmp = path.with_name(f".{path.name}.tmp")
    writer = None
    try:
        for cond, smp in groups:
            part = scan.filter((pl.col("condition") == cond) & (pl.col("sample") == smp)).collect()
            table = rank_part(part, var, docs, found, rerank_depth).to_arrow()
            writer = writer or pq.ParquetWriter(tmp, table.schema, compression="zstd")
            writer.write_table(table.cast(writer.schema))
        if writer is None:
            pl.DataFrame(schema={"condition": pl.Utf8, "sample": pl.Int64, "query_id": pl.Utf8, "rank": pl.Int64,
                                 "doc_id": pl.Utf8, "score": pl.Float64}).write_parquet(tmp)
    finally:
        if writer is not None:
            writer.close()
    tmp.replace(path)


def rerank(candidates: pl.DataFrame, variants: pl.DataFrame, corpus: Corpus, scorer: PairScorer, scores: Scores,
           rerank_depth: int, chunk_pairs: int | None = None,
           on_progress: Callable[[int, int], None] | None = None) -> tuple[pl.DataFrame, PairStats]:
    """Rescore the top `rerank_depth` candidates of every variant in this process; return the new rankings.
    (The flow runs the same steps as tasks: plan, chunks, ranking; see tasks/rerank.py.)"""
    start = time.perf_counter()
    model = model_key(scorer)
    var = variant_keys(variants)
    docs = document_keys(corpus.keys())
    pairs = pair_keys(candidates, var, docs, rerank_depth)
    unique = pairs.unique()
    known = scores.get_many(model, unique)
    todo = work_list(pairs, var, docs, known)
    stats = PairStats(needed=pairs.height, unique=unique.height, cached=known.height)
    block = block_size(scorer)
    others = []
    for a, z in chunk_bounds(todo.height, chunk_pairs or block, block):
        progress_ = (lambda done, _t, a=a: on_progress(a + done, todo.height)) if on_progress else None
        scored, left = score_rows(todo.slice(a, z - a), corpus, scorer, scores, block, on_progress=progress_, wait=False)
        stats.scored += scored
        others.append(left)
    if sum(f.height for f in others):  # pairs a concurrent run claimed: wait for them (or take them over)
        stats.scored += score_rows(pl.concat(others), corpus, scorer, scores, block)[0]
    found = pl.concat([known, scores.get_many(model, todo.select("q", "d"))])
    stats.cached = stats.unique - stats.scored
    stats.seconds = time.perf_counter() - start
    return rank_part(candidates, var, docs, found, rerank_depth), stats


def _reorder(top: pl.DataFrame, candidates: pl.DataFrame, rerank_depth: int) -> pl.DataFrame:
    """New order of the rescored head (ties keep first-stage order), then the untouched tail."""
    head = top.sort([*VARIANT, "score", "rank"], descending=[False, False, False, True, False]).with_columns(
        pl.int_range(1, pl.len() + 1).over(VARIANT).cast(pl.Int64).alias("rank"))
    tail = candidates.filter(pl.col("rank") > rerank_depth)
    cols = [*VARIANT, "rank", "doc_id", "score"]
    return pl.concat([head.select(cols), tail.select(cols).with_columns(pl.col("rank").cast(pl.Int64))]).sort(
        [*VARIANT, "rank"])


def reciprocal_rank_fusion(rankings: list[pl.DataFrame], rerank_depth: int, k: int = 60) -> pl.DataFrame:
    """RRF over the head of several rankings of the same candidates: Σ 1 / (k + rank)."""
    base = rankings[0]
    fused = pl.concat([r.filter(pl.col("rank") <= rerank_depth).select(*VARIANT, "doc_id", "rank") for r in rankings])
    fused = fused.group_by([*VARIANT, "doc_id"]).agg((1.0 / (k + pl.col("rank"))).sum().alias("score"))
    first = base.filter(pl.col("rank") <= rerank_depth).select(*VARIANT, "doc_id", "rank")
    top = first.join(fused, on=[*VARIANT, "doc_id"], how="left")
    return _reorder(top, base, rerank_depth)
