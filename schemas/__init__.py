"""pydantic contracts: run configuration, users' records, and manifests passed between tasks."""

from schemas.config import (
    BUNDLED_ENCODER,
    CONDITIONS,
    FIRST_STAGE,
    BiEncoderSpec,
    BM25Spec,
    CorruptionSpec,
    CrossEncoderSpec,
    DatasetSpec,
    EncoderSpec,
    EvalConfig,
    RerankerSpec,
    RRFSpec,
    ScaleSpec,
)
from schemas.manifests import (
    BenchmarkIdentity,
    CandidateSet,
    ChunkResult,
    DatasetManifest,
    LeaderboardRow,
    MetricContract,
    MetricRecord,
    RerankPlan,
    RerankResult,
    RetrievalPlan,
    RunManifest,
    ScoreSet,
    VariantSet,
)
from schemas.records import Document, Judgment, Query, QueryVariant

__all__ = [
    "BenchmarkIdentity",    "BUNDLED_ENCODER", "CONDITIONS", "FIRST_STAGE", "BM25Spec", "BiEncoderSpec", "CandidateSet", "ChunkResult", "CrossEncoderSpec", "CorruptionSpec",
    "DatasetManifest", "DatasetSpec", "Document", "EncoderSpec", "EvalConfig", "Judgment",
    "LeaderboardRow", "MetricContract", "MetricRecord", "Query", "QueryVariant", "RerankPlan", "RerankResult", "RetrievalPlan",
    "RRFSpec", "RerankerSpec", "ScaleSpec", "RunManifest", "ScoreSet", "VariantSet",
]
