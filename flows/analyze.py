"""The analysis flow: a folder of TREC runs made anywhere → the same results folder as `terazi run`.

It meets `flows/evaluate.py` at the aggregation (tasks/aggregate.py `build_leaderboard` and `publish`): per-query
values computed from the run files (tasks/import_runs.py) feed the same leaderboard, intervals, retention,
comparisons and report.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path

import yaml
from prefect import flow

from terazi.flows.evaluate import current_flow_run_id, run_kind
from terazi.schemas import AnalyzeConfig, BenchmarkIdentity, RunManifest
from terazi.tasks.aggregate import aggregate_task, publish
from terazi.tasks.import_runs import import_task
from terazi import __version__, fingerprint
from terazi.results import folder as results
from terazi.data import runfolder
from terazi.errors import ConfigError, DatasetError

log = logging.getLogger("terazi.analyze")
SETTINGS = ("in_ranking", "reason", "task_type", "split")


def dataset_settings(folder: Path, names: list[str]) -> dict[str, dict]:
    """datasets.yaml: per dataset `in_ranking`, `reason`, `task_type` (and `split`, a label); checked."""
    path = folder / "datasets.yaml"
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
        return [runfolder.CLEAN] + sorted(c for c in found if c != runfolder.CLEAN)
    missing = [c for c in wanted if c not in found]
    if missing:
        raise ConfigError(f"conditions {missing} have no runs (found: {', '.join(sorted(found))})")
    return wanted


def analysis(config: AnalyzeConfig, kind: str) -> RunManifest:
    """The whole analysis inside the calling flow; writes and returns the results folder's manifest."""
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    folder = Path(config.folder).expanduser().resolve()
    inventory = runfolder.scan(folder)  # before the results folder exists: a bad input leaves nothing behind
    settings = dataset_settings(folder, [d.name for d in inventory])
    conditions = order_conditions(sorted({c for d in inventory for c in d.runs}), config.conditions)
    systems = sorted({s for d in inventory for s in d.systems}, key=lambda s: (s != "first-stage", s))
    for d in inventory:
        if d.systems != sorted(systems):
            raise DatasetError(folder / "runs" / d.name, None, f"systems {sorted(set(systems) - set(d.systems))} "
                                                              "have no runs for this dataset")
    if config.featured and config.featured not in systems:
        raise ConfigError(f"featured system {config.featured!r} has no runs (systems: {', '.join(systems)})")
    run_dir = results.start(config.out_dir, config.run_name, kind, current_flow_run_id())
    out = str(run_dir)
    try:
        futures = [import_task.submit(d, settings[d.name], conditions, systems, config.metrics, out) for d in inventory]
        datasets, variants, rankings, scores = [], [], [], []
        for f in futures:
            m, vs, rs, ss = f.result()
            datasets.append(m)
            variants += vs
            rankings += rs
            scores += ss
        for part in ("runs", "qrels", "changed", "datasets.yaml"):  # the inputs travel with the results
            src = folder / part
            if src.is_dir() and src != run_dir / part:
                shutil.copytree(src, run_dir / part, dirs_exist_ok=True)
            elif src.is_file():
                shutil.copyfile(src, run_dir / part)
        identity = analysis_identity(config, datasets, variants, rankings)
        eval_config = config.as_eval_config(conditions)
        board = aggregate_task(datasets, variants, [], scores, eval_config, out, identity, rankings)
        manifest = RunManifest(
            terazi_version=__version__, run_dir=out, kind=kind, flow_run_id=current_flow_run_id(), benchmark=identity,
            started=started, seconds=round(time.perf_counter() - t0, 2), config=json.loads(config.model_dump_json()),
            datasets=datasets, variants=variants, candidates=[], reranks=rankings, scores=scores, leaderboard=board)
        results.finish(run_dir, manifest.model_dump_json(indent=2))
    except BaseException as e:
        results.mark_stopped(run_dir, f"{type(e).__name__}: {e}")
        raise
    publish(out, config.benchmark)  # in the flow itself, once the results are complete (as terazi-evaluate)
    log.info("analysed %d dataset(s), %d system(s) in %.1fs: %s", len(datasets), len(systems), manifest.seconds, run_dir)
    return manifest


def analysis_identity(config: AnalyzeConfig, datasets, variants, rankings) -> BenchmarkIdentity:
    """For runs made elsewhere the benchmark's inputs are the judgments and the changed queries."""
    parts = {
        "datasets": fingerprint.of_json(sorted((d.name, d.fingerprint, d.in_ranking, d.task_type) for d in datasets)),
        "conditions": fingerprint.of_json(sorted((v.dataset, v.condition, v.samples, v.n_changed) for v in variants)),
        "systems": fingerprint.of_json(sorted((r.dataset, r.system, r.identity) for r in rankings)),
        "metrics": fingerprint.of_json({"metrics": config.metrics, "headline": config.headline}),
    }
    return BenchmarkIdentity(name=config.benchmark, fingerprint=fingerprint.of_json([parts["datasets"], parts["conditions"]]),
                             parts=parts)


@flow(name="terazi-analyze", validate_parameters=True)
def analyze(config: AnalyzeConfig) -> RunManifest:
    """Leaderboard, intervals, retention, comparisons and report from TREC runs made anywhere."""
    return analysis(config, run_kind())
