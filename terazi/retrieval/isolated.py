"""The isolated setting: each reranker reorders the *clean* query's frozen candidates using the *corrupted*
query text, so its retention measures the reranker alone, apart from the change in its candidate pool.

It is expressed as extra pseudo-conditions (`upper~isolated`, …) of the ordinary candidate and variant
tables, so the reranking and scoring stages run it like any other condition and the score cache shares
every (text, document) pair that the end-to-end setting already scored.
"""

from __future__ import annotations

import polars as pl

SUFFIX = "~isolated"
VARIANT = ["condition", "sample", "query_id"]


def isolated(condition: str) -> str:
    """The pseudo-condition of `condition`'s isolated setting."""
    return condition + SUFFIX


def isolated_variants(variants: pl.DataFrame) -> pl.DataFrame:
    """Every corrupted variant again, under its isolated pseudo-condition (same text, same `changed` flag)."""
    return variants.filter(pl.col("condition") != "clean").with_columns(pl.col("condition") + SUFFIX)


def isolated_candidates(candidates: pl.DataFrame, variants: pl.DataFrame) -> pl.DataFrame:
    """For every isolated variant, the clean query's candidates (clean sample 0) in their first-stage order."""
    clean = candidates.filter((pl.col("condition") == "clean") & (pl.col("sample") == 0)).drop("condition", "sample")
    keys = isolated_variants(variants).select(VARIANT)
    return keys.join(clean, on="query_id", how="inner").select(candidates.columns)


def with_isolated(candidates: pl.DataFrame, variants: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The candidate and variant tables extended with the isolated pseudo-conditions."""
    iso = isolated_candidates(candidates, variants)
    return pl.concat([candidates, iso.cast(candidates.schema)]), pl.concat([variants, isolated_variants(variants)])
