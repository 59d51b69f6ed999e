"""pydantic contracts: run configuration, users' records, and manifests passed between tasks."""

from terazi.schemas.analyze import AnalyzeConfig
from terazi.schemas.config import (
    BUNDLED_ENCODER,
    CONDITIONS,
    FIRST_STAGE,
    MODEL_KINDS,
    BiEncoderSpec,
    BM25Spec,
    CorruptionSpec,
    CrossEncoderSpec,
    DatasetSpec,
    EncoderSpec,
    EvalConfig,
    LLMRerankerSpec,
    RerankerSpec,
    RRFSpec,
    VariantPair,
    ScaleSpec,
)
from terazi.schemas.manifests import (
    BenchmarkIdentity,
    CandidateSet,
    ChunkResult,
    DatasetManifest,
    LeaderboardRow,
    MetricContract,
    MetricRecord,
    ModelCost,
    RerankPlan,
    RerankResult,
    RetrievalPlan,
    RunManifest,
    ScoreSet,
    VariantSet,
)
from terazi.schemas.records import Document, Judgment, Query, QueryVariant

__all__ = [
    "AnalyzeConfig", "BenchmarkIdentity",    "BUNDLED_ENCODER", "CONDITIONS", "FIRST_STAGE", "BM25Spec", "BiEncoderSpec", "CandidateSet", "CrossEncoderSpec", "CorruptionSpec",
    "DatasetManifest", "DatasetSpec", "Document", "EncoderSpec", "EvalConfig", "Judgment",
    "LeaderboardRow", "MetricContract", "MetricRecord", "Query", "QueryVariant", "RerankResult",
    "RRFSpec", "RerankerSpec", "RunManifest", "ScoreSet", "VariantSet", "LLMRerankerSpec", "MODEL_KINDS", "ModelCost",
    "VariantPair", "ChunkResult", "RerankPlan", "RetrievalPlan", "ScaleSpec",
]
