"""Stage 1: read a BEIR dataset, validate it and fingerprint it."""

from __future__ import annotations

import logging
import os
from functools import lru_cache

from prefect import task

from schemas import DatasetManifest, DatasetSpec
from terazi.data import Dataset, load_beir

log = logging.getLogger("terazi.load")


@lru_cache(maxsize=8)
def _open(path: str, split: str, name: str, mtimes: tuple[float, ...]) -> Dataset:
    return load_beir(path, split, name)


def open_dataset(manifest: DatasetManifest) -> Dataset:
    """The dataset a manifest points at, read once per process and checked against its fingerprint."""
    files = [os.path.join(manifest.path, f) for f in ("corpus.jsonl", "queries.jsonl", f"qrels/{manifest.split}.tsv")]
    ds = _open(manifest.path, manifest.split, manifest.name, tuple(os.path.getmtime(f) for f in files))
    if ds.fingerprint != manifest.fingerprint:
        raise RuntimeError(f"dataset {manifest.name} changed on disk during the run ({manifest.path})")
    return ds


def load_dataset(spec: DatasetSpec) -> DatasetManifest:
    ds = load_beir(spec.path, spec.split, spec.label)
    no_rel = sum(1 for q in ds.qrels.values() if not any(g > 0 for g in q.values()))
    m = DatasetManifest(
        name=spec.label, path=str(ds.root), split=spec.split, task_type=spec.task_type, in_ranking=spec.in_ranking,
        fingerprint=ds.fingerprint, corpus_fingerprint=ds.corpus_fingerprint, n_docs=len(ds.docs),
        n_queries=len(ds.judged_query_ids), n_judgments=sum(len(v) for v in ds.qrels.values()),
        n_queries_without_relevant=no_rel,
    )
    log.info("dataset %s: %d documents, %d judged queries, fingerprint %s", m.name, m.n_docs, m.n_queries, m.fingerprint)
    return m


load_dataset_task = task(load_dataset, name="load-dataset", retries=2, retry_delay_seconds=[1, 5],
                         task_run_name="load {spec.path}")
