"""Stage 3b: the isolated robustness setting (config `robustness: both`) as pseudo-conditions.

Writes the extended candidate and variant tables into the run folder and returns manifests that point at
them; the reranking and scoring stages then run the isolated setting like any other condition. The
frozen candidate set (and its fingerprint) is untouched.
"""

from __future__ import annotations

import logging

import polars as pl
from prefect import task

from terazi.schemas import CandidateSet, DatasetManifest, VariantSet
from terazi.tasks import transient
from terazi.paths import inside
from terazi.retrieval.isolated import isolated, with_isolated

log = logging.getLogger("terazi.isolate")


def add_isolated(dataset: DatasetManifest, candidates: CandidateSet, variant_sets: list[VariantSet], robustness: str,
                 out_dir: str) -> tuple[CandidateSet, list[VariantSet]]:
    """(candidates, variant sets) for the rerank and score stages: unchanged for `end-to-end`, extended for `both`."""
    if robustness == "end-to-end":
        return candidates, variant_sets
    variants = pl.concat([pl.read_parquet(v.path) for v in variant_sets])
    cand, variants = with_isolated(pl.read_parquet(candidates.path), variants)
    path = inside(out_dir, "isolated", dataset.name, "candidates.parquet")
    path.parent.mkdir(parents=True, exist_ok=True)
    cand.write_parquet(path)
    extra_sets = []
    for vs in (v for v in variant_sets if v.condition != "clean"):
        vpath = inside(out_dir, "isolated", dataset.name, f"{vs.condition}.parquet")
        variants.filter(pl.col("condition") == isolated(vs.condition)).write_parquet(vpath)
        extra_sets.append(vs.model_copy(update={"condition": isolated(vs.condition), "path": str(vpath)}))
    log.info("%s: isolated setting for %d condition(s): clean candidates reranked with the corrupted text",
             dataset.name, len(extra_sets))
    return candidates.model_copy(update={"path": str(path)}), [*variant_sets, *extra_sets]


isolate_task = task(add_isolated, name="isolated-setting", retries=1, task_run_name="isolated {dataset.name}",
                    retry_condition_fn=transient)
