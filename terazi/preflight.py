"""Everything that can be checked before any heavy stage starts (the flow's first task; the CLI and the Python API
run it before Prefect starts).

Output and cache folders are writable, the score cache opens (a damaged one is named, with the
command that repairs it), every model reference resolves (a hub id while offline, a
missing local folder), every dataset loads and validates. A mistake here costs seconds, not an
encoded corpus; its error names the file, field or model, and is never retried.
"""

from __future__ import annotations

import logging
from pathlib import Path

from terazi.data.exclusions import read_exclusions
from terazi.data.loading import load_dataset
from terazi.errors import DatasetError
from terazi.models.refs import ModelError, resolve
from terazi.paths import writable_folder
from terazi.rerank.store.scores import check_opens
from terazi.schemas import DatasetManifest, EvalConfig

log = logging.getLogger("terazi.preflight")


def preflight(config: EvalConfig, announce: bool = True) -> list[DatasetManifest]:
    """Check models, then load every dataset (read once per process and reused; a named dataset is copied into
    the cache folder first), then the score cache and the results folder. Its callers check the folders first
    (`terazi.results.folder.check_outputs`), before anything is written."""
    for where, model, revision, _ in config.models():
        try:
            resolve(model, revision, config.offline)
        except ModelError as e:
            raise ModelError(f"{where}: {e}") from None
    for spec in config.datasets:
        if spec.first_stage_runs and not Path(spec.first_stage_runs).expanduser().is_dir():
            raise DatasetError(spec.first_stage_runs, None, f"first-stage runs folder of dataset {spec.label} not found")
    writable_folder(config.cache_dir, "cache folder")  # named datasets are copied into it
    datasets = [load_dataset(spec, config.cache_dir, announce) for spec in config.datasets]
    if config.exclude:  # the leakage check's lists, read now: a bad folder fails before any heavy stage
        read_exclusions(config.exclude, config.exclude_by, [d.name for d in datasets],
                        {d.name: d.corpus_fingerprint for d in datasets})
    check_opens(Path(config.cache_dir), config.scale.score_store)  # a damaged cache: named, with its repair command
    writable_folder(config.out_dir, "results folder")
    return datasets
