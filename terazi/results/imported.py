"""Runs made elsewhere (`terazi analyze`): a runs folder's TREC files and qrels become the manifests, rankings and
per-query values that `terazi run` produces, so both meet at the same aggregation (terazi.results.aggregate)."""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import yaml

from terazi.base import fingerprint
from terazi.base.errors import ConfigError, DatasetError
from terazi.base.ties import tie_order
from terazi.data import runfolder
from terazi.data.leaked_queries import read_leaked_queries
from terazi.data.trec import read_qrels, read_run
from terazi.metrics.contracts import metric_contracts
from terazi.metrics.per_query import query_values
from terazi.results.run_folder import check_outputs
from terazi.schemas import (
    FIRST_STAGE,
    AnalyzeConfig,
    BenchmarkIdentity,
    DatasetManifest,
    RerankResult,
    ScoreSet,
    VariantSet,
)
from terazi.schemas.layout import RunLayout
from terazi.schemas.tables import CLEAN, RANKING

log = logging.getLogger("terazi.import")


def ranked_runs(files: dict[int, Path], condition: str) -> pl.DataFrame:
    """One condition's run files (per sample) as a ranking table, ranked as trec_eval ranks them."""
    parts = []
    for smp in sorted(files):
        run = read_run(files[smp]).select("query_id", "doc_id", "score")
        dup = run.filter(pl.struct("query_id", "doc_id").is_duplicated())
        if dup.height:
            raise DatasetError(
                files[smp],
                None,
                f"document {dup['doc_id'][0]!r} appears twice in the ranking of query {dup['query_id'][0]!r}",
            )
        by, descending = tie_order()  # NaN last, as the metrics rank it
        parts.append(
            run.sort([pl.col("query_id"), *by], descending=[False, *descending], nulls_last=True).with_columns(
                pl.lit(condition).alias("condition"),
                pl.lit(smp, dtype=pl.Int64).alias("sample"),
                pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("query_id").alias("rank"),
            )
        )
    return pl.concat(parts).select(RANKING)


