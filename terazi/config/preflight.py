"""Everything that can be checked before any heavy stage starts (the flow's first task; the CLI and the Python API
run it before Prefect starts).

The work asked for is within the limits in force (`schemas.scale.Limits`: the documented maxima, the service
policy's for a served run, none after `terazi run --no-limits`), output and cache folders are
writable, the score cache opens (a damaged one is named, with the
command that repairs it), every model reference resolves (a hub id while offline, a
missing local folder), the API key of every reranker served over HTTP is in its variable, every dataset loads
and validates. A mistake here costs seconds, not an encoded corpus; its error names the file, field or model, and
is never retried.
"""

from __future__ import annotations

import logging
from pathlib import Path

from terazi.base.errors import DatasetError, LimitError
from terazi.base.paths import writable_folder
from terazi.config.policy import limits_in_force
from terazi.corrupt.conditions import samples_for
from terazi.data.leaked_queries import read_leaked_queries
from terazi.data.loading import load_dataset
from terazi.models.refs import ModelError, resolve
from terazi.rerank.backends.http import api_key
from terazi.rerank.listwise.prompts import load
from terazi.rerank.store.scores import check_opens
from terazi.schemas import DatasetManifest, EvalConfig, Limits
from terazi.schemas.rerankers import served

log = logging.getLogger("terazi.config.preflight")


def preflight(config: EvalConfig, announce: bool = True) -> list[DatasetManifest]:
    """Check the limits, models, then load every dataset (read once per process and reused; a named dataset is
    copied into the cache folder first), then the work estimates, the score cache and the results folder. Its
    callers check the folders first (`terazi.results.run_folder.check_outputs`), before anything is written."""
    limits, allow_more = limits_in_force()
    if limits:
        within_limits(config, limits, allow_more)
    for where, model, revision, _ in config.models():
        try:
            resolve(model, revision, config.offline)
        except ModelError as e:
            raise ModelError(f"{where}: {e}") from None
    for spec in config.rerankers:
        if served(spec):
            api_key(spec)  # the variable holding the key is set (its value is never shown)
        if spec.kind == "listwise":
            load(spec.prompt)  # a template file of one's own reads and holds together before any heavy stage
    for spec in config.datasets:
        if spec.first_stage_runs and not Path(spec.first_stage_runs).expanduser().exists():
            raise DatasetError(spec.first_stage_runs, None, f"first-stage runs of dataset {spec.label} not found")
    writable_folder(config.cache_dir, "cache folder")  # named datasets are copied into it
    datasets = [load_dataset(spec, config.cache_dir, announce) for spec in config.datasets]
    if limits:
        within_limits(config, limits, allow_more, datasets)
    if config.leakage:  # the leakage check's lists, read now: a bad folder fails before any heavy stage
        read_leaked_queries(
            config.leakage,
            config.leakage_by,
            [d.name for d in datasets],
            {d.name: d.corpus_fingerprint for d in datasets},
        )
    check_opens(Path(config.cache_dir), config.scale.score_store)  # a damaged cache: named, with its repair command
    writable_folder(config.out_dir, "results folder")
    return datasets


def within_limits(
    config: EvalConfig, limits: Limits, allow_more: str, datasets: list[DatasetManifest] | None = None
) -> None:
    """A `LimitError` naming the field, its value, the limit and how to allow more (`allow_more`, whose `{flag}` is
    the limit's `terazi serve --max-…` option): the config's own numbers, and with `datasets` the work estimates."""
    asked = [
        ("resamples", "bootstrap_resamples", config.bootstrap_resamples),
        ("resamples", "randomization_resamples", config.randomization_resamples),
        ("samples", "corruption.samples", config.corruption.samples),
        ("workers", "task_runner_workers", config.task_runner_workers),
        ("depths", "rerank_depths (depths in the sweep)", len(config.rerank_depths or [])),
    ]
    if datasets is not None:
        variants = sum(samples_for(c, config.corruption.samples, config.corruption) for c in config.conditions)
        queries, stages = sum(d.n_queries for d in datasets), len(config.stages)
        times = f" × {stages} first stages" if stages > 1 else ""
        asked = [
            (
                "pairs",
                f"first-stage pairs ({queries:,} judged queries × {variants} variants × depth {config.depth}{times})",
                queries * variants * config.depth * stages,
            ),
            (
                "cells",
                f"bootstrap cells (bootstrap_resamples × {queries:,} judged queries)",
                config.bootstrap_resamples * queries,
            ),
        ]
    for key, field, value in asked:
        if value > getattr(limits, key):
            raise LimitError(
                f"{field}: {value:,} is over the limit of {getattr(limits, key):,}; lower it, or "
                + allow_more.format(flag=key)
            )
