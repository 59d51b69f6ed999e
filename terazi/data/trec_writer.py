"""TREC files written with polars: ids that hold whitespace percent-encoded, scores as text that reads back as the
same float. Apart from the readers (terazi.data.trec) because what reads a dataset must not carry the writer's code:
the key of every stored run file holds this module (terazi.store.codehash), and a fix here must make new run files
without making anything that only reads TREC files again.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl


def trec_id(col: str) -> pl.Expr:
    """TREC files are split on whitespace, so whitespace inside an id is written percent-encoded (%20, %09);
    ids without whitespace are written as they are."""
    c = pl.col(col)
    encoded = (
        c.str.replace_all("%", "%25", literal=True)
        .str.replace_all(" ", "%20", literal=True)
        .str.replace_all("\t", "%09", literal=True)
    )
    return pl.when(c.str.contains(r"\s")).then(encoded).otherwise(c).alias(col)


def write_run(df: pl.DataFrame, path: str | Path, tag: str, append: bool = False) -> Path:
    """(query_id, doc_id, rank, score) → a TREC run file, the scores as the shortest text that reads back as the same
    64-bit float (polars' writer), so a tool that ranks by score (trec_eval, ranx, MTEB) sees the very scores; with
    `append`, added at the file's end (a run written a block of queries at a time)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab" if append else "wb") as out:
        df.sort("query_id", "rank").select(
            trec_id("query_id"),
            pl.lit("Q0").alias("q0"),
            trec_id("doc_id"),
            "rank",
            pl.col("score").cast(pl.Float64),
            pl.lit(tag).alias("tag"),
        ).write_csv(out, separator=" ", include_header=False, quote_style="never")
    return path
