"""Stage 5b: the results folder as a runs folder: every system's rankings as TREC run files, with the judgments,
the changed queries and the dataset settings, so trec_eval, ranx, `terazi score` and `terazi analyze` read it."""

from __future__ import annotations

import logging

import polars as pl
import yaml
from prefect import task

from terazi.schemas import DatasetManifest, RerankResult, VariantSet
from terazi.tasks import transient
from terazi.tasks.corrupt import read_variants
from terazi.data.loading import open_dataset
from terazi.data import runfolder
from terazi.paths import inside

log = logging.getLogger("terazi.export")


def export_runs(datasets: list[DatasetManifest], variant_sets: list[VariantSet], rankings: list[RerankResult],
                out_dir: str) -> int:
    """Write runs/, qrels/, changed/ and datasets.yaml into the results folder; returns the number of run files.

    Only the configured conditions are exported: the isolated robustness setting (`<condition>~isolated`, the clean
    candidates reranked with the corrupted text) is terazi's own analysis, not a run anyone else produces.
    """
    n = 0
    for ds in datasets:
        vs = [v for v in variant_sets if v.dataset == ds.name and "~" not in v.condition]
        samples = {v.condition: v.samples for v in vs}
        for r in (r for r in rankings if r.dataset == ds.name):
            ranking = pl.read_parquet(r.path).filter(~pl.col("condition").str.contains("~", literal=True))
            n += len(runfolder.write_rankings(ranking, out_dir, ds.name, r.system, samples))
        runfolder.write_qrels(open_dataset(ds).qrels, inside(out_dir, "qrels", f"{ds.name}.tsv"))
        changed = read_variants(vs).filter(pl.col("condition") != runfolder.CLEAN) \
            .group_by("condition", "query_id", maintain_order=True).agg(pl.col("changed").any())
        for v in vs:
            if v.condition != runfolder.CLEAN:
                ids = changed.filter((pl.col("condition") == v.condition) & pl.col("changed"))["query_id"].to_list()
                runfolder.write_changed(sorted(ids), inside(out_dir, "changed", ds.name, f"{v.condition}.txt"))
    settings = {d.name: {"in_ranking": d.in_ranking, "task_type": d.task_type,
                         **({"reason": d.reason} if d.reason else {})} for d in datasets}
    inside(out_dir, "datasets.yaml").write_text(yaml.safe_dump(settings, sort_keys=False, allow_unicode=True))
    log.info("wrote %d TREC run files under %s", n, inside(out_dir, "runs"))
    return n


export_task = task(export_runs, name="export-runs", retries=1, task_run_name="export-runs", retry_condition_fn=transient)
