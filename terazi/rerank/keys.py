"""The reranking stage: collect pairs over all conditions, skip what is stored, score the rest in chunks.

Rankings are tables with columns (condition, sample, query_id, rank, doc_id, score). A reranked
list holds the `rerank_depth` rescored candidates, then the remaining first-stage candidates in
their first-stage order, so deeper measures (R@100) still see the whole candidate list.

Pairs live in numeric columns, never as one Python object each. In the store a pair's key is (q, d), the
64-bit keys of its query text (hashed once per distinct text) and of its document (hashed once per
corpus, see `terazi.corpus`); within a run a pair is `pid` = text number × documents + document number,
one int64, so that deduplication and joins over millions of pairs stay cheap. The work list is the unique
pairs not in the store, sorted by length (less padding), numbered by `pos`; a scoring block is
`batch_size × 8` consecutive positions and a chunk (one task) a whole number of blocks, so every chunking
scores exactly the same blocks, and so gives the same scores.
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
from terazi.rerank.scorers import Corpus, Pair, PairScorer
from terazi.rerank.store import ModelKey, Scores

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


def model_key(scorer: PairScorer) -> ModelKey:
    return ModelKey(scorer.identity, scorer.max_length)


def block_size(scorer: PairScorer) -> int:
    """Pairs per scoring call, committed to the store as one piece."""
    return scorer.batch_size * BLOCK_BATCHES


def variant_keys(variants: pl.DataFrame) -> pl.DataFrame:
    """Each query variant with its text, the text's key q (hashed once per distinct text) and number qi."""
    texts = variants["text"].unique(maintain_order=True)
    qk = pl.DataFrame({"text": texts, "q": fingerprint.text_keys(texts.to_list()), "qi": np.arange(texts.len())},
                      schema={"text": pl.Utf8, "q": pl.Int64, "qi": pl.Int64})
    return variants.select(*VARIANT, "text").join(qk, on="text", how="left", maintain_order="left")


def document_keys(doc_keys: pl.DataFrame) -> pl.DataFrame:
    """doc_id, d (the document's key), chars and di (its number in this table), from a corpus's key table."""
    return doc_keys.select("doc_id", pl.col("key").alias("d"), "chars").with_row_index("di").with_columns(
        pl.col("di").cast(pl.Int64))


def pair_ids(candidates: pl.DataFrame | pl.LazyFrame, var: pl.DataFrame, docs: pl.DataFrame,
             rerank_depth: int) -> pl.Series:
    """`pid` of every (variant, candidate) to rescore, in candidate order: nothing else is held per pair."""
    return (candidates.lazy().filter(pl.col("rank") <= rerank_depth).select(*VARIANT, "doc_id")
            .join(var.lazy().select(*VARIANT, "qi"), on=VARIANT, how="left", maintain_order="left")
            .join(docs.lazy().select("doc_id", "di"), on="doc_id", how="left", maintain_order="left")
            .select((pl.col("qi") * docs.height + pl.col("di")).alias("pid")).collect().to_series())


