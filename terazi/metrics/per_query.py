"""Per-query values of a system's rankings, every (condition, sample), samples of one query averaged; the table that
every statistic and every leaderboard is computed from. `terazi run` and `terazi analyze` both compute here."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import polars as pl

from terazi import memo
from terazi.data.loading import open_dataset, read_variants
from terazi.metrics.contracts import Policies, metric_contracts
from terazi.metrics.engine import evaluate
from terazi.schemas import DatasetManifest, RerankResult, ScoreSet, VariantSet
from terazi.schemas.layout import RunLayout


def changed_flags(variants: pl.DataFrame) -> pl.DataFrame:
    """(condition, query_id, changed): a query counts as changed when any of its samples changed."""
    return variants.group_by("condition", "query_id").agg(pl.col("changed").any())


def per_query_values(qrels, ranked: pl.DataFrame, changed: pl.DataFrame, measures: list[str],
                     policies: Policies = Policies(), order: str = "rank") -> pl.DataFrame:
    """(condition, query_id, measure, value, changed) of every (condition, sample) ranking, samples of one query
    averaged; `changed` holds (condition, query_id, changed). `terazi run` and `terazi analyze` both compute here."""
    frames = []
    for (cond, smp), part in ranked.group_by(["condition", "sample"], maintain_order=True):
        ev = evaluate(qrels, part.drop("condition", "sample"), measures, policies, order=order)
        for m in measures:
            frames.append(pl.DataFrame({"condition": cond, "sample": smp, "query_id": ev.query_ids[m],
                                        "measure": m, "value": ev.per_query[m]}))
    return (
        pl.concat(frames).group_by("condition", "query_id", "measure", maintain_order=True).agg(pl.col("value").mean())
        .join(changed, on=["condition", "query_id"], how="left").with_columns(pl.col("changed").fill_null(False))
    )


def score_system(dataset: DatasetManifest, ranking: RerankResult, variant_sets: list[VariantSet],
                 measures: list[str], out_dir: str, policies: Policies = Policies(),
                 cache_dir: str | None = None, ties: str = "trec") -> ScoreSet:
    """Evaluate each (condition, sample) ranking; samples of one query are averaged. Linked from the stored outputs
    when the same ranking was scored before against the same judgments and variants (terazi.memo). `ties`: the tie
    rule the ranking was made under, as its contract states it (the values follow the ranking's own ranks)."""
    def write(root: Path) -> dict:
        ds = open_dataset(dataset)
        ranked = pl.read_parquet(ranking.path).select("condition", "sample", "query_id", "doc_id", "rank", "score")
        values = per_query_values(ds.qrels, ranked, changed_flags(read_variants(variant_sets)), measures, policies)
        per_query = values.select(pl.lit(dataset.name).alias("dataset"), pl.lit(ranking.system).alias("system"),
                                  "condition", "query_id", "measure", "value", "changed")
        path = RunLayout(root).per_query_part(dataset.name, ranking.system)
        path.parent.mkdir(parents=True, exist_ok=True)
        per_query.write_parquet(path)
        return {}

    key = memo.key("per-query", dataset.name, dataset.fingerprint, ranking.system, measures, asdict(policies),
                   Path(ranking.path), [Path(v.path) for v in variant_sets], maker=__name__)
    memo.reuse(cache_dir, key, out_dir, write)
    return ScoreSet(system=ranking.system, dataset=dataset.name, path=str(RunLayout(out_dir).per_query_part(
        dataset.name, ranking.system)), contracts=metric_contracts(measures, policies, ties))
