"""A first stage computed elsewhere (e.g. bge-m3 on a GPU cluster), imported from TREC run files and frozen like
terazi's own: the same candidates parquet, TREC copies and `CandidateSet` manifest, fingerprinted the same way.

The folder holds one run per condition, named as terazi names its own candidate files: `<condition>.trec`, or
`<condition>-<sample>.trec` for a condition with several samples (so a results folder's `candidates/<dataset>/`
can be imported as it is). The runs must be computed on terazi's query variants (same conditions, samples and
seed: `variants/` of a run, or `terazi corrupt`). Every judged query must be in every file; documents must be in
the corpus; each query keeps its `depth` best documents, ranked as trec_eval ranks (score, then document id,
descending).
"""

from __future__ import annotations

import time
from pathlib import Path

import polars as pl

from terazi import codehash, fingerprint
from terazi.data.beir import Dataset
from terazi.data.trec import read_run
from terazi.errors import DatasetError
from terazi.paths import inside
from terazi.retrieval.frozen import MANIFEST, candidates_file_name, load_frozen, store_candidates
from terazi.schemas import CandidateSet, DatasetManifest

INDEX = {"type": "external TREC runs"}


def read_candidates(folder: Path, variants: pl.DataFrame, doc_ids: pl.Series, depth: int) -> tuple[pl.DataFrame, list[Path]]:
    """The runs for every (condition, sample) of `variants`, checked and cut to `depth`."""
    samples = variants.group_by("condition").agg(pl.col("sample").n_unique())
    samples = dict(samples.iter_rows())
    parts, files = [], []
    for (cond, smp), part in variants.group_by(["condition", "sample"], maintain_order=True):
        path = folder / candidates_file_name(cond, smp, samples[cond])
        if not path.is_file():
            raise DatasetError(path, None, f"missing first-stage run for condition {cond!r}"
                                           + (f" sample {smp}" if samples[cond] > 1 else ""))
        files.append(path)
        run = read_run(path).select("query_id", "doc_id", "score")
        need = part["query_id"].unique().to_list()
        lacking = sorted(set(need) - set(run["query_id"].unique().to_list()))
        if lacking:
            raise DatasetError(path, None, f"{len(lacking)} of {len(need)} judged queries have no candidates, "
                                           f"e.g. {lacking[0]!r}")
        unknown = run.filter(~pl.col("doc_id").is_in(doc_ids.implode()))
        if unknown.height:
            raise DatasetError(path, None, f"document {unknown['doc_id'][0]!r} (query {unknown['query_id'][0]!r}) is "
                                           "not in the dataset's corpus")
        dup = run.filter(pl.struct("query_id", "doc_id").is_duplicated())
        if dup.height:
            raise DatasetError(path, None, f"document {dup['doc_id'][0]!r} appears twice for query {dup['query_id'][0]!r}")
        ranked = (run.filter(pl.col("query_id").is_in(need)).with_columns(pl.col("score").fill_nan(None).alias("_s"))
                  .sort(["query_id", "_s", "doc_id"], descending=[False, True, True], nulls_last=True)
                  .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("query_id").alias("rank"))
                  .filter(pl.col("rank") <= depth))
        parts.append(ranked.select(pl.lit(cond).alias("condition"), pl.lit(smp, dtype=pl.Int64).alias("sample"),
                                   "query_id", "rank", "doc_id", pl.col("score").cast(pl.Float64)))
    cand = pl.concat(parts).sort("condition", "sample", "query_id", "rank")
    return cand, files


def import_candidates(dataset: DatasetManifest, ds: Dataset, folder: str | Path, variants: pl.DataFrame, depth: int,
                      cache_dir: str | Path) -> CandidateSet:
    """Freeze the runs in `folder` as this dataset's candidates (reused when the same runs were frozen before)."""
    start = time.perf_counter()
    folder = Path(folder).expanduser().resolve()
    if not folder.is_dir():
        raise DatasetError(folder, None, "first-stage runs folder not found")
    variants = variants.sort("condition", "sample", "query_id")
    cand, files = read_candidates(folder, variants, ds.doc_ids, depth)
    runs_hash = fingerprint.of_files(files)
    lookup_key = fingerprint.of_json({
        "dataset": dataset.fingerprint, "external": runs_hash, "depth": depth,
        "variants": fingerprint.of_rows(variants.select("condition", "sample", "query_id", "text")),
        "code": codehash.of_module(__name__)})
    target = inside(cache_dir, "candidates", lookup_key)
    if (target / MANIFEST).is_file():
        cs = load_frozen(target)  # checked against its recorded hashes; computed again when damaged
        if cs is not None:
            return cs
    body = {
        "lookup_key": lookup_key, "dataset": dataset.name, "dataset_fingerprint": dataset.fingerprint,
        "encoder": f"external:{folder}", "encoder_identity": f"trec-runs:{runs_hash}", "index": INDEX, "depth": depth,
        "faiss_version": "none", "queries_encoded": 0, "docs_encoded": 0,
    }
    return store_candidates(target, cand, body, ds.qrels, start)
