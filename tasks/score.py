"""Stage 5: per-query metrics of one system on one dataset, every condition, under a stated contract."""

from __future__ import annotations

import polars as pl
from prefect import task

from terazi.schemas import DatasetManifest, MetricContract, RerankResult, ScoreSet, VariantSet
from terazi.tasks.corrupt import read_variants
from terazi.data.loading import open_dataset
from terazi.metrics.engine import Policies, evaluate, parse_measure
from terazi.paths import inside

FLOW_TIES = "ranked as the system ranked: model score descending, ties kept in first-stage order"


def contracts(measures: list[str], policies: Policies = Policies()) -> list[MetricContract]:
    out = []
    for name in measures:
        m = parse_measure(name)
        out.append(MetricContract(measure=m.name, contract=policies.label, cutoff=m.cutoff or 0, gain=m.gain,
                                  relevance_threshold=m.rel,
                                  no_relevant=policies.no_relevant, missing_query=policies.missing_query,
                                  extra_query=policies.extra_query, unjudged=policies.unjudged, ties=FLOW_TIES))
    return out


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
                 measures: list[str], out_dir: str, policies: Policies = Policies()) -> ScoreSet:
    """Evaluate each (condition, sample) ranking; samples of one query are averaged."""
    ds = open_dataset(dataset)
    ranked = pl.read_parquet(ranking.path).select("condition", "sample", "query_id", "doc_id", "rank", "score")
    values = per_query_values(ds.qrels, ranked, changed_flags(read_variants(variant_sets)), measures, policies)
    per_query = values.select(pl.lit(dataset.name).alias("dataset"), pl.lit(ranking.system).alias("system"),
                              "condition", "query_id", "measure", "value", "changed")
    path = inside(out_dir, "per_query", dataset.name, f"{ranking.system}.parquet")
    path.parent.mkdir(parents=True, exist_ok=True)
    per_query.write_parquet(path)
    return ScoreSet(system=ranking.system, dataset=dataset.name, path=str(path), contracts=contracts(measures, policies))


score_task = task(score_system, name="score", task_run_name="score {dataset.name} {ranking.system}")
