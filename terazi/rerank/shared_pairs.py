"""The pairs several first stages share: a pair (query text, document) two first stages both hand a reranker is
scored once (the score store is keyed by the pair), so the run's manifest says how many each first stage needs,
how many they share and how many the run scored in all, per reranker and dataset."""

from __future__ import annotations

import polars as pl

from terazi.data.loading import dataset_corpus, read_variants
from terazi.rerank.pair_keys import rescored, variant_keys
from terazi.schemas import CandidateSet, DatasetManifest, EvalConfig, SharedPairs, VariantSet
from terazi.schemas.tables import VARIANT


def stage_pairs(
    corpus_keys: pl.DataFrame,
    pool: CandidateSet,
    variant_sets: list[VariantSet],
    rerank_depth: int,
    sweep_depth: int | None,
) -> pl.DataFrame:
    """The store's keys (q: the query text's, d: the document's) of every pair a model row rescores on this first
    stage's candidates (`keys.rescored`), each once."""
    var = variant_keys(read_variants(variant_sets)).select(*VARIANT, "q")
    return (
        pl.scan_parquet(pool.path)
        .filter(rescored(rerank_depth, sweep_depth))
        .select(*VARIANT, "doc_id")
        .join(var.lazy(), on=VARIANT)
        .join(corpus_keys.lazy().select("doc_id", pl.col("key").alias("d")), on="doc_id")
        .select("q", "d")
        .unique()
        .collect()
    )


def shared_pairs(
    dataset: DatasetManifest,
    pools: dict[str, tuple[CandidateSet, list[VariantSet]]],
    config: EvalConfig,
    cache_dir: str,
) -> list[SharedPairs]:
    """Per model row of one dataset: the pairs of each first stage (`pools`: name → candidates and their query
    variants), those shared by two or more, and the union (what the store holds for the row once all ran). Every
    model row rescores the same pairs, so the figures repeat per row; fusions score nothing."""
    keys = dataset_corpus(dataset, cache_dir).keys()
    each = {n: stage_pairs(keys, c, v, config.rerank_depth, config.sweep_depth) for n, (c, v) in pools.items()}
    counts = pl.concat(list(each.values())).group_by("q", "d").len()
    shared, union = counts.filter(pl.col("len") > 1).height, counts.height
    return [
        SharedPairs(
            dataset=dataset.name,
            system=spec.name,
            pairs={n: f.height for n, f in each.items()},
            shared=shared,
            unique=union,
        )
        for spec in config.rerankers
        if spec.kind != "rrf"
    ]
