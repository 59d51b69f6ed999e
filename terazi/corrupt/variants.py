"""The query variants of one dataset under one condition: every judged query, every sample, as a parquet table
(condition, sample, query_id, text, original, changed, seed) that the first stage, the rerankers and the metrics read
(terazi.data.loading.read_variants).
"""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl

from terazi.base.shutdown import check
from terazi.corrupt.conditions import changed, condition_params, corrupt, edit_rate, samples_for
from terazi.data.loading import open_dataset
from terazi.schemas import CorruptionSpec, DatasetManifest, VariantSet
from terazi.schemas.layout import RunLayout
from terazi.schemas.tables import CLEAN
from terazi.store import derived

log = logging.getLogger("terazi.corrupt")


def corrupt_queries(
    dataset: DatasetManifest,
    condition: str,
    spec: CorruptionSpec,
    seed: int,
    out_dir: str,
    cache_dir: str | None = None,
) -> VariantSet:
    """Every variant of every judged query; each part of a composed condition gets its settings from `spec`. Linked
    from the cache's stored outputs when the same dataset content, condition, settings, seed and corruption code made
    them before (terazi.store.derived): a warm run corrupts nothing."""
    k = samples_for(condition, spec.samples, spec)
    path = RunLayout(out_dir).variants(dataset.name, condition)

    def make(root: Path) -> dict:
        ds = open_dataset(dataset)
        rows = []
        for qid in ds.judged_query_ids:
            check()
            original = ds.queries[qid].text
            for s in range(k):
                text = corrupt(original, condition, seed=seed, query_id=qid, sample=s, spec=spec)
                rows.append((condition, s, qid, text, original, changed(original, text)))
        df = pl.DataFrame(rows, schema=["condition", "sample", "query_id", "text", "original", "changed"], orient="row")
        df = df.with_columns(pl.col("sample").cast(pl.Int64), pl.lit(seed).alias("seed"))
        target = RunLayout(root).variants(dataset.name, condition)
        target.parent.mkdir(parents=True, exist_ok=True)
        df.write_parquet(target)
        n_changed = df.group_by("query_id").agg(pl.col("changed").any())["changed"].sum()
        return {
            "queries": len(ds.judged_query_ids),
            "changed": int(n_changed),
            "rate": edit_rate(list(zip(df["original"], df["text"]))),
        }

    key = derived.key(
        "variants", dataset.name, dataset.fingerprint, condition, spec.model_dump(mode="json"), seed, k, maker=__name__
    )
    meta = derived.reuse(cache_dir, key, out_dir, make)
    vs = VariantSet(
        dataset=dataset.name,
        condition=condition,
        params=condition_params(condition, spec),
        seed=seed,
        samples=k,
        path=str(path),
        n_queries=meta["queries"],
        n_changed=meta["changed"],
        edit_rate=meta["rate"],
    )
    if condition != CLEAN:
        log.info(
            "%s / %s: %d of %d queries changed (%.0f%%), %.3f edits per letter",
            dataset.name,
            condition,
            vs.n_changed,
            vs.n_queries,
            100 * vs.share_changed,
            vs.edit_rate,
        )
    return vs
