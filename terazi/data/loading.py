"""Reading datasets and what their manifests point at: a dataset (a BEIR folder, or a named one, hf:/mteb:/ir_datasets:,
through its BEIR copy) loaded, validated and fingerprinted into its manifest; the dataset, its corpus table and its
query variants read back from a manifest by the stages that need them."""

from __future__ import annotations

import logging
import os
from functools import lru_cache
from pathlib import Path

import polars as pl

from terazi.base.errors import DatasetError
from terazi.data import sources
from terazi.data.beir import Dataset, load_beir
from terazi.data.corpus import CorpusTable, corpus_table
from terazi.schemas import DatasetManifest, DatasetSpec, VariantSet
from terazi.schemas.sources import parse as parse_source

log = logging.getLogger("terazi.load")


@lru_cache(maxsize=8)
def _cached(path: str, split: str, name: str, mtimes: tuple[float, ...]) -> Dataset:
    return load_beir(path, split, name)


def _open(path: str, split: str, name: str) -> Dataset:
    """Read once per process (keyed by the files' modification times, so an edited file is read again)."""
    files = [os.path.join(path, f) for f in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv")]
    mtimes = tuple(os.path.getmtime(f) if os.path.exists(f) else -1.0 for f in files)
    return _cached(str(Path(path).resolve()), split, name, mtimes)


def open_dataset(manifest: DatasetManifest) -> Dataset:
    """The dataset a manifest points at, checked against its fingerprint."""
    ds = _open(manifest.path, manifest.split, manifest.name)
    if ds.fingerprint != manifest.fingerprint:
        raise DatasetError(manifest.path, None, f"dataset {manifest.name} changed on disk during the run")
    return ds


def load_dataset(spec: DatasetSpec, cache_dir: str = ".terazi-cache", announce: bool = True) -> DatasetManifest:
    """Read and validate a dataset (a named one through its BEIR copy in `cache_dir`); its manifest carries the
    fingerprints and counts."""
    source = parse_source(spec.path)
    root = sources.materialize(source, spec.split, cache_dir) if source else Path(spec.path)
    try:
        ds = _open(str(root), spec.split, spec.label)
    except DatasetError as e:
        if source is None:
            raise
        raise DatasetError(e.path, e.line, f"{e.problem} (terazi's copy of {source.text})") from None
    no_rel = sum(1 for q in ds.qrels.values() if not any(g > 0 for g in q.values()))
    m = DatasetManifest(
        name=spec.label,
        path=str(ds.root),
        split=spec.split,
        task_type=spec.task_type,
        in_ranking=spec.in_ranking,
        language=spec.language,
        reason=spec.reason,
        source=sources.described(root) if source else None,
        fingerprint=ds.fingerprint,
        corpus_fingerprint=ds.corpus_fingerprint,
        n_docs=ds.n_docs,
        n_queries=len(ds.judged_query_ids),
        n_judgments=sum(len(v) for v in ds.qrels.values()),
        n_queries_without_relevant=no_rel,
        ignore_identical_ids=spec.ignore_identical_ids,
        n_dropped=ds.dropped(spec.ignore_identical_ids).height,
    )
    if announce:
        log.info(
            "dataset %s: %d documents, %d judged queries, fingerprint %s", m.name, m.n_docs, m.n_queries, m.fingerprint
        )
    return m


def dataset_corpus(dataset: DatasetManifest, cache_dir: str) -> CorpusTable:
    """The dataset's corpus table in the cache (built once per corpus fingerprint)."""
    return corpus_table(Path(dataset.path) / "corpus.jsonl", dataset.corpus_fingerprint, dataset.n_docs, cache_dir)


def read_variants(sets: list[VariantSet], columns: list[str] | None = None) -> pl.DataFrame:
    """The variant tables of several sets as one frame (the stages that read all conditions of a dataset at once),
    all their columns or `columns`."""
    return pl.concat([pl.read_parquet(v.path, columns=columns) for v in sets])


def variant_texts(variant_sets: list[VariantSet]) -> pl.DataFrame:
    """The query variants with their texts (none for runs imported from TREC files, which carry no texts)."""
    frames = [
        pl.read_parquet(v.path).with_columns(pl.lit(v.dataset).alias("dataset"))
        for v in variant_sets
        if v.path.endswith(".parquet") and Path(v.path).is_file()
    ]
    return (
        pl.concat(frames)
        if frames
        else pl.DataFrame(
            schema={
                "condition": pl.Utf8,
                "sample": pl.Int64,
                "query_id": pl.Utf8,
                "text": pl.Utf8,
                "original": pl.Utf8,
                "changed": pl.Boolean,
                "dataset": pl.Utf8,
            }
        )
    )
