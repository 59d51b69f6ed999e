"""Stage 1–5 for runs made elsewhere: a dataset's TREC runs and qrels become the manifests, rankings and per-query
values that `terazi run` produces, so both meet at the same aggregation (tasks/aggregate.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl
from prefect import task

from terazi.schemas import DatasetManifest, RerankResult, ScoreSet, VariantSet
from terazi.tasks import transient
from terazi.tasks.score import contracts, per_query_values
from terazi import fingerprint
from terazi.data import runfolder
from terazi.errors import DatasetError
from terazi.paths import inside
from terazi.data.trec import read_qrels, read_run

log = logging.getLogger("terazi.import")
TREC_TIES = "ranked by run score descending, then document id descending (trec_eval)"


def ranked_runs(files: dict[int, Path], condition: str) -> pl.DataFrame:
    """One condition's run files (per sample) as a ranking table, ranked as trec_eval ranks them."""
    parts = []
    for smp in sorted(files):
        run = read_run(files[smp]).select("query_id", "doc_id", "score")
        dup = run.filter(pl.struct("query_id", "doc_id").is_duplicated())
        if dup.height:
            raise DatasetError(files[smp], None, f"document {dup['doc_id'][0]!r} appears twice in the ranking of "
                                                 f"query {dup['query_id'][0]!r}")
        order = run.with_columns(pl.col("score").fill_nan(None).alias("_s"))  # NaN last, as the metrics do
        parts.append(order.sort(["query_id", "_s", "doc_id"], descending=[False, True, True], nulls_last=True)
                     .drop("_s").with_columns(pl.lit(condition).alias("condition"), pl.lit(smp, dtype=pl.Int64).alias("sample"),
                                   pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("query_id").alias("rank")))
    return pl.concat(parts).select("condition", "sample", "query_id", "rank", "doc_id", "score")


def import_dataset(runs: runfolder.DatasetRuns, settings: dict, conditions: list[str], systems: list[str],
                   measures: list[str], out_dir: str) -> tuple[DatasetManifest, list[VariantSet], list[RerankResult],
                                                                list[ScoreSet]]:
    """Read one dataset's qrels and runs; write rankings/ and per_query/ as `terazi run` does."""
    qrels = read_qrels(runs.qrels)
    judged = qrels["query_id"].unique(maintain_order=True).to_list()
    known = set(judged)
    conds = [c for c in conditions if c in runs.runs]
    variants, changed_rows = [], []
    for cond in conds:
        if cond == runfolder.CLEAN:
            changed = set()
        elif cond in runs.changed:
            changed = runfolder.read_changed(runs.changed[cond], known)
        else:
            changed = known  # no changed/ file: every query of a corrupted condition counts as changed
        changed_rows += [(cond, q, q in changed) for q in judged]
        path = runs.changed.get(cond) or runs.qrels.parents[1] / "runs" / runs.name / cond
        variants.append(VariantSet(dataset=runs.name, condition=cond, params={}, seed=0, samples=len(runs.runs[cond]),
                                   path=str(path), n_queries=len(judged), n_changed=len(changed)))
    changed_df = pl.DataFrame(changed_rows, schema={"condition": pl.Utf8, "query_id": pl.Utf8, "changed": pl.Boolean},
                              orient="row")
    rankings, scores, docs = [], [], set(qrels["doc_id"].to_list())
    for system in systems:
        files = [runs.runs[c][s][system] for c in conds for s in sorted(runs.runs[c])]
        ranked = pl.concat([ranked_runs({s: f[system] for s, f in runs.runs[c].items()}, c) for c in conds])
        docs.update(ranked["doc_id"].unique().to_list())
        path = inside(out_dir, "rankings", runs.name, f"{system}.parquet")
        path.parent.mkdir(parents=True, exist_ok=True)
        ranked.write_parquet(path)
        rankings.append(RerankResult(system=system, dataset=runs.name, identity="trec-run:" + fingerprint.of_files(files),
                                     candidates="", path=str(path)))
        per_query = per_query_values(qrels, ranked.drop("rank"), changed_df, measures, order="score").select(
            pl.lit(runs.name).alias("dataset"), pl.lit(system).alias("system"), "condition", "query_id", "measure",
            "value", "changed")
        pq_path = inside(out_dir, "per_query", runs.name, f"{system}.parquet")
        pq_path.parent.mkdir(parents=True, exist_ok=True)
        per_query.write_parquet(pq_path)
        scores.append(ScoreSet(system=system, dataset=runs.name, path=str(pq_path),
                               contracts=[c.model_copy(update={"ties": TREC_TIES}) for c in contracts(measures)]))
    grades = qrels.group_by("query_id").agg((pl.col("grade") > 0).any().alias("rel"))
    manifest = DatasetManifest(
        name=runs.name, path=str(runs.qrels), split=str(settings.get("split", "test")),
        task_type=str(settings.get("task_type", "retrieval")), in_ranking=bool(settings.get("in_ranking", True)),
        reason=settings.get("reason"), source=f"runs folder {runs.qrels.parents[1]}",
        fingerprint=fingerprint.of_records(sorted(qrels.select("query_id", "doc_id", "grade").rows())),
        corpus_fingerprint="", n_docs=len(docs), n_queries=len(judged), n_judgments=qrels.height,
        n_queries_without_relevant=int((~grades["rel"]).sum()))
    log.info("%s: %d judged queries, %d conditions, %d systems from TREC runs", runs.name, len(judged), len(conds),
             len(systems))
    return manifest, variants, rankings, scores


import_task = task(import_dataset, name="import-runs", retries=1, retry_condition_fn=transient,
                   task_run_name="import-runs {runs.name}")
