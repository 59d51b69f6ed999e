"""`EvalConfig`: every parameter of one evaluation, validated before any work starts.

It is the flow's only parameter, so the Prefect UI renders it as a form with these defaults
and rejects bad values with pydantic's message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

BUNDLED_ENCODER = "bundled:all-MiniLM-L6-v2"
CONDITIONS = ("clean", "upper", "ascii_full", "ascii_partial", "typo", "colloquial", "mobile")
FIRST_STAGE = "first-stage"


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DatasetSpec(_Config):
    """A BEIR-format folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv."""

    path: str = Field(description="BEIR folder (absolute, or relative to where terazi runs)")
    name: str | None = Field(None, description="label in the leaderboard; default: folder name")
    split: str = "test"
    task_type: str = Field("retrieval", description="groups datasets for Mean (TaskType)")
    in_ranking: bool = Field(True, description="False: shown in the results, not aggregated")

    @property
    def label(self) -> str:
        return self.name or Path(self.path).name


class EncoderSpec(_Config):
    """The first-stage dense encoder and its FAISS index."""

    model: str = Field(BUNDLED_ENCODER, description="HF id, local path, or 'bundled:all-MiniLM-L6-v2'")
    revision: str | None = None
    batch_size: int = Field(32, ge=1)
    max_length: int | None = Field(None, ge=8)
    query_prefix: str = ""
    document_prefix: str = ""
    device: str = "auto"
    index: Literal["flat", "hnsw", "ivf", "auto"] = Field(
        "flat", description="flat = exact; auto = exact up to 500k documents, HNSW above")
    hnsw_m: int = Field(32, ge=4)
    hnsw_ef_search: int = Field(256, ge=1)
    ivf_nlist: int = Field(256, ge=1)
    ivf_nprobe: int = Field(16, ge=1)
    trust_remote_code: bool = False


class RerankerSpec(_Config):
    """One reranker row. `kind` picks the backend; `rrf` fuses the rankings of other rows."""

    name: str = Field(min_length=1, description="row label in the leaderboard")
    kind: Literal["cross-encoder", "bi-encoder", "bm25", "rrf"]
    model: str | None = Field(None, description="HF id or local path (cross-encoder, bi-encoder)")
    revision: str | None = None
    max_length: int | None = Field(256, ge=8)
    batch_size: int = Field(32, ge=1)
    device: str = "auto"
    trust_remote_code: bool = False
    language: str = Field("turkish", description="bm25: Snowball stemmer and casing rules")
    k1: float = Field(1.5, gt=0)
    b: float = Field(0.75, ge=0, le=1)
    fuse: list[str] = Field(default_factory=list, description="rrf: rows to fuse, e.g. first-stage")
    rrf_k: int = Field(60, ge=1)

    @model_validator(mode="after")
    def _backend_needs(self) -> RerankerSpec:
        if self.kind in ("cross-encoder", "bi-encoder") and not self.model:
            raise ValueError(f"reranker {self.name!r}: kind {self.kind} needs a model")
        if self.kind == "rrf" and len(self.fuse) < 2:
            raise ValueError(f"reranker {self.name!r}: rrf needs at least two rows in 'fuse'")
        if self.name == FIRST_STAGE:
            raise ValueError(f"{FIRST_STAGE!r} is the name of the first-stage row")
        return self


class CorruptionSpec(_Config):
    """Parameters of the query corruptions (see terazi.corrupt)."""

    samples: int = Field(1, ge=1, description="seeded samples per query for stochastic conditions")
    typo_rate: float = Field(0.15, gt=0, le=1)
    ascii_partial_rate: float = Field(0.5, gt=0, le=1)
    mobile_slip_rate: float = Field(0.05, ge=0, le=1)


class EvalConfig(_Config):
    """Everything one evaluation needs; defaults reproduce the method in METHOD.md."""

    datasets: list[DatasetSpec] = Field(min_length=1)
    encoder: EncoderSpec = Field(default_factory=EncoderSpec)
    rerankers: list[RerankerSpec] = Field(default_factory=list)
    conditions: list[str] = Field(default_factory=lambda: ["clean", "upper", "ascii_full", "mobile", "typo"])
    corruption: CorruptionSpec = Field(default_factory=CorruptionSpec)
    candidates: dict[str, str] = Field(default_factory=dict,
                                       description="dataset label → frozen candidate fingerprint to reuse as it is")
    depth: int = Field(100, ge=1, description="first-stage candidates per query")
    rerank_depth: int = Field(30, ge=1, description="candidates each reranker rescores")
    metrics: list[str] = Field(default_factory=lambda: ["nDCG@10", "RR@10"])
    headline: str = Field("nDCG@10", description="metric of the leaderboard")
    borda: Literal["per-task", "mteb"] = Field(
        "per-task", description="Borda count: per-task = N is the systems evaluated on each task (the ranking note); "
                                "mteb = N is every system with any result (MTEB's code)")
    seed: int = 13
    bootstrap_resamples: int = Field(2000, ge=100, description="paired bootstrap resamples")
    confidence: float = Field(0.95, gt=0.5, lt=1)
    holm: bool = Field(False, description="Holm correction across the cells of each pairwise comparison")
    task_runner: Literal["thread", "dask", "ray"] = Field("thread", description="where model tasks run")
    task_runner_workers: int = Field(2, ge=1, description="local Dask workers (when no address is given)")
    task_runner_address: str | None = Field(None, description="existing Dask scheduler or Ray cluster address")
    out_dir: str = "results"
    cache_dir: str = ".terazi-cache"
    run_name: str | None = Field(None, description="results sub-folder; default: time stamp")
    offline: bool = Field(False, description="never contact a model hub")

    @field_validator("conditions")
    @classmethod
    def _known_conditions(cls, v: list[str]) -> list[str]:
        unknown = [c for c in v if any(p not in CONDITIONS for p in c.split("+"))]
        if unknown:
            raise ValueError(f"unknown condition(s) {unknown}; known: {list(CONDITIONS)}, composable with '+'")
        if "clean" not in v:
            v = ["clean", *v]
        return list(dict.fromkeys(v))

    @model_validator(mode="after")
    def _consistent(self) -> EvalConfig:
        from terazi.metrics import parse_measure

        for m in [*self.metrics, self.headline]:
            parse_measure(m)
        if self.headline not in self.metrics:
            self.metrics = [self.headline, *self.metrics]
        if self.rerank_depth > self.depth:
            raise ValueError(f"rerank_depth ({self.rerank_depth}) exceeds depth ({self.depth})")
        labels = [d.label for d in self.datasets]
        if len(set(labels)) != len(labels):
            raise ValueError(f"dataset labels must be unique, got {labels}")
        stray = [k for k in self.candidates if k not in labels]
        if stray:
            raise ValueError(f"candidates given for unknown dataset(s) {stray}; datasets: {labels}")
        names = [r.name for r in self.rerankers]
        if len(set(names)) != len(names):
            raise ValueError(f"reranker names must be unique, got {names}")
        earlier = {FIRST_STAGE}  # a fusion can only use rows listed before it
        for r in self.rerankers:
            missing = [f for f in r.fuse if f not in earlier]
            if missing:
                raise ValueError(f"reranker {r.name!r} fuses {missing}: fuse only first-stage or rows listed above it")
            earlier.add(r.name)
        return self