def import_dataset(
    runs: runfolder.DatasetRuns,
    settings: dict,
    conditions: list[str],
    systems: list[str],
    measures: list[str],
    out_dir: str,
) -> tuple[DatasetManifest, list[VariantSet], list[RerankResult], list[ScoreSet]]:
    """Read one dataset's qrels and runs; write rankings/ and per_query/ as `terazi run` does."""
    qrels = read_qrels(runs.qrels)
    judged = qrels["query_id"].unique(maintain_order=True).to_list()
    known = set(judged)
    conds = [c for c in conditions if c in runs.runs]
    variants, changed_rows = [], []
    for cond in conds:
        if cond == CLEAN:
            changed = set()
        elif cond in runs.changed:
            changed = runfolder.read_changed(runs.changed[cond], known)
        else:
            changed = known  # no changed/ file: every query of a corrupted condition counts as changed
        changed_rows += [(cond, q, q in changed) for q in judged]
        path = runs.changed.get(cond) or runs.qrels.parents[1] / "runs" / runs.name / cond
        variants.append(
            VariantSet(
                dataset=runs.name,
                condition=cond,
                params={},
                seed=0,
                samples=len(runs.runs[cond]),
                path=str(path),
                n_queries=len(judged),
                n_changed=len(changed),
            )
        )
    changed_df = pl.DataFrame(
        changed_rows, schema={"condition": pl.Utf8, "query_id": pl.Utf8, "changed": pl.Boolean}, orient="row"
    )
    rankings, scores, docs, layout = [], [], set(qrels["doc_id"].to_list()), RunLayout(out_dir)
    for system in systems:
        files = [runs.runs[c][s][system] for c in conds for s in sorted(runs.runs[c])]
        ranked = pl.concat([ranked_runs({s: f[system] for s, f in runs.runs[c].items()}, c) for c in conds])
        docs.update(ranked["doc_id"].unique().to_list())
        path = layout.ranking(runs.name, system)
        path.parent.mkdir(parents=True, exist_ok=True)
        ranked.write_parquet(path)
        rankings.append(
            RerankResult(
                system=system,
                dataset=runs.name,
                identity="trec-run:" + fingerprint.of_files(files),
                candidates="",
                path=str(path),
            )
        )
        values = query_values(qrels, ranked.drop("rank"), changed_df, measures, order="score")
        named = [pl.lit(runs.name).alias("dataset"), pl.lit(system).alias("system"), pl.all()]
        pq_path = layout.per_query_part(runs.name, system)
        pq_path.parent.mkdir(parents=True, exist_ok=True)
        values.rows().select(named).write_parquet(pq_path)
        if values.samples.height:  # each sample's values, for retention's two levels (as a run keeps them)
            (each := layout.per_sample_part(runs.name, system)).parent.mkdir(parents=True, exist_ok=True)
            values.sample_rows().select(named).write_parquet(each)
        scores.append(
            ScoreSet(system=system, dataset=runs.name, path=str(pq_path), contracts=metric_contracts(measures))
        )
    grades = qrels.group_by("query_id").agg((pl.col("grade") > 0).any().alias("rel"))
    manifest = DatasetManifest(
        name=runs.name,
        path=str(runs.qrels),
        split=str(settings.get("split", "test")),
        task_type=str(settings.get("task_type", "retrieval")),
        in_ranking=bool(settings.get("in_ranking", True)),
        reason=settings.get("reason"),
        source=f"runs folder {runs.qrels.parents[1]}",
        fingerprint=fingerprint.of_records(sorted(qrels.select("query_id", "doc_id", "grade").rows())),
        corpus_fingerprint="",
        n_docs=len(docs),
        n_queries=len(judged),
        n_judgments=qrels.height,
        n_queries_without_relevant=int((~grades["rel"]).sum()),
    )
    log.info(
        "%s: %d judged queries, %d conditions, %d systems from TREC runs",
        runs.name,
        len(judged),
        len(conds),
        len(systems),
    )
    return manifest, variants, rankings, scores


SETTINGS = ("in_ranking", "reason", "task_type", "split")


def dataset_settings(folder: Path, names: list[str]) -> dict[str, dict]:
    """datasets.yaml: per dataset `in_ranking`, `reason`, `task_type` (and `split`, a label); checked."""
    path = RunLayout(folder).datasets_yaml
    if not path.is_file():
        return {n: {} for n in names}
    raw = yaml.safe_load(path.read_text(encoding="utf-8-sig")) or {}
    if not isinstance(raw, dict):
        raise DatasetError(path, None, "expected a mapping: dataset name → {in_ranking, reason, task_type}")
    for name, body in raw.items():
        if name not in names:
            raise DatasetError(path, None, f"dataset {name!r} has no runs (datasets: {', '.join(names)})")
        unknown = sorted(set(body or {}) - set(SETTINGS))
        if unknown:
            raise DatasetError(path, None, f"dataset {name!r}: unknown setting(s) {unknown}; known: {list(SETTINGS)}")
        if "in_ranking" in (body or {}) and not isinstance(body["in_ranking"], bool):
            raise DatasetError(path, None, f"dataset {name!r}: in_ranking must be true or false")
    return {n: dict(raw.get(n) or {}) for n in names}


def order_conditions(found: list[str], wanted: list[str] | None) -> list[str]:
    """clean first, then the asked order (or every condition found, sorted)."""
    if wanted is None:
        return [CLEAN] + sorted(c for c in found if c != CLEAN)
    missing = [c for c in wanted if c not in found]
    if missing:
        raise ConfigError(f"conditions {missing} have no runs (found: {', '.join(sorted(found))})")
    return wanted


