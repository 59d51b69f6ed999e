"""The work list of a reranking row and the loop that scores it, chunk by chunk, through the score store.

The work list is the unique pairs not in the store, sorted by length (less padding), numbered by `pos`; a scoring
block is `batch_size × 8` consecutive positions and a chunk (one task) a whole number of blocks, so every chunking
scores exactly the same blocks, and so gives the same scores (a bi-encoder's vectors, encoded once per text for the
whole claim, agree across chunkings to the model's float tolerance). Concurrent runs on one cache split the work
through the store's leases: no pair is scored twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import numpy as np
import polars as pl

from terazi.base.paths import write_atomic
from terazi.data.blocks import BLOCK_ROWS, write_blocks
from terazi.rerank.pair_keys import model_key
from terazi.rerank.pairs import Corpus, Pair, PairScorer, PartlyScored
from terazi.rerank.store import Scores

log = logging.getLogger("terazi.rerank")
POLL_SECONDS = 1.0


def write_work_list(
    path: Path, unique: pl.Series, known: pl.DataFrame, var: pl.DataFrame, docs: pl.DataFrame, by_query: bool = False
) -> int:
    """The unique pairs (pids in first-occurrence order) without a score, sorted by length (stable: ties keep
    first-occurrence order; `by_query`: by query text first, so that a scorer served elsewhere sends each query's
    documents in as few requests as it can), written to `path` as (pos, pid, q, d, text, doc_id) a block at a time
    (only the pairs' numbers are held whole; their texts and ids are gathered block by block); returns their number."""
    todo = unique.to_frame("pid").join(known.select("pid"), on="pid", how="anti", maintain_order="left")["pid"]
    n = docs.height
    texts = var.unique("qi").sort("qi").select("q", "text")  # row i: text number i
    ids = todo.to_numpy()
    length = (
        texts["text"].str.len_chars().to_numpy().astype(np.int64)[ids // n]
        + docs["chars"].to_numpy().astype(np.int64)[ids % n]
    )
    ids = ids[np.lexsort((length, ids // n)) if by_query else np.argsort(length, kind="stable")]
    del length

    def rows() -> Iterator[pl.DataFrame]:
        for a in range(0, len(ids), BLOCK_ROWS):
            pid = ids[a : a + BLOCK_ROWS]
            yield pl.concat(
                [
                    pl.DataFrame({"pos": np.arange(a, a + len(pid), dtype=np.uint32), "pid": pid}),
                    texts.gather(pid // n),
                    docs.select("d", "doc_id").gather(pid % n),
                ],
                how="horizontal",
            ).select("pos", "pid", "q", "d", "text", "doc_id")

    write_blocks(
        path,
        rows(),
        lambda: pl.DataFrame(
            schema={"pos": pl.UInt32, "pid": pl.Int64, "q": pl.Int64, "d": pl.Int64, "text": pl.Utf8, "doc_id": pl.Utf8}
        ),
    )
    return len(ids)


def chunk_bounds(n: int, chunk_pairs: int, block: int) -> list[tuple[int, int]]:
    """[start, stop) of each chunk: `chunk_pairs` rounded up to whole blocks."""
    size = max(1, -(-chunk_pairs // block)) * block
    return [(i, min(i + size, n)) for i in range(0, n, size)]


def score_rows(
    rows: pl.DataFrame,
    corpus: Corpus,
    scorer: PairScorer,
    scores: Scores,
    block: int,
    lock: AbstractContextManager = nullcontext(),
    on_progress: Callable[[int, int], None] | None = None,
    wait: bool = True,
    poll: float = POLL_SECONDS,
) -> tuple[int, pl.DataFrame]:
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
            pairs = [Pair(t, d, docs[d]) for t, d in zip(mine["text"].to_list(), mine["doc_id"].to_list())]
            blocks = mine["pos"].to_numpy() // block
            cuts = [0, *(np.flatnonzero(np.diff(blocks)) + 1).tolist(), mine.height] if mine.height else [0]
            holding = getattr(scorer, "holding", None)  # a bi-encoder encodes each text of the claim once
            with holding(pairs) if holding else nullcontext():
                for a, z in zip(cuts[:-1], cuts[1:]):
                    part = mine.slice(a, z - a)
                    try:
                        values = scorer.score(pairs[a:z])
                    except PartlyScored as e:  # keep what was paid for, then fail the chunk
                        done = ~np.isnan(e.scores)
                        scores.put_many(
                            model,
                            part.select("q", "d")
                            .filter(pl.Series(done))
                            .with_columns(pl.Series("score", e.scores[done], dtype=pl.Float64)),
                        )
                        raise e.error from None
                    scores.put_many(
                        model, part.select("q", "d").with_columns(pl.Series("score", values, dtype=pl.Float64))
                    )
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
        need = need.join(
            scores.get_many(model, need.select("q", "d")), on=["q", "d"], how="anti", maintain_order="left"
        )
    return scored, need


def score_unstored(
    rows: pl.DataFrame,
    scorer: PairScorer,
    block: int,
    out: Path,
    lock: AbstractContextManager = nullcontext(),
    on_progress: Callable[[int, int], None] | None = None,
) -> int:
    """Score every pair of `rows` (pos, q, d, text, doc_id) block by block and write (q, d, score) to `out`: the path
    of a scorer that needs no document text and bypasses the score store (`in_store = False`: BM25, whose pairs cost
    less to score than to store). Written whole at the end (a retried chunk scores again: cheap by definition)."""
    texts, doc_ids = rows["text"].to_list(), rows["doc_id"].to_list()
    blocks = rows["pos"].to_numpy() // block
    cuts = [0, *(np.flatnonzero(np.diff(blocks)) + 1).tolist(), rows.height]
    values = np.zeros(rows.height)
    with lock:
        for a, z in zip(cuts[:-1], cuts[1:]):
            values[a:z] = scorer.score([Pair(t, d, "") for t, d in zip(texts[a:z], doc_ids[a:z])])
            if on_progress:
                on_progress(z, rows.height)
    scores = rows.select("q", "d").with_columns(pl.Series("score", values, dtype=pl.Float64))
    write_atomic(out, scores.write_parquet)
    return rows.height
