"""A first stage computed elsewhere (e.g. bge-m3 on a GPU cluster), imported from TREC run files and frozen like
terazi's own: the same candidates parquet, TREC copies and `CandidateSet` manifest, fingerprinted the same way.

The folder holds one run per condition, named as terazi names its own candidate files: `<condition>.trec`, or
`<condition>-<sample>.trec` for a condition with several samples (so a results folder's `candidates/<dataset>/`
can be imported as it is). The clean condition's run may instead be MTEB's saved predictions (the folder is then
MTEB's `prediction_folder`, or `first_stage_runs` names its `<task>_predictions.json`: terazi.data.mteb_predictions),
so MTEB's reranking and terazi's rerank the same candidates. The runs must be computed on terazi's query variants
(same conditions, samples and seed: `variants/` of a run, or `terazi corrupt`). Every judged query must be in every
file; documents must be in the corpus; each query keeps its `depth` best documents, ranked as trec_eval ranks (score,
then document id, descending), less the documents its dataset leaves out (`Dataset.dropped`).
"""

from __future__ import annotations

import time
from pathlib import Path

import polars as pl

from terazi.base import fingerprint
from terazi.base.errors import DatasetError
from terazi.base.ties import tie_order
from terazi.data.beir import Dataset
from terazi.data.mteb_predictions import predictions_file, read_predictions
from terazi.data.trec import read_run
from terazi.retrieval.frozen import (
    MANIFEST,
    RULE,
    allowed,
    candidates_file_name,
    load_frozen,
    lookup_key,
    most_dropped,
    store_candidates,
)
from terazi.schemas import CandidateSet, DatasetManifest
from terazi.schemas.tables import CLEAN
from terazi.store.layout import CacheLayout

INDEX = {"type": "external TREC runs"}


def _run(source: Path, cond: str, smp: int, samples: int, split: str) -> tuple[pl.DataFrame, Path]:
    """One (condition, sample)'s run: its TREC file in the folder `source`, else, for the clean condition, MTEB's
    predictions (`source` itself when it is the file)."""
    path = source / candidates_file_name(cond, smp, samples)
    if source.is_dir() and path.is_file():
        return read_run(path).select("query_id", "doc_id", "score"), path
    mteb = predictions_file(source) if cond == CLEAN else None
    if mteb is not None:
        return read_predictions(mteb, split)[0], mteb
    what = "MTEB predictions hold the clean queries only" if source.is_file() else "missing first-stage run"
    raise DatasetError(
        path if source.is_dir() else source,
        None,
        f"{what} for condition {cond!r}" + (f" sample {smp}" if samples > 1 else ""),
    )


def read_candidates(
    folder: Path, variants: pl.DataFrame, doc_ids: pl.Series, depth: int, dropped: pl.DataFrame, split: str = "test"
) -> tuple[pl.DataFrame, list[Path]]:
    """The runs for every (condition, sample) of `variants`, checked, ranked by the tie rule, less the `dropped`
    (query_id, doc_id) pairs and cut to `depth`."""
    samples = variants.group_by("condition").agg(pl.col("sample").n_unique())
    samples = dict(samples.iter_rows())
    parts, files = [], []
    by, descending = tie_order()  # NaN last, as the metrics rank it
    deeper = depth + most_dropped(dropped)
    for (cond, smp), part in variants.group_by(["condition", "sample"], maintain_order=True):
        run, path = _run(folder, cond, smp, samples[cond], split)
        files.append(path)
        need = part["query_id"].unique().to_list()
        lacking = sorted(set(need) - set(run["query_id"].unique().to_list()))
        if lacking:
            raise DatasetError(
                path, None, f"{len(lacking)} of {len(need)} judged queries have no candidates, e.g. {lacking[0]!r}"
            )
        unknown = run.filter(~pl.col("doc_id").is_in(doc_ids.implode()))
        if unknown.height:
            raise DatasetError(
                path,
                None,
                f"document {unknown['doc_id'][0]!r} (query {unknown['query_id'][0]!r}) is not in the dataset's corpus",
            )
        dup = run.filter(pl.struct("query_id", "doc_id").is_duplicated())
        if dup.height:
            raise DatasetError(
                path, None, f"document {dup['doc_id'][0]!r} appears twice for query {dup['query_id'][0]!r}"
            )
        ranked = (
            run.filter(pl.col("query_id").is_in(need))
            .sort([pl.col("query_id"), *by], descending=[False, *descending], nulls_last=True)
            .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("query_id").alias("rank"))
            .filter(pl.col("rank") <= deeper)
        )
        parts.append(
            ranked.select(
                pl.lit(cond).alias("condition"),
                pl.lit(smp, dtype=pl.Int64).alias("sample"),
                "query_id",
                "rank",
                "doc_id",
                pl.col("score").cast(pl.Float64),
            )
        )
    cand = pl.concat(parts).sort("condition", "sample", "query_id", "rank")
    return allowed(cand, dropped, depth), files


def import_candidates(
    dataset: DatasetManifest, ds: Dataset, folder: str | Path, variants: pl.DataFrame, depth: int, cache_dir: str | Path
) -> CandidateSet:
    """Freeze the runs in `folder` as this dataset's candidates (reused when the same runs were frozen before)."""
    start = time.perf_counter()
    folder = Path(folder).expanduser().resolve()
    if not folder.exists():
        raise DatasetError(folder, None, "first-stage runs folder not found")
    variants = variants.sort("condition", "sample", "query_id")
    cand, files = read_candidates(
        folder, variants, ds.doc_ids, depth, ds.dropped(dataset.ignore_identical_ids), dataset.split
    )
    runs_hash = fingerprint.of_files(files)
    key = lookup_key("external", dataset, variants, depth, {"external": runs_hash}, maker=__name__)
    target = CacheLayout(cache_dir).part("candidates", key)
    if (target / MANIFEST).is_file():
        cs = load_frozen(target)  # checked against its recorded hashes; computed again when damaged
        if cs is not None:
            return cs
    body = {
        "lookup_key": key,
        "dataset": dataset.name,
        "dataset_fingerprint": dataset.fingerprint,
        "encoder": f"external:{folder}",
        "index": INDEX,
        "depth": depth,
        "encoder_identity": f"{'mteb-predictions' if any(f.suffix == '.json' for f in files) else 'trec-runs'}:"
        f"{runs_hash}",
        "faiss_version": "none",
        "queries_encoded": 0,
        "docs_encoded": 0,
        "ties": RULE,
        "ignore_identical_ids": dataset.ignore_identical_ids,
    }
    return store_candidates(target, cand, body, ds.qrels, start)
