"""What a reranking plan takes from its inputs, and how a chunk of it finds its model, alike for a row scored pair
by pair (terazi.rerank.stage) and a listwise row (terazi.rerank.listwise.listwise_stage); the model's identity, its
block and what the plan found are each row's own."""

from __future__ import annotations

import time
from pathlib import Path

from terazi.data.corpus import CorpusTable
from terazi.models.refs import ModelError, prepare_environment, resolve
from terazi.rerank.backends import shared_scorer
from terazi.schemas import (
    CandidateSet,
    DatasetManifest,
    RerankerSpec,
    RerankPlan,
    RerankResult,
    ScaleSpec,
    VariantSet,
)
from terazi.schemas.rerankers import loads_model


def prepare(spec: RerankerSpec, offline: bool) -> None:
    """The environment a row's model loads in (hub access, offline), where the row runs a model in this process."""
    if loads_model(spec):
        prepare_environment([resolve(spec.model, spec.revision, offline)], offline)


def planned_scorer(plan: RerankPlan) -> tuple:
    """(corpus table, scorer, its lock) for a chunk of `plan`: the process's scorer of the row, which must still be
    the model the plan was made for."""
    prepare(plan.spec, plan.offline)
    corpus = CorpusTable(Path(plan.corpus))
    scorer, lock = shared_scorer(plan.spec, corpus, plan.corpus_fingerprint, plan.offline, plan.cache_dir)
    if scorer.identity != plan.identity:
        raise ModelError(
            f"{plan.system}: the model changed since the run was planned ({plan.identity} → {scorer.identity}); "
            "start the run again"
        )
    return corpus, scorer, lock


def plan_inputs(
    dataset: DatasetManifest,
    candidates: CandidateSet,
    variant_sets: list[VariantSet],
    spec: RerankerSpec,
    corpus: str,
    cache_dir: str,
    scale: ScaleSpec,
    offline: bool,
    rerank_depth: int,
    ties: str,
) -> dict:
    """`RerankPlan` fields: the row, its candidates, variants and corpus, where its scores are kept."""
    return dict(
        system=spec.name,
        dataset=dataset.name,
        spec=spec,
        candidates=candidates.fingerprint,
        candidates_path=candidates.path,
        rerank_depth=rerank_depth,
        ties=ties,
        corpus=corpus,
        corpus_fingerprint=dataset.corpus_fingerprint,
        cache_dir=str(cache_dir),
        score_store=scale.score_store,
        offline=offline,
        variants=[v.path for v in variant_sets],
    )


def stored_plan(fields: dict, meta: dict, **own) -> RerankPlan:
    """The plan of a row whose ranking of these candidates and variants is stored (`meta`: what the stored output
    recorded of its pairs): nothing to score; `own`, the row kind's own fields."""
    return RerankPlan(
        **fields,
        work="",
        chunks=[],
        needed=meta["needed"],
        unique=meta["unique"],
        cached=meta["unique"],
        stored=True,
        **own,
    )


def plan_result(plan: RerankPlan, path: Path, scored: int, **own) -> RerankResult:
    """What a finished row reports of `plan`: its ranking at `path`, `scored` pairs (or windows' pairs) scored now and
    the rest found stored; `own`, the row kind's own fields (its cost)."""
    return RerankResult(
        system=plan.system,
        dataset=plan.dataset,
        identity=plan.identity,
        candidates=plan.candidates,
        path=str(path),
        rerank_depth=plan.rerank_depth,
        pairs_needed=plan.needed,
        pairs_unique=plan.unique,
        pairs_cached=plan.unique - scored,
        pairs_scored=scored,
        seconds=round(time.time() - plan.started, 3),
        **own,
    )
