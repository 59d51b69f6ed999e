"""The analysis flow: a folder of TREC runs made anywhere → the same results folder as `terazi run`.

It meets the evaluation at the aggregation: per-query values computed from the run files (terazi.results.imported)
feed the same leaderboard, intervals, retention, comparisons and report (terazi.results.aggregate). Runs of several
first stages (`<first stage>~<system>.trec`) are analysed one first stage at a time, as `terazi run` lays them out
(the first one's results in the folder, each other's in first-stages/<name>/), then compared (protocol.md).
"""

from __future__ import annotations

import logging

from prefect import flow

from terazi.flows.lifecycle import results_folder
from terazi.flows.runtime import run_kind
from terazi.flows.steps import PREFECT, Steps
from terazi.results.imported import Inventory, analysis_identity, copy_inputs, inventory
from terazi.schemas import AnalyzeConfig, RunManifest
from terazi.schemas.layout import RunLayout
from terazi.tasks.import_runs import import_task
from terazi.tasks.results import aggregate_task, protocol_task

log = logging.getLogger("terazi.analyze")


def analysis(config: AnalyzeConfig, kind: str, steps: Steps = PREFECT) -> RunManifest:
    """The whole analysis inside the calling flow (each step through `steps`); writes and returns the results
    folder's manifest."""
    found = inventory(config)  # before the results folder exists: a bad input leaves nothing behind
    with results_folder(config.out_dir, config.run_name, kind, config.benchmark, post=steps.post) as run:
        out = str(run.path)
        copy_inputs(found.folder, run.path)
        if found.stages is None:
            parts = stage_results(steps, found, config, out)
        else:  # each first stage as a folder of its runs alone, the first one's last (its parts fill the manifest)
            roots = {n: str(p) for n, p in RunLayout(out).first_stage_roots(found.stages).items()}
            for name in found.stages[1:]:
                stage_results(steps, found.of_stage(name), config, roots[name])
            parts = stage_results(steps, found.of_stage(found.stages[0]), config, out)
            steps.run(protocol_task, roots, parts["datasets"], config.as_eval_config(found.conditions), out, [])
        run.finish(config, candidates=[], **parts)
    log.info(
        "analysed %d dataset(s), %d system(s) in %.1fs: %s",
        len(found.datasets),
        len(found.systems),
        run.manifest.seconds,
        out,
    )
    return run.manifest


def stage_results(steps: Steps, found: Inventory, config: AnalyzeConfig, out: str) -> dict:
    """The runs of `found` imported and aggregated into `out`; the manifest's parts."""
    futures = [
        steps.spawn(import_task, d, found.settings[d.name], found.conditions, found.systems, config.metrics, out)
        for d in found.datasets
    ]
    datasets, variants, rankings, scores = [], [], [], []
    for f in futures:
        manifest, ds_variants, ds_rankings, ds_scores = f.result()
        datasets.append(manifest)
        variants += ds_variants
        rankings += ds_rankings
        scores += ds_scores
    identity = analysis_identity(config, datasets, variants, rankings)
    board = steps.run(
        aggregate_task, datasets, variants, [], scores, config.as_eval_config(found.conditions), out, identity, rankings
    )
    return {
        "benchmark": identity,
        "datasets": datasets,
        "variants": variants,
        "reranks": rankings,
        "scores": scores,
        "leaderboard": board,
    }


@flow(name="terazi-analyze", validate_parameters=True)
def analyze(config: AnalyzeConfig) -> RunManifest:
    """Leaderboard, intervals, retention, comparisons and report from TREC runs made anywhere."""
    return analysis(config, run_kind())
