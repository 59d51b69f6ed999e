"""The heavy stages run the way the flow runs them, in this process, from what a test builds.

`flows/evaluate.py` submits each step as a task; here the same core functions are called in turn, so a test
checks the code a run executes, not a twin of it: `first_stage` is `plan_retrieval` → `encode_shard` per shard →
`search` (the flow's `first_stage`), `rank_row` is `plan_rerank` → `score_chunk` per chunk → `finish_rerank` (one row
of the flow's `rank_rows`). `rerank_row` writes a test's candidate and variant frames where those manifests point.
`wrap_scorers` puts a failing, slow or counting scorer where the stage builds its own.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Callable

import polars as pl

from terazi import fingerprint
from terazi.data.corpus import CorpusTable
from terazi.data.loading import dataset_corpus, load_dataset
from terazi.rerank import backends, stage
from terazi.retrieval.first_stage import encode_shard, plan_retrieval, search
from terazi.schemas import (
    CandidateSet,
    DatasetManifest,
    DatasetSpec,
    EncoderSpec,
    RerankerSpec,
    RerankResult,
    ScaleSpec,
    VariantSet,
)


def corpus_of(root: Path, cache: Path, name: str = "tiny") -> CorpusTable:
    """The corpus table of a BEIR folder, as the stages read it (model scorers are given one and ignore it)."""
    return dataset_corpus(load_dataset(DatasetSpec(path=str(root), name=name), announce=False), str(cache))


def first_stage(dataset: DatasetManifest, variant_sets: list[VariantSet], encoder: EncoderSpec, depth: int,
                cache: str, offline: bool = True, frozen: str | None = None, scale: ScaleSpec = ScaleSpec(),
                external: str | None = None) -> CandidateSet:
    """Frozen candidates: reused, imported or named (`plan.frozen`), else every shard encoded, then searched."""
    plan = plan_retrieval(dataset, variant_sets, encoder, depth, cache, offline, frozen, scale, external)
    if plan.frozen:
        return plan.frozen
    corpus = [encode_shard(plan, "corpus", i) for i in range(len(plan.corpus_shards))]
    queries = [encode_shard(plan, "queries", i) for i in range(len(plan.query_shards))]
    return search(plan, dataset, variant_sets, corpus, queries)


def rank_row(dataset: DatasetManifest, candidates: CandidateSet, variant_sets: list[VariantSet], spec: RerankerSpec,
             rerank_depth: int, cache: str, out: str, scale: ScaleSpec = ScaleSpec(),
             offline: bool = True, sweep_depth: int | None = None, ties: str = "trec") -> RerankResult:
    """One model row: its plan (with a depth sweep's deepest depth), each chunk, its ranking."""
    plan = stage.plan_rerank(dataset, candidates, variant_sets, spec, rerank_depth, cache, scale, offline, sweep_depth,
                             ties)
    chunks = [stage.score_chunk(plan, i) for i in range(len(plan.chunks))]
    return stage.finish_rerank(plan, chunks, out)


def candidate_set(dataset: DatasetManifest, candidates: pl.DataFrame, tmp: Path) -> CandidateSet:
    """A test's candidate frame (condition, sample, query_id, rank, doc_id, score) frozen as a candidate set."""
    tmp.mkdir(parents=True, exist_ok=True)
    cands = tmp / "candidates.parquet"
    candidates.write_parquet(cands)
    return CandidateSet(fingerprint=fingerprint.of_rows(candidates), lookup_key="test", dataset=dataset.name,
                        dataset_fingerprint=dataset.fingerprint, encoder="test", encoder_identity="test", index={},
                        depth=int(candidates["rank"].max()), faiss_version="", path=str(cands), trec_dir=str(tmp),
                        recall={}, reused=False, queries_encoded=0, docs_encoded=0, seconds=0.0)


def rerank_row(dataset: DatasetManifest, candidates: pl.DataFrame, variants: pl.DataFrame, spec: RerankerSpec,
               tmp: Path, rerank_depth: int, chunk_pairs: int | None = None, cache: Path | None = None,
               score_store: str | None = None, fresh: bool = True,
               sweep_depth: int | None = None) -> tuple[RerankResult, pl.DataFrame]:
    """`rank_row` on a test's frames: candidates (condition, sample, query_id, rank, doc_id, score) and variants
    (condition, sample, query_id, text, …), written under `tmp` with their manifests (one variant set per
    condition). The cache is `tmp/cache` unless given; the ranking is written to `tmp/out` (with `sweep_depth`,
    a depth sweep's scores too).

    `fresh`: the row starts without the scorers this process already holds (`shared_scorer`), as a run in a new
    process does; a fresh scorer scores its first pair on its own (the meter's untimed warm-up)."""
    cs = candidate_set(dataset, candidates, tmp)
    sets = []
    for condition in variants["condition"].unique(maintain_order=True).to_list():
        part = variants.filter(pl.col("condition") == condition)
        path = tmp / f"variants-{condition}.parquet"
        part.write_parquet(path)
        sets.append(VariantSet(dataset=dataset.name, condition=condition, params={}, seed=0,
                               samples=part["sample"].n_unique(), path=str(path), n_queries=part["query_id"].n_unique(),
                               n_changed=0))
    if fresh:
        with backends._scorers_lock:
            backends._scorers.clear()
    scale = ScaleSpec(score_store=score_store, **({"chunk_pairs": chunk_pairs} if chunk_pairs else {}))
    result = rank_row(dataset, cs, sets, spec, rerank_depth, str(cache or tmp / "cache"), str(tmp / "out"), scale,
                      sweep_depth=sweep_depth)
    return result, pl.read_parquet(result.path)


def wrap_scorers(wrap: Callable, setattr_: Callable = setattr) -> None:
    """Every scorer the reranking stage builds from now on (the plan's, and the one its chunks share) is
    `wrap(scorer)`. `setattr_`: a test's `monkeypatch.setattr` (undone after the test), or `setattr` in a worker
    process. The process's shared scorers start afresh, so none built before is used; a second call replaces the
    first one's wrapper."""
    make = getattr(backends.make_scorer, "__wrapped__", backends.make_scorer)

    def wrapped(*args, **kwargs):
        return wrap(make(*args, **kwargs))

    wrapped.__wrapped__ = make
    setattr_(backends, "make_scorer", wrapped)  # what shared_scorer builds with (the chunks, the cost step)
    setattr_(stage, "make_scorer", wrapped)  # what plan_rerank builds with
    setattr_(backends, "_scorers", OrderedDict())
