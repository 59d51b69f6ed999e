"""The tie rule: how every list terazi ranks from scores orders documents that score the same.

One rule for every ranking (each first stage, every reranker's head, fusion, the depth sweep, the ceiling) and for
every run it reads. `trec`, the default, is the field's: trec_eval, pytrec_eval, BEIR and MTEB rank by score, then by
document id descending (compared as strings, bytewise), so a figure here is the figure they give on the same scores;
on a set with duplicated passages the rule alone moves nDCG@10 by more than many differences a leaderboard calls
significant. `first-stage` keeps a reranked head's tied documents in their first-stage order (the first stage itself
has no earlier order to keep and ranks by `trec`). The metric contract prints the rule with every table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from terazi.base.errors import MetricError

TIES = {
    "trec": "score descending, then document id descending (trec_eval, pytrec_eval, BEIR, MTEB)",
    "first-stage": "score descending, a reranked head's ties kept in first-stage order (not trec_eval's rule: a run "
    "file's tied scores are read by trec_eval, ranx or MTEB in document id order instead)",
}


def tie_order(ties: str = "trec") -> tuple[list[pl.Expr], list[bool]]:
    """What a ranked list sorts by after its key columns, and the directions (sort with `nulls_last=True`): score
    descending (a NaN score last, as the metrics rank it), then document id descending (`trec`) or first-stage rank
    ascending (`first-stage`)."""
    if ties not in TIES:
        raise MetricError(f"unknown tie rule {ties!r}; known: {', '.join(TIES)}")
    score = pl.col("score").fill_nan(None)
    return ([score, pl.col("doc_id")], [True, True]) if ties == "trec" else ([score, pl.col("rank")], [True, False])


def id_order(ids: pl.Series) -> np.ndarray:
    """Each document's place in document id descending order (0: the largest id), by row: a list sorted by score
    descending, then by this ascending, is ranked by the `trec` rule (ids compared as strings, bytewise)."""
    return ids.cast(pl.Utf8).rank("ordinal", descending=True).cast(pl.Int64).to_numpy() - 1


def tied_conditions(path: str | Path) -> list[str]:
    """The conditions (query sets) under which every query's candidates all have one score: the first stage told
    nothing apart (empty texts, a constant scorer), so their order is only the document ids' tie order. Streamed:
    every run reads the whole candidate set for it, warm runs too."""
    cand = pl.scan_parquet(path).select("condition", "query_id", "score")
    per_query = cand.group_by("condition", "query_id").agg(tied=pl.col("score").max() == pl.col("score").min())
    flat = per_query.group_by("condition").agg(pl.col("tied").all()).collect(engine="streaming")
    return sorted(flat.filter(pl.col("tied"))["condition"].to_list())
