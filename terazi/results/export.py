"""The results folder as a runs folder: every system's rankings as TREC run files, with the judgments,
the changed queries and the dataset settings, so trec_eval, ranx, `terazi score` and `terazi analyze` read it."""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl
import yaml

from terazi.base.shutdown import check
from terazi.data import runfolder
from terazi.data.blocks import blockwise
from terazi.data.loading import open_dataset, read_variants
from terazi.schemas import DatasetManifest, RerankResult, VariantSet
from terazi.schemas.layout import RunLayout
from terazi.schemas.tables import CLEAN, RANKING, SETTING_MARK, is_configured
from terazi.store import derived

log = logging.getLogger("terazi.export")
CONFIGURED = ~pl.col("condition").str.contains(SETTING_MARK, literal=True)  # not the isolated setting's


def export_runs(
    datasets: list[DatasetManifest],
    variant_sets: list[VariantSet],
    rankings: list[RerankResult],
    out_dir: str,
    cache_dir: str | None = None,
) -> int:
    """Write runs/, qrels/, changed/ and datasets.yaml into the results folder; returns the number of run files.

    Only the configured conditions are exported: the isolated robustness setting (`<condition>~isolated`, the clean
    candidates reranked with the corrupted text) is terazi's own analysis, not a run anyone else produces. A ranking
    exported before (same bytes, system, dataset and samples) is linked from the cache folder (terazi.store.derived),
    not written again.
    """
    n, layout = 0, RunLayout(out_dir)
    for ds in datasets:
        vs = [v for v in variant_sets if v.dataset == ds.name and is_configured(v.condition)]
        samples = {v.condition: v.samples for v in vs}
        for r in (r for r in rankings if r.dataset == ds.name):
            check()

            def write(root: Path, r: RerankResult = r, name: str = ds.name, samples: dict = samples) -> dict:
                files = blockwise(
                    r.path,
                    RANKING,
                    lambda blocks: runfolder.write_rankings(
                        (b.filter(CONFIGURED) for b in blocks), root, name, r.system, samples, r.rerank_depth
                    ),
                )
                return {"files": len(files)}

            key = derived.key("runs", Path(r.path), ds.name, r.system, samples, r.rerank_depth, maker=__name__)
            n += derived.reuse(cache_dir, key, out_dir, write)["files"]
        runfolder.write_qrels(open_dataset(ds).qrels, layout.qrels(ds.name))
        changed = (
            read_variants(vs)
            .filter(pl.col("condition") != CLEAN)
            .group_by("condition", "query_id", maintain_order=True)
            .agg(pl.col("changed").any())
        )
        for v in vs:
            if v.condition != CLEAN:
                ids = changed.filter((pl.col("condition") == v.condition) & pl.col("changed"))["query_id"].to_list()
                runfolder.write_changed(sorted(ids), layout.changed(ds.name, v.condition))
    settings = {
        d.name: {"in_ranking": d.in_ranking, "task_type": d.task_type, **({"reason": d.reason} if d.reason else {})}
        for d in datasets
    }
    layout.datasets_yaml.write_text(yaml.safe_dump(settings, sort_keys=False, allow_unicode=True))
    log.info("wrote %d TREC run files under %s", n, layout.runs)
    return n