def analysis_identity(config: AnalyzeConfig, datasets, variants, rankings) -> BenchmarkIdentity:
    """For runs made elsewhere the benchmark's inputs are the judgments and the changed queries."""
    parts = {
        "datasets": fingerprint.of_json(sorted((d.name, d.fingerprint, d.in_ranking, d.task_type) for d in datasets)),
        "conditions": fingerprint.of_json(sorted((v.dataset, v.condition, v.samples, v.n_changed) for v in variants)),
        "systems": fingerprint.of_json(sorted((r.dataset, r.system, r.identity) for r in rankings)),
        "metrics": fingerprint.of_json({"metrics": config.metrics, "headline": config.headline}),
    }
    return BenchmarkIdentity(
        name=config.benchmark, fingerprint=fingerprint.of_json([parts["datasets"], parts["conditions"]]), parts=parts
    )


@dataclass(frozen=True)
class Inventory:
    """A runs folder, checked before any results folder exists (a bad input leaves nothing behind)."""

    folder: Path
    datasets: list[runfolder.DatasetRuns]
    settings: dict[str, dict]
    conditions: list[str]
    systems: list[str]
    stages: list[str] | None = None  # runs of several first stages (`<first stage>~<system>.trec`)

    def of_stage(self, stage: str) -> Inventory:
        """One first stage's runs, named by their systems alone: what a folder of its runs alone holds."""
        mark = stage + runfolder.STAGE_MARK
        return Inventory(
            self.folder,
            [d.of_stage(stage) for d in self.datasets],
            self.settings,
            self.conditions,
            [s.removeprefix(mark) for s in self.systems if s.startswith(mark)],
        )


def inventory(config: AnalyzeConfig) -> Inventory:
    """The runs folder's datasets, conditions (clean first) and systems; every dataset must have every system, every
    run file ranks something. A terazi results folder as the runs folder must be complete; the results folder may
    not overlap it (nor the leakage folder) and no other run may hold it."""
    folder = Path(config.folder).expanduser().resolve()
    check_outputs(config)
    RunLayout(folder).refuse_unfinished()
    found = runfolder.scan(folder)
    files = [f for d in found for by_sample in d.runs.values() for fs in by_sample.values() for f in fs.values()]
    for path in files:  # read here too, so that a bad run file is one line before Prefect starts
        if read_run(path).is_empty():
            raise DatasetError(
                path,
                None,
                "no rankings (the file is empty): a run file holds one line per ranked "
                "document, `qid Q0 docid rank score tag`",
            )
    settings = dataset_settings(folder, [d.name for d in found])
    conditions = order_conditions(sorted({c for d in found for c in d.runs}), config.conditions)
    stages = runfolder.first_stages(found, config.first_stages)
    parts = {s: s.rpartition(runfolder.STAGE_MARK) for d in found for s in d.systems}  # (first stage, ~, system)
    systems = sorted(parts, key=lambda s: (parts[s][0], parts[s][2] != FIRST_STAGE, s))
    for d in found:
        if d.systems != sorted(systems):
            raise DatasetError(
                folder / "runs" / d.name,
                None,
                f"systems {sorted(set(systems) - set(d.systems))} have no runs for this dataset",
            )
    if config.featured and config.featured not in {p[2] for p in parts.values()}:
        raise ConfigError(f"featured system {config.featured!r} has no runs (systems: {', '.join(systems)})")
    if config.leakage:  # the leakage check's lists, read before the results folder exists
        read_leaked_queries(config.leakage, config.leakage_by, [d.name for d in found])
    return Inventory(folder, found, settings, conditions, systems, stages)


def copy_inputs(folder: Path, run_dir: Path) -> None:
    """The runs, qrels, changed queries and dataset settings travel with the results (as `terazi run` writes them)."""
    for part in ("runs", "qrels", "changed", "datasets.yaml"):
        src = folder / part
        if src.is_dir() and src != run_dir / part:
            shutil.copytree(src, run_dir / part, dirs_exist_ok=True)
        elif src.is_file():
            shutil.copyfile(src, run_dir / part)
