"""The isolated setting: each reranker reorders the *clean* query's frozen candidates using the *corrupted*
query text, so its retention measures the reranker alone, apart from the change in its candidate pool.

It is expressed as extra pseudo-conditions (`upper~isolated`, …) of the ordinary candidate and variant
tables, so the reranking and scoring stages run it like any other condition and the score cache shares
every (text, document) pair that the end-to-end setting already scored.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from terazi.data.blocks import BLOCK_ROWS, condition_rows, write_blocks
from terazi.schemas import CandidateSet, DatasetManifest, VariantSet
from terazi.schemas.layout import RunLayout
from terazi.schemas.tables import CLEAN, RANKING, VARIANT, isolated
from terazi.store import derived

log = logging.getLogger("terazi.isolate")


def isolated_variants(variants: pl.DataFrame) -> pl.DataFrame:
    """Every corrupted variant again, under its isolated pseudo-condition (same text, same `changed` flag)."""
    return variants.filter(pl.col("condition") != CLEAN).with_columns(pl.col("condition") + isolated(""))


def isolated_candidates(candidates: pl.DataFrame, variants: pl.DataFrame) -> pl.DataFrame:
    """For every isolated variant, the clean query's candidates (clean sample 0) in their first-stage order; the
    pseudo-conditions in the order of `variants`, each one's variants in (sample, query_id) order."""
    clean = candidates.filter((pl.col("condition") == CLEAN) & (pl.col("sample") == 0)).drop("condition", "sample")
    keys = isolated_variants(variants).select(VARIANT)
    return (
        pl.concat(
            [
                part.sort("sample", "query_id").join(clean, on="query_id", how="inner", maintain_order="left_right")
                for _, part in keys.group_by("condition", maintain_order=True)
            ],
            how="vertical",
        ).select(candidates.columns)
        if keys.height
        else candidates.clear()
    )


def with_isolated(candidates: pl.DataFrame, variants: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The candidate and variant tables extended with the isolated pseudo-conditions (the candidates followed by
    theirs)."""
    iso = isolated_candidates(candidates, variants)
    return pl.concat([candidates, iso.cast(candidates.schema)]), pl.concat([variants, isolated_variants(variants)])


def isolated_blocks(candidates: Path, variants: pl.DataFrame) -> Iterator[pl.DataFrame]:
    """`with_isolated`'s candidates a block at a time: the candidate file's own rows, then each pseudo-condition's
    (the clean candidates, read again for each, of the queries it has). With candidates in the layout of
    `terazi.data.blocks`, the pool has it too."""
    schema = pl.read_parquet_schema(candidates)
    yield from (pl.from_arrow(b) for b in pq.ParquetFile(candidates).iter_batches(batch_size=BLOCK_ROWS))
    keys = isolated_variants(variants).select(VARIANT)
    for (cond,), part in keys.group_by("condition", maintain_order=True):
        for smp in part["sample"].unique().sort().to_list():
            wanted = part.filter(pl.col("sample") == smp).select("query_id")
            for rows in condition_rows(candidates, RANKING, CLEAN):
                yield (
                    rows.filter(pl.col("sample") == 0)
                    .join(wanted, on="query_id", how="semi", maintain_order="left")
                    .with_columns(pl.lit(cond).alias("condition"), pl.lit(smp).alias("sample"))
                    .cast(schema)
                )


def add_isolated(
    dataset: DatasetManifest,
    candidates: CandidateSet,
    variant_sets: list[VariantSet],
    robustness: str,
    out_dir: str,
    cache_dir: str | None = None,
) -> tuple[CandidateSet, list[VariantSet]]:
    """(candidates, variant sets) for the rerank and score stages: unchanged for `end-to-end`, extended for `both`;
    linked from the stored outputs when the same candidates and variants were extended before (terazi.store.derived)."""
    if robustness == "end-to-end":
        return candidates, variant_sets
    layout = RunLayout(out_dir)
    corrupted = [v for v in variant_sets if v.condition != CLEAN]

    def write(root: Path) -> dict:
        variants = pl.concat([pl.read_parquet(v.path) for v in variant_sets])
        at = RunLayout(root)
        path = at.isolated_candidates(dataset.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        source = Path(candidates.path)
        write_blocks(
            path, isolated_blocks(source, variants), lambda: with_isolated(pl.read_parquet(source), variants)[0]
        )
        for vs in corrupted:
            isolated_variants(variants.filter(pl.col("condition") == vs.condition)).write_parquet(
                at.isolated_variants(dataset.name, vs.condition)
            )
        return {}

    key = derived.key(
        "isolated", dataset.name, Path(candidates.path), [Path(v.path) for v in variant_sets], maker=__name__
    )
    derived.reuse(cache_dir, key, out_dir, write)
    extra_sets = [
        vs.model_copy(
            update={
                "condition": isolated(vs.condition),
                "path": str(layout.isolated_variants(dataset.name, vs.condition)),
            }
        )
        for vs in corrupted
    ]
    log.info(
        "%s: isolated setting for %d condition(s): clean candidates reranked with the corrupted text",
        dataset.name,
        len(extra_sets),
    )
    return candidates.model_copy(update={"path": str(layout.isolated_candidates(dataset.name))}), [
        *variant_sets,
        *extra_sets,
    ]
