"""Stage 4: one system's rankings of one dataset's candidates, for every condition at once.

Scoring all conditions of a dataset together lets identical (query, document) pairs, e.g. a
query that a corruption left unchanged, be scored once; the score cache makes that hold across
runs too.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import polars as pl
from prefect import task

from schemas import (
    FIRST_STAGE,
    CandidateSet,
    DatasetManifest,
    RerankerSpec,
    RerankResult,
    VariantSet,
)
from tasks import transient
from tasks.corrupt import read_variants
from tasks.load import open_dataset
from terazi import costs
from terazi.models import prepare_environment, resolve
from terazi.paths import inside
from terazi.progress import progress
from terazi.rerank import reciprocal_rank_fusion, rerank
from terazi.rerankers import make_scorer
from terazi.score_cache import ScoreCache

log = logging.getLogger("terazi.rerank")


def ranking_path(out_dir: str, dataset: str, system: str) -> Path:
    return inside(out_dir, "rankings", dataset, f"{system}.parquet")


def first_stage_ranking(dataset: DatasetManifest, candidates: CandidateSet, out_dir: str) -> RerankResult:
    """The first stage alone, as a leaderboard row ("no rerank")."""
    path = ranking_path(out_dir, dataset.name, FIRST_STAGE)
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.read_parquet(candidates.path).write_parquet(path)
    return RerankResult(system=FIRST_STAGE, dataset=dataset.name, identity=candidates.encoder_identity,
                        candidates=candidates.fingerprint, path=str(path))


def rerank_system(dataset: DatasetManifest, candidates: CandidateSet, variant_sets: list[VariantSet],
                  spec: RerankerSpec, rerank_depth: int, cache_dir: str, out_dir: str,
                  offline: bool = False) -> RerankResult:
    start = time.perf_counter()
    ds = open_dataset(dataset)
    if getattr(spec, "model", None):
        prepare_environment([resolve(spec.model, spec.revision, offline)], offline)
    docs = {d: doc.full_text for d, doc in ds.docs.items()}
    scorer = make_scorer(spec, docs, dataset.corpus_fingerprint, offline, cache_dir)
    cache = ScoreCache(Path(cache_dir) / "scores.sqlite")
    with progress(f"{spec.name} on {dataset.name}") as on_progress:
        ranked, stats = rerank(pl.read_parquet(candidates.path), read_variants(variant_sets), docs, scorer, cache,
                               rerank_depth, on_progress)
    path = ranking_path(out_dir, dataset.name, spec.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    ranked.write_parquet(path)
    log.info("%s on %s: %s", spec.name, dataset.name, stats.line())
    # --- cost (terazi/costs.py): warm speed, latency and size, or the figures of the runs that scored the pairs ---
    cost = costs.settle(scorer, stats.scored, cache_dir, lambda: costs.query_groups(
        pl.read_parquet(candidates.path), read_variants(variant_sets), docs, rerank_depth))
    # --- end of cost ---
    return RerankResult(system=spec.name, dataset=dataset.name, identity=scorer.identity,
                        candidates=candidates.fingerprint, path=str(path), pairs_needed=stats.needed,
                        pairs_unique=stats.unique, pairs_cached=stats.cached, pairs_scored=stats.scored,
                        seconds=round(time.perf_counter() - start, 3), cost=cost)


def fuse_systems(dataset: DatasetManifest, spec: RerankerSpec, parts: list[RerankResult], rerank_depth: int,
                 out_dir: str) -> RerankResult:
    """Reciprocal-rank fusion of other rows' rankings (no model, nothing to cache)."""
    by_name = {p.system: p for p in parts}
    fused = reciprocal_rank_fusion([pl.read_parquet(by_name[n].path) for n in spec.fuse], rerank_depth, spec.rrf_k)
    path = ranking_path(out_dir, dataset.name, spec.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    fused.write_parquet(path)
    return RerankResult(system=spec.name, dataset=dataset.name, identity=f"rrf(k={spec.rrf_k}):{'+'.join(spec.fuse)}",
                        candidates=parts[0].candidates, path=str(path))


first_stage_task = task(first_stage_ranking, name="first-stage-row", task_run_name="no-rerank {dataset.name}")
rerank_task = task(rerank_system, name="rerank", retries=2, retry_delay_seconds=[2, 10],
                   task_run_name="rerank {dataset.name} {spec.name}", tags=["terazi-model"], retry_condition_fn=transient)
fuse_task = task(fuse_systems, name="fuse", task_run_name="fuse {dataset.name} {spec.name}")