def store_keys(pids: pl.Series, var: pl.DataFrame, docs: pl.DataFrame) -> pl.DataFrame:
    """The store's keys (q, d) of run-local pair ids."""
    n = docs.height
    q = var.unique("qi").sort("qi")["q"].to_numpy()
    ids = pids.to_numpy()
    return pl.DataFrame({"q": q[ids // n], "d": docs["d"].to_numpy()[ids % n]}, schema={"q": pl.Int64, "d": pl.Int64})


def run_ids(found: pl.DataFrame, var: pl.DataFrame, docs: pl.DataFrame) -> pl.DataFrame:
    """Scores found in the store (q, d, score) under run-local pair ids (pid, score)."""
    qmap = var.select("q", "qi").unique("q")
    return (found.join(qmap, on="q", how="inner").join(docs.select("d", "di"), on="d", how="inner")
            .select((pl.col("qi") * docs.height + pl.col("di")).alias("pid"), "score"))


def work_list(unique: pl.Series, known: pl.DataFrame, var: pl.DataFrame, docs: pl.DataFrame) -> pl.DataFrame:
    """The unique pairs (pids in first-occurrence order) without a score, with their keys and texts, sorted by
    length (stable: ties keep first-occurrence order), numbered `pos`."""
    todo = unique.to_frame("pid").join(known.select("pid"), on="pid", how="anti", maintain_order="left")
    n = docs.height
    texts = var.unique("qi").sort("qi")
    todo = todo.with_columns((pl.col("pid") // n).alias("qi"), (pl.col("pid") % n).alias("di"))
    todo = (todo.join(texts.select("qi", "q", "text"), on="qi", how="left", maintain_order="left")
            .join(docs.select("di", "d", "doc_id", "chars"), on="di", how="left", maintain_order="left"))
    todo = todo.with_columns((pl.col("text").str.len_chars() + pl.col("chars")).alias("length"))
    return todo.sort("length", maintain_order=True).select("pid", "q", "d", "text", "doc_id").with_row_index("pos")


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


def rank_part(candidates: pl.DataFrame, head_scores: np.ndarray, rerank_depth: int) -> pl.DataFrame:
    """The reranked lists of the variants in `candidates` (all their candidates), given the new scores of the
    candidates ranked ≤ `rerank_depth`, in table order."""
    head = candidates.filter(pl.col("rank") <= rerank_depth).select(*VARIANT, "rank", "doc_id")
    return _reorder(head.with_columns(pl.Series("score", head_scores, dtype=pl.Float64)), candidates, rerank_depth)


def pair_scores(pairs: pl.Series, found: pl.DataFrame) -> np.ndarray:
    """The score of every pair of `pairs` (pids, candidate order) from the scores found (pid, score)."""
    ids, values = found["pid"].to_numpy(), found["score"].to_numpy()
    order = np.argsort(ids, kind="stable")
    ids, values = ids[order], values[order]
    want = pairs.to_numpy()
    at = np.minimum(np.searchsorted(ids, want), max(len(ids) - 1, 0))
    missing = int((ids[at] != want).sum()) if len(ids) else len(want)
    if missing:
        raise RuntimeError(f"{missing} pairs have no score after every chunk finished")
    return values[at]


_NEW_VARIANT = pl.any_horizontal([pl.col(c) != pl.col(c).shift(1) for c in VARIANT]).fill_null(True)


def _rerank_sorted(part: pl.DataFrame, head_scores: np.ndarray, rerank_depth: int) -> pl.DataFrame:
    """`_reorder` for whole variants sorted by (condition, sample, query_id, rank), with integer variant ids in
    place of the string keys (same order, far cheaper to sort)."""
    frame = part.with_columns(_NEW_VARIANT.cum_sum().alias("vid"))
    head = frame.filter(pl.col("rank") <= rerank_depth).with_columns(pl.Series("score", head_scores, dtype=pl.Float64))
    head = head.sort(["vid", "score", "rank"], descending=[False, True, False]).with_columns(
        pl.int_range(1, pl.len() + 1).over("vid").cast(pl.Int64).alias("rank"))
    tail = frame.filter(pl.col("rank") > rerank_depth).with_columns(pl.col("rank").cast(pl.Int64))
    cols = [*VARIANT, "rank", "doc_id", "score"]
    return pl.concat([head.select("vid", *cols), tail.select("vid", *cols)]).sort("vid", "rank").select(cols)


class Unsorted(Exception):
    pass


def _check_sorted(part: pl.DataFrame, last: tuple | None) -> tuple:
    """Variants contiguous and in (condition, sample, query_id) order, ranks increasing; returns the last variant."""
    firsts = part.filter(_NEW_VARIANT).select(VARIANT)
    if last is not None:
        firsts = pl.concat([pl.DataFrame([last], schema=firsts.schema, orient="row"), firsts])
    ok = (firsts.equals(firsts.sort(VARIANT)) and not firsts.is_duplicated().any()
          and part.select((pl.col("rank").diff() > 0) | _NEW_VARIANT).to_series().all())
    if not ok:
        raise Unsorted
    return part.select(VARIANT).row(-1)


BATCH_ROWS = 131_072


def write_ranking(path: Path, candidates: Path, head_scores: np.ndarray, rerank_depth: int) -> None:
    """The rankings of every variant, written a batch of whole variants at a time (the candidates are read in one
    pass, never whole). `head_scores` are the new scores of the candidates ranked ≤ `rerank_depth`, in file order.
    Rows come out in (condition, sample, query_id, rank) order, exactly as `_reorder` orders them; a candidate
    file in another order is ranked in memory instead."""
    tmp = path.with_name(f".{path.name}.tmp")
    writer, carry, last, used = None, None, None, 0
    cols = [*VARIANT, "rank", "doc_id", "score"]

    def emit(part: pl.DataFrame) -> None:
        nonlocal writer, used, last
        last = _check_sorted(part, last)
        n = part.select((pl.col("rank") <= rerank_depth).sum()).item()
        table = _rerank_sorted(part, head_scores[used: used + n], rerank_depth).to_arrow()
        used += n
        writer = writer or pq.ParquetWriter(tmp, table.schema, compression="zstd")
        writer.write_table(table.cast(writer.schema))

    try:
        for batch in pq.ParquetFile(candidates).iter_batches(batch_size=BATCH_ROWS, columns=cols):
            frame = pl.from_arrow(batch) if carry is None else pl.concat([carry, pl.from_arrow(batch)])
            cut = frame.select(pl.arg_where(_NEW_VARIANT).max()).item()  # where the last variant starts
            carry = frame.slice(cut)  # it may go on in the next batch
            if cut:
                emit(frame.slice(0, cut))
        if carry is not None and carry.height:
            emit(carry)
        if writer is None:
            pl.DataFrame(schema={"condition": pl.Utf8, "sample": pl.Int64, "query_id": pl.Utf8, "rank": pl.Int64,
                                 "doc_id": pl.Utf8, "score": pl.Float64}).write_parquet(tmp)
    except Unsorted:
        if writer is not None:
            writer.close()
            writer = None
        log.info("%s is not sorted by variant and rank: ranking it in memory", candidates)
        rank_part(pl.read_parquet(candidates), head_scores, rerank_depth).write_parquet(tmp)
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
    var, docs = variant_keys(variants), document_keys(corpus.keys())
    pairs = pair_ids(candidates, var, docs, rerank_depth)
    unique = pairs.unique(maintain_order=True)
    known = run_ids(scores.get_many(model, store_keys(unique, var, docs)), var, docs)
    todo = work_list(unique, known, var, docs)
    stats = PairStats(needed=pairs.len(), unique=unique.len(), cached=known.height)
    block = block_size(scorer)
    others = []
    for a, z in chunk_bounds(todo.height, chunk_pairs or block, block):
        progress_ = (lambda done, _t, a=a: on_progress(a + done, todo.height)) if on_progress else None
        scored, left = score_rows(todo.slice(a, z - a), corpus, scorer, scores, block, on_progress=progress_, wait=False)
        stats.scored += scored
        others.append(left)
    if sum(f.height for f in others):  # pairs a concurrent run claimed: wait for them (or take them over)
        stats.scored += score_rows(pl.concat(others), corpus, scorer, scores, block)[0]
    found = pl.concat([known, run_ids(scores.get_many(model, todo.select("q", "d")), var, docs)])
    stats.cached = stats.unique - stats.scored
    stats.seconds = time.perf_counter() - start
    return rank_part(candidates, pair_scores(pairs, found), rerank_depth), stats


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
