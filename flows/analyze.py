"""The analysis flow: a folder of TREC runs made anywhere → the same results folder as `terazi run`.

It meets the evaluation at the aggregation: per-query values computed from the run files (terazi.results.imported)
feed the same leaderboard, intervals, retention, comparisons and report (terazi.results.aggregate).
"""

from __future__ import annotations

import logging

from prefect import flow

from terazi.flows.lifecycle import results_folder
from terazi.flows.runtime import run_kind
from terazi.results.imported import analysis_identity, copy_inputs, inventory
from terazi.schemas import AnalyzeConfig, RunManifest
from terazi.tasks.import_runs import import_task
from terazi.tasks.results import aggregate_task

log = logging.getLogger("terazi.analyze")


def analysis(config: AnalyzeConfig, kind: str) -> RunManifest:
    """The whole analysis inside the calling flow; writes and returns the results folder's manifest."""
    found = inventory(config)  # before the results folder exists: a bad input leaves nothing behind
    with results_folder(config.out_dir, config.run_name, kind, config.benchmark) as run:
        out = str(run.path)
        futures = [import_task.submit(d, found.settings[d.name], found.conditions, found.systems, config.metrics, out)
                   for d in found.datasets]
        datasets, variants, rankings, scores = [], [], [], []
        for f in futures:
            manifest, ds_variants, ds_rankings, ds_scores = f.result()
            datasets.append(manifest)
            variants += ds_variants
            rankings += ds_rankings
            scores += ds_scores
        copy_inputs(found.folder, run.path)
        identity = analysis_identity(config, datasets, variants, rankings)
        board = aggregate_task(datasets, variants, [], scores, config.as_eval_config(found.conditions), out, identity,
                               rankings)
        run.finish(config, benchmark=identity, datasets=datasets, variants=variants, candidates=[], reranks=rankings,
                   scores=scores, leaderboard=board)
    log.info("analysed %d dataset(s), %d system(s) in %.1fs: %s", len(datasets), len(found.systems),
             run.manifest.seconds, out)
    return run.manifest


@flow(name="terazi-analyze", validate_parameters=True)
def analyze(config: AnalyzeConfig) -> RunManifest:
    """Leaderboard, intervals, retention, comparisons and report from TREC runs made anywhere."""
    return analysis(config, run_kind())
