"""pydantic contracts: run configuration, users' records, the grammars of the fields users fill in (measure and
dataset names), and the manifests passed between tasks. Imports leaves only."""

from terazi.schemas.analyze import AnalyzeConfig
from terazi.schemas.config import EvalConfig, VariantPair
from terazi.schemas.corruption import CorruptionSpec, MobileSpec
from terazi.schemas.datasets import DatasetSpec
from terazi.schemas.fields import BUNDLED_ENCODER, CONDITIONS, FIRST_STAGE
from terazi.schemas.first_stages import EncoderSpec, FirstStageSpec
from terazi.schemas.listwise import ListwiseCost, ListwiseSpec
from terazi.schemas.manifests import (
    BenchmarkIdentity,
    CandidateSet,
    ChunkResult,
    DatasetManifest,
    DepthSet,
    LeaderboardRow,
    MetricContract,
    MetricRecord,
    ModelCost,
    RequestCost,
    RerankPlan,
    RerankResult,
    RetrievalPlan,
    RunManifest,
    ScoreSet,
    SharedPairs,
    VariantSet,
)
from terazi.schemas.measures import Measure, parse_measure
from terazi.schemas.records import Document, Judgment, Query, QueryVariant
from terazi.schemas.rerankers import (
    MODEL_KINDS,
    BiEncoderSpec,
    BM25Spec,
    CrossEncoderSpec,
    HttpRerankerSpec,
    LLMRerankerSpec,
    RerankerSpec,
    RRFSpec,
)
from terazi.schemas.scale import Limits, ScaleSpec
from terazi.schemas.statistics import Statistics

__all__ = [
    "AnalyzeConfig",
    "BUNDLED_ENCODER",
    "BM25Spec",
    "BenchmarkIdentity",
    "BiEncoderSpec",
    "CONDITIONS",
    "CandidateSet",
    "ChunkResult",
    "CorruptionSpec",
    "CrossEncoderSpec",
    "DatasetManifest",
    "DatasetSpec",
    "DepthSet",
    "Document",
    "EncoderSpec",
    "HttpRerankerSpec",
    "EvalConfig",
    "FIRST_STAGE",
    "FirstStageSpec",
    "Judgment",
    "LLMRerankerSpec",
    "LeaderboardRow",
    "ListwiseCost",
    "ListwiseSpec",
    "Limits",
    "MODEL_KINDS",
    "Measure",
    "MetricContract",
    "MetricRecord",
    "MobileSpec",
    "ModelCost",
    "Query",
    "QueryVariant",
    "RRFSpec",
    "RerankPlan",
    "RequestCost",
    "RerankResult",
    "RerankerSpec",
    "RetrievalPlan",
    "RunManifest",
    "ScaleSpec",
    "Statistics",
    "ScoreSet",
    "SharedPairs",
    "VariantPair",
    "VariantSet",
    "parse_measure",
]
