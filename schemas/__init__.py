"""pydantic contracts: run configuration, users' records, and manifests passed between tasks."""

from schemas.config import (
    BUNDLED_ENCODER,
    CONDITIONS,
    FIRST_STAGE,
    CorruptionSpec,
    DatasetSpec,
    EncoderSpec,
    EvalConfig,
    RerankerSpec,
)
from schemas.manifests import (
    CandidateSet,
    DatasetManifest,
    LeaderboardRow,
    MetricContract,
    MetricRecord,
    RerankResult,
    RunManifest,
    ScoreSet,
    VariantSet,
)
from schemas.records import Document, Judgment, Query, QueryVariant

__all__ = [
    "BUNDLED_ENCODER", "CONDITIONS", "FIRST_STAGE", "CandidateSet", "CorruptionSpec",
    "DatasetManifest", "DatasetSpec", "Document", "EncoderSpec", "EvalConfig", "Judgment",
    "LeaderboardRow", "MetricContract", "MetricRecord", "Query", "QueryVariant", "RerankResult",
    "RerankerSpec", "RunManifest", "ScoreSet", "VariantSet",
]
