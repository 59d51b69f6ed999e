"""Stage 0: everything that can be checked before any heavy stage starts.

Output and cache folders are writable, the score cache opens (a damaged one is named, with the
command that repairs it), every model reference resolves (a hub id while offline, a
missing local folder), every dataset loads and validates. A mistake here costs seconds, not an
encoded corpus; its error names the file, field or model, and is never retried.
"""

from __future__ import annotations

import logging

from prefect import task

from schemas import DatasetManifest, EvalConfig
from tasks import transient
from tasks.load import load_dataset
from terazi.models import ModelError, resolve
from terazi.paths import writable_folder
from terazi.store.scores import check_opens

log = logging.getLogger("terazi.preflight")


def preflight(config: EvalConfig) -> list[DatasetManifest]:
    """Check folders and models, then load every dataset (read once per process and reused)."""
    writable_folder(config.out_dir, "results folder")
    check_opens(writable_folder(config.cache_dir, "cache folder"), config.scale.score_store)
    for where, model, revision, _ in config.models():
        try:
            resolve(model, revision, config.offline)
        except ModelError as e:
            raise ModelError(f"{where}: {e}") from None
    return [load_dataset(spec) for spec in config.datasets]


preflight_task = task(preflight, name="preflight", retries=2, retry_delay_seconds=[1, 5], retry_condition_fn=transient,
                      task_run_name="preflight")
