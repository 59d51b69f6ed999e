"""Judgments and runs as frames, checked before anything is ranked: grades integers ≥ 0, scores numbers, and the
contract's NaN-score and repeated-rank policies applied. A bad row raises a `MetricError` that names it.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import polars as pl

from terazi.base.errors import MetricError
from terazi.metrics.contracts import Policies


def _is_int(x: object) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def qrels_frame(qrels: Mapping[str, Mapping[str, int]] | pl.DataFrame) -> pl.DataFrame:
    """Judgments as (query_id, doc_id, grade), validated: integer grades ≥ 0 (duplicates are checked in `evaluate`)."""
    if isinstance(qrels, pl.DataFrame):
        df = qrels.select(pl.col("query_id").cast(pl.Utf8), pl.col("doc_id").cast(pl.Utf8), "grade")
    else:
        rows = [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
        bad = [(q, d, g) for q, d, g in rows if not _is_int(g)]
        if bad:
            q, d, g = bad[0]
            what = "missing" if g is None else f"not an integer ({g!r})"
            raise MetricError(f"grade of query {q!r}, document {d!r} is {what}")
        df = pl.DataFrame(
            {"query_id": [r[0] for r in rows], "doc_id": [r[1] for r in rows], "grade": [int(r[2]) for r in rows]},
            schema={"query_id": pl.Utf8, "doc_id": pl.Utf8, "grade": pl.Int64},
        )
    if df["grade"].null_count():
        row = df.filter(pl.col("grade").is_null()).row(0)
        raise MetricError(f"grade of query {row[0]!r}, document {row[1]!r} is missing")
    if df["grade"].dtype.is_float():
        bad = df.filter(pl.col("grade").is_nan() | (pl.col("grade") != pl.col("grade").round(0)))
        if bad.height:
            q, d, g = bad.row(0)
            raise MetricError(f"grade of query {q!r}, document {d!r} is not an integer ({g!r})")
    elif not df["grade"].dtype.is_integer():
        raise MetricError(f"grades must be integers, got {df['grade'].dtype}")
    neg = df.filter(pl.col("grade") < 0)
    if neg.height:
        q, d, g = neg.row(0)
        raise MetricError(f"negative grade {g} for query {q!r}, document {d!r}")
    return df.with_columns(pl.col("grade").cast(pl.Int64))


def run_frame(run: Mapping[str, Mapping[str, float]] | pl.DataFrame) -> pl.DataFrame:
    """A run as (query_id, doc_id, score[, rank]); dict input is {qid: {doc_id: score}}. Missing scores are errors."""
    if isinstance(run, pl.DataFrame):
        lacking = [c for c in ("query_id", "doc_id", "score") if c not in run.columns]
        if lacking:
            raise MetricError(f"the run lacks column(s) {lacking}")
        if not run["score"].dtype.is_numeric():
            raise MetricError(f"run scores must be numbers, got {run['score'].dtype}")
        df = run.with_columns(
            pl.col("query_id").cast(pl.Utf8), pl.col("doc_id").cast(pl.Utf8), pl.col("score").cast(pl.Float64)
        )
    else:
        rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
        for q, d, s in rows:
            if not isinstance(s, numbers.Real) or isinstance(s, bool):
                what = "missing" if s is None else f"not a number ({s!r})"
                raise MetricError(f"score of query {q!r}, document {d!r} is {what}")
        df = pl.DataFrame(
            {"query_id": [r[0] for r in rows], "doc_id": [r[1] for r in rows], "score": [float(r[2]) for r in rows]},
            schema={"query_id": pl.Utf8, "doc_id": pl.Utf8, "score": pl.Float64},
        )
    if df["score"].null_count():
        q, d = df.filter(pl.col("score").is_null()).select("query_id", "doc_id").row(0)
        raise MetricError(f"score of query {q!r}, document {d!r} is missing")
    return df


def check_run(r: pl.DataFrame, policies: Policies) -> int:
    """Apply the NaN-score and repeated-rank policies; returns the number of NaN scores."""
    nan = int(r["score"].is_nan().sum())
    if nan and policies.nan_score == "error":
        q, d = r.filter(pl.col("score").is_nan()).select("query_id", "doc_id").row(0)
        raise MetricError(
            f"score of query {q!r}, document {d!r} is NaN (nan_score=error under contract {policies.label})"
        )
    if policies.repeated_rank == "error" and "rank" in r.columns:
        if r["rank"].null_count():
            q, d = r.filter(pl.col("rank").is_null()).select("query_id", "doc_id").row(0)
            raise MetricError(
                f"rank of query {q!r}, document {d!r} is missing (repeated_rank=error under contract {policies.label})"
            )
        if r.select(pl.struct("query_id", "rank").n_unique()).item() < r.height:
            dup = r.filter(pl.struct("query_id", "rank").is_duplicated()).sort("query_id", "rank", "doc_id")
            q, k = dup.select("query_id", "rank").row(0)
            docs = dup.filter((pl.col("query_id") == q) & (pl.col("rank") == k))["doc_id"].to_list()
            raise MetricError(
                f"rank {k} appears more than once in the ranking of query {q!r} "
                f"(documents {', '.join(map(repr, docs))}; "
                f"repeated_rank=error under contract {policies.label})"
            )
    return nan
