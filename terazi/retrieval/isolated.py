"""The isolated setting: each reranker reorders the *clean* query's frozen candidates using the *corrupted*
query text, so its retention measures the reranker alone, apart from the change in its candidate pool.

It is expressed as extra pseudo-conditions (`upper~isolated`, …) of the ordinary candidate and variant
tables, so the reranking and scoring stages run it like any other condition and the score cache shares
every (text, document) pair that the end-to-end setting already scored.
"""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl

from terazi import memo
from terazi.schemas import CandidateSet, DatasetManifest, VariantSet
from terazi.schemas.layout import RunLayout
from terazi.schemas.tables import CLEAN, VARIANT, isolated

log = logging.getLogger("terazi.isolate")


def isolated_variants(variants: pl.DataFrame) -> pl.DataFrame:
    """Every corrupted variant again, under its isolated pseudo-condition (same text, same `changed` flag)."""
    return variants.filter(pl.col("condition") != CLEAN).with_columns(pl.col("condition") + isolated(""))


def isolated_candidates(candidates: pl.DataFrame, variants: pl.DataFrame) -> pl.DataFrame:
    """For every isolated variant, the clean query's candidates (clean sample 0) in their first-stage order."""
    clean = candidates.filter((pl.col("condition") == CLEAN) & (pl.col("sample") == 0)).drop("condition", "sample")
    keys = isolated_variants(variants).select(VARIANT)
    return keys.join(clean, on="query_id", how="inner").select(candidates.columns)


def with_isolated(candidates: pl.DataFrame, variants: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The candidate and variant tables extended with the isolated pseudo-conditions."""
    iso = isolated_candidates(candidates, variants)
    return pl.concat([candidates, iso.cast(candidates.schema)]), pl.concat([variants, isolated_variants(variants)])


def add_isolated(dataset: DatasetManifest, candidates: CandidateSet, variant_sets: list[VariantSet], robustness: str,
                 out_dir: str, cache_dir: str | None = None) -> tuple[CandidateSet, list[VariantSet]]:
    """(candidates, variant sets) for the rerank and score stages: unchanged for `end-to-end`, extended for `both`;
    linked from the stored outputs when the same candidates and variants were extended before (terazi.memo)."""
    if robustness == "end-to-end":
        return candidates, variant_sets
    layout = RunLayout(out_dir)
    corrupted = [v for v in variant_sets if v.condition != CLEAN]

    def write(root: Path) -> dict:
        variants = pl.concat([pl.read_parquet(v.path) for v in variant_sets])
        cand, variants = with_isolated(pl.read_parquet(candidates.path), variants)
        at = RunLayout(root)
        path = at.isolated_candidates(dataset.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        cand.write_parquet(path)
        for vs in corrupted:
            variants.filter(pl.col("condition") == isolated(vs.condition)).write_parquet(
                at.isolated_variants(dataset.name, vs.condition))
        return {}

    key = memo.key("isolated", dataset.name, Path(candidates.path), [Path(v.path) for v in variant_sets],
                   maker=__name__)
    memo.reuse(cache_dir, key, out_dir, write)
    extra_sets = [vs.model_copy(update={"condition": isolated(vs.condition),
                                        "path": str(layout.isolated_variants(dataset.name, vs.condition))})
                  for vs in corrupted]
    log.info("%s: isolated setting for %d condition(s): clean candidates reranked with the corrupted text",
             dataset.name, len(extra_sets))
    return candidates.model_copy(update={"path": str(layout.isolated_candidates(dataset.name))}), [*variant_sets,
                                                                                                   *extra_sets]
