"""What a reranking plan takes from its inputs, alike for a row scored pair by pair (terazi.rerank.stage) and a
listwise row (terazi.rerank.listwise.listwise_stage); the model's identity, its block and what the plan found are
each row's own."""

from __future__ import annotations

from terazi.schemas import CandidateSet, DatasetManifest, RerankerSpec, RerankPlan, ScaleSpec, VariantSet


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
