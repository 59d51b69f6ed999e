"""Rankings from scores: a reranked list holds the `rerank_depth` rescored candidates (ties broken by the tie rule,
`terazi.base.ties.tie_order`: document id descending, as trec_eval), then the remaining first-stage
candidates in their first-stage order, so deeper measures (R@100) still see the whole
candidate list. Tables have the columns `terazi.schemas.tables.RANKING`; candidate and ranking files are read and
written a block of whole variants at a time (`terazi.data.blocks`), never whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from terazi.base.ties import tie_order
from terazi.data.blocks import BLOCK_ROWS, NEW_VARIANT, aligned_blocks, condition_offsets, sorted_blocks, write_blocks
from terazi.rerank.pair_keys import rescored
from terazi.schemas.tables import CLEAN, RANKING, VARIANT


def rank_part(candidates: pl.DataFrame, head_scores: np.ndarray, rerank_depth: int, ties: str = "trec") -> pl.DataFrame:
    """The reranked lists of the variants in `candidates` (all their candidates), given the new scores of the
    candidates ranked ≤ `rerank_depth`, in table order."""
    head = candidates.filter(pl.col("rank") <= rerank_depth).select(*VARIANT, "rank", "doc_id")
    return _reorder(
        head.with_columns(pl.Series("score", head_scores, dtype=pl.Float64)), candidates, rerank_depth, ties
    )


def pair_scores(pairs: Path, found: pl.DataFrame) -> np.ndarray:
    """The score of every pair in the file `pairs` (pid, candidate order) from the scores found (pid, score, sorted by
    pid). The pairs are read and looked up a block at a time: what is held whole is `found` and the scores returned."""
    ids, values = found["pid"].to_numpy(), found["score"].to_numpy()
    file = pq.ParquetFile(pairs)
    out, at, missing = np.empty(file.metadata.num_rows, dtype=np.float64), 0, 0
    for batch in file.iter_batches(batch_size=BLOCK_ROWS):
        want = batch.column(0).to_numpy()
        where = np.minimum(np.searchsorted(ids, want), max(len(ids) - 1, 0))
        missing += int((ids[where] != want).sum()) if len(ids) else len(want)
        out[at : at + len(want)] = values[where] if len(ids) else np.nan
        at += len(want)
    if missing:
        raise RuntimeError(f"{missing} pairs have no score after every chunk finished")
    return out


def _rerank_sorted(part: pl.DataFrame, head_scores: np.ndarray, rerank_depth: int, ties: str = "trec") -> pl.DataFrame:
    """`_reorder` for whole variants sorted by (condition, sample, query_id, rank). Ranks increase within a variant,
    so its rescored head is its first rows and the tail stays where it is: the rows keep their places and the head's
    documents and scores are permuted within each variant (sorted by score and the tie rule, as `_reorder` sorts
    them), its ranks renumbered 1..n: no sort of the whole batch."""
    n = part.height
    starts = part.select(pl.arg_where(NEW_VARIANT)).to_series().to_numpy()
    vid = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
    rank = part["rank"].to_numpy().astype(np.int64)
    head = np.flatnonzero(rank <= rerank_depth)
    score = part["score"].cast(pl.Float64).to_numpy().copy()
    score[head] = head_scores
    by, descending = tie_order(ties)
    order = (
        pl.DataFrame(
            {"vid": vid[head], "score": score[head], "rank": rank[head], "doc_id": part["doc_id"].gather(head)}
        )
        .select(pl.arg_sort_by([pl.col("vid"), *by], descending=[False, *descending], nulls_last=True))
        .to_series()
        .to_numpy()
    )
    take = np.arange(n)
    take[head] = head[order]
    rank[head] = head - starts[vid[head]] + 1
    return part.select(*VARIANT).with_columns(
        pl.Series("rank", rank), part["doc_id"].gather(take), pl.Series("score", score[take])
    )


def write_ranking(path: Path, candidates: Path, head_scores: np.ndarray, rerank_depth: int, ties: str = "trec") -> None:
    """The rankings of every variant, written a block of whole variants at a time (the candidates are read a
    condition at a time, never whole). `head_scores` are the new scores of the candidates ranked ≤ `rerank_depth`,
    in file order. Rows come out in (condition, sample, query_id, rank) order, exactly as `_reorder` orders them; a
    candidate file without the layout of `terazi.data.blocks` is ranked in memory instead."""

    def ranked() -> Iterator[pl.DataFrame]:
        used = condition_offsets(candidates, pl.col("rank") <= rerank_depth)  # each condition's first head score
        for part in sorted_blocks(candidates, RANKING):
            cond, n = part["condition"][0], part.select((pl.col("rank") <= rerank_depth).sum()).item()
            yield _rerank_sorted(part, head_scores[used[cond] : used[cond] + n], rerank_depth, ties)
            used[cond] += n

    write_blocks(path, ranked(), lambda: rank_part(pl.read_parquet(candidates), head_scores, rerank_depth, ties))


def write_sweep(path: Path, candidates: Path, scores: np.ndarray, rerank_depth: int, sweep_depth: int) -> np.ndarray:
    """A depth sweep's scores: `scores` are those of the candidates `rescored(rerank_depth, sweep_depth)`, in file
    order; the clean ones are written to `path` (condition, sample, query_id, rank, doc_id, score: the first stage's
    rank, the reranker's score) and the scores of the candidates ranked ≤ `rerank_depth` returned, in file order,
    for the ranking."""
    rows = (
        pl.scan_parquet(candidates)
        .filter(rescored(rerank_depth, sweep_depth))
        .select(*VARIANT, "rank", "doc_id")
        .collect()
        .with_columns(pl.Series("score", scores, dtype=pl.Float64))
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    rows.filter(pl.col("condition") == CLEAN).write_parquet(path)
    return scores[(rows["rank"] <= rerank_depth).to_numpy()]


def _reorder(top: pl.DataFrame, candidates: pl.DataFrame, rerank_depth: int, ties: str = "trec") -> pl.DataFrame:
    """New order of the rescored head (score, then the tie rule), then the untouched tail."""
    by, descending = tie_order(ties)
    head = top.sort([*VARIANT, *by], descending=[False, False, False, *descending], nulls_last=True).with_columns(
        pl.int_range(1, pl.len() + 1).over(VARIANT).cast(pl.Int64).alias("rank")
    )
    tail = candidates.filter(pl.col("rank") > rerank_depth)
    cols = [*VARIANT, "rank", "doc_id", "score"]
    return pl.concat([head.select(cols), tail.select(cols).with_columns(pl.col("rank").cast(pl.Int64))]).sort(
        [*VARIANT, "rank"]
    )


def write_fusion(path: Path, rankings: list[Path], rerank_depth: int, k: int = 60, ties: str = "trec") -> None:
    """`reciprocal_rank_fusion` of ranking files of the same candidates, a block of whole variants at a time (each
    block's variants whole in every file, in (condition, sample, query_id) order); files without the layout of
    `terazi.data.blocks` are fused in memory instead."""
    write_blocks(
        path,
        (reciprocal_rank_fusion(parts, rerank_depth, k, ties) for parts in aligned_blocks(rankings, RANKING)),
        lambda: reciprocal_rank_fusion([pl.read_parquet(r) for r in rankings], rerank_depth, k, ties),
    )


def reciprocal_rank_fusion(
    rankings: list[pl.DataFrame], rerank_depth: int, k: int = 60, ties: str = "trec"
) -> pl.DataFrame:
    """RRF over the head of several rankings of the same candidates: Σ 1 / (k + rank), ties by the tie rule. Each
    document's terms are added best rank first, so documents with the same ranks in any order of the rankings get
    the very same float, and tie (a sum's last bit depends on the order of its terms)."""
    base = rankings[0]
    fused = pl.concat([r.filter(pl.col("rank") <= rerank_depth).select(*VARIANT, "doc_id", "rank") for r in rankings])
    fused = fused.group_by([*VARIANT, "doc_id"]).agg((1.0 / (k + pl.col("rank").sort())).sum().alias("score"))
    first = base.filter(pl.col("rank") <= rerank_depth).select(*VARIANT, "doc_id", "rank")
    top = first.join(fused, on=[*VARIANT, "doc_id"], how="left")
    return _reorder(top, base, rerank_depth, ties)
