"""Stage 2: the query variants of one dataset under one condition, written as parquet."""

from __future__ import annotations

import logging

import polars as pl
from prefect import task

from terazi.schemas import CorruptionSpec, DatasetManifest, VariantSet
from terazi.tasks import transient
from terazi.data.loading import open_dataset
from terazi.corrupt.conditions import changed, condition_params, corrupt, edit_rate, samples_for
from terazi.paths import inside

log = logging.getLogger("terazi.corrupt")


def corrupt_queries(dataset: DatasetManifest, condition: str, spec: CorruptionSpec, seed: int, out_dir: str) -> VariantSet:
    """Every variant of every judged query; each part of a composed condition gets its settings from `spec`."""
    ds = open_dataset(dataset)
    k = samples_for(condition, spec.samples, spec)
    rows = []
    for qid in ds.judged_query_ids:
        original = ds.queries[qid].text
        for s in range(k):
            text = corrupt(original, condition, seed=seed, query_id=qid, sample=s, spec=spec)
            rows.append((condition, s, qid, text, original, changed(original, text)))
    df = pl.DataFrame(rows, schema=["condition", "sample", "query_id", "text", "original", "changed"], orient="row")
    df = df.with_columns(pl.col("sample").cast(pl.Int64), pl.lit(seed).alias("seed"))
    path = inside(out_dir, "variants", dataset.name, f"{condition}.parquet")
    path.parent.mkdir(parents=True, exist_ok=True)
    df.write_parquet(path)
    n_changed = df.group_by("query_id").agg(pl.col("changed").any())["changed"].sum()
    rate = edit_rate(list(zip(df["original"], df["text"])))
    vs = VariantSet(dataset=dataset.name, condition=condition, params=condition_params(condition, spec), seed=seed,
                    samples=k, path=str(path), n_queries=len(ds.judged_query_ids), n_changed=int(n_changed),
                    edit_rate=rate)
    if condition != "clean":
        log.info("%s / %s: %d of %d queries changed (%.0f%%), %.3f edits per letter", dataset.name, condition,
                 vs.n_changed, vs.n_queries, 100 * vs.share_changed, rate)
    return vs


corrupt_queries_task = task(corrupt_queries, name="corrupt-queries", retries=1,
                            task_run_name="corrupt {dataset.name} {condition}", retry_condition_fn=transient)


def read_variants(sets: list[VariantSet]) -> pl.DataFrame:
    return pl.concat([pl.read_parquet(v.path) for v in sets])
