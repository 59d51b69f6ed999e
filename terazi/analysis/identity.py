"""A benchmark's identity: its name, one fingerprint of its inputs, and a hash per part.

The fingerprint is the hash of every dataset's frozen candidate fingerprint (which covers the
dataset files, the encoder, the index, the depth and every query variant), so one 16-hex number
says "same inputs", as a model card prints one. The parts say which piece changed between two runs.
"""

from __future__ import annotations

from terazi.base import fingerprint
from terazi.schemas import BenchmarkIdentity, CandidateSet, DatasetManifest, EvalConfig

PART_LABELS = {
    "datasets": "datasets (files, splits, ranking membership, ignore_identical_ids)",
    "first_stage": "first stage (encoder, index, depth)",
    "conditions": "query conditions (conditions, corruption parameters, seed)",
    "systems": "systems (rerankers and rerank depth)",
    "metrics": "metrics (measures, headline, tie rule)",
}


def identity(config: EvalConfig, datasets: list[DatasetManifest], candidates: list[CandidateSet]) -> BenchmarkIdentity:
    enc = (config.first_stage.encoder or config.encoder).model_dump(exclude={"batch_size", "device"})
    parts = {
        "datasets": fingerprint.of_json(
            sorted((d.name, d.fingerprint, d.in_ranking, d.task_type, d.ignore_identical_ids) for d in datasets)
        ),
        "first_stage": fingerprint.of_json(
            {"encoder": enc, "identities": sorted({c.encoder_identity for c in candidates}), "depth": config.depth}
        ),
        "conditions": fingerprint.of_json(
            {"conditions": config.conditions, "corruption": config.corruption.model_dump(), "seed": config.seed}
        ),
        "systems": fingerprint.of_json(
            {
                "rerankers": [r.model_dump(exclude={"batch_size", "device"}) for r in config.rerankers],
                "rerank_depth": config.rerank_depth,
            }
        ),
        "metrics": fingerprint.of_json({"metrics": config.metrics, "headline": config.headline, "ties": config.ties}),
    }
    return BenchmarkIdentity(
        name=config.benchmark, fingerprint=fingerprint.of_json(sorted(c.fingerprint for c in candidates)), parts=parts
    )


def changed_parts(before: BenchmarkIdentity, after: BenchmarkIdentity) -> list[str]:
    """Labels of the parts that differ (empty: the same benchmark)."""
    return [
        PART_LABELS.get(k, k)
        for k in sorted(set(before.parts) | set(after.parts))
        if before.parts.get(k) != after.parts.get(k)
    ]
