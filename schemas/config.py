"""`EvalConfig`: every parameter of one evaluation, validated before any work starts.

It is the flow's only parameter, so the Prefect UI renders it as a form with these defaults
and rejects bad values with pydantic's message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from terazi.paths import SLUG, SLUG_HELP, is_slug, slugify, unique

BUNDLED_ENCODER = "bundled:all-MiniLM-L6-v2"
CONDITIONS = ("clean", "upper", "ascii_full", "ascii_partial", "typo", "colloquial", "mobile")
FIRST_STAGE = "first-stage"


def _slug(v: str) -> str:
    if not is_slug(v):
        raise ValueError(f"{v!r} is not a safe name: use {SLUG_HELP}")
    return v


SlugName = Annotated[str, AfterValidator(_slug),
                     Field(json_schema_extra={"pattern": SLUG}, description=f"a name used in file names: {SLUG_HELP}")]
CONDITION_PATTERN = r"^(" + "|".join(CONDITIONS) + r")(\+(" + "|".join(CONDITIONS) + r"))*$"
Condition = Annotated[str, Field(pattern=CONDITION_PATTERN, description="one of " + ", ".join(CONDITIONS)
                                 + "; compose with '+', e.g. upper+typo", examples=["upper", "upper+typo"])]
Measure = Annotated[str, Field(min_length=2, description="a measure with its cutoff, e.g. nDCG@10, RR@10, R@100, "
                               "P@10, AP, Judged@10; RR(rel=2)@10 sets the relevance threshold",
                               examples=["nDCG@10", "RR@10", "R@100"])]


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DatasetSpec(_Config):
    """A BEIR-format folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv."""

    path: str = Field(description="BEIR folder: absolute, or relative to the folder terazi runs in (for a served "
                                  "deployment: the folder `terazi serve` was started in)")
    name: SlugName | None = Field(None, description="label in the leaderboard and folder name in the results; "
                                                    "default: the folder's name, made safe and unique")
    split: SlugName = Field("test", description="qrels split: reads qrels/<split>.tsv")
    task_type: str = Field("retrieval", max_length=100, description="groups datasets for Mean (TaskType)")
    in_ranking: bool = Field(True, description="False: shown in the results, not aggregated")

    @property
    def label(self) -> str:
        """The dataset's name; EvalConfig fills it in from the folder name when it is not given."""
        return self.name or slugify(Path(self.path).resolve().name)


class EncoderSpec(_Config):
    """The first-stage dense encoder and its FAISS index."""

    model: str = Field(BUNDLED_ENCODER, description="Hugging Face id, absolute local folder, or "
                                                    f"'{BUNDLED_ENCODER}' (shipped with terazi, works offline)")
    revision: str | None = Field(None, description="hub revision (commit, tag or branch) to pin")
    batch_size: int = Field(32, ge=1, description="texts per encoding batch")
    max_length: int | None = Field(None, ge=8, description="tokens per text; default: the model's own")
    query_prefix: str = Field("", description="prepended to every query, e.g. 'query: ' for E5 models")
    document_prefix: str = Field("", description="prepended to every document, e.g. 'passage: '")
    device: str = Field("auto", description="auto (CUDA when present), cpu, cuda, cuda:1, mps")
    index: Literal["flat", "hnsw", "ivf", "auto"] = Field(
        "flat", description="flat = exact (searched shard by shard); auto = exact up to 2M documents, HNSW above; "
                            "an approximate index's recall against exact search is measured and recorded")
    hnsw_m: int = Field(32, ge=4, description="HNSW: neighbours per node")
    hnsw_ef_search: int = Field(256, ge=1, description="HNSW: search breadth")
    ivf_nlist: int | None = Field(None, ge=1, description="IVF: number of lists; default 4·√(documents)")
    ivf_nprobe: int = Field(16, ge=1, description="IVF: lists searched per query")
    trust_remote_code: bool = Field(False, description="run the model's own code from its repository; a served "
                                                       "deployment refuses it unless its server allows it")


class _Reranker(_Config):
    name: SlugName = Field(description="row label in the leaderboard (also a file name)")

    @field_validator("name")
    @classmethod
    def _not_first_stage(cls, v: str) -> str:
        if v == FIRST_STAGE:
            raise ValueError(f"{FIRST_STAGE!r} is the name of the first-stage row")
        return v


class _ModelReranker(_Reranker):
    model: str = Field(min_length=1, description="Hugging Face id or absolute local folder")
    revision: str | None = Field(None, description="hub revision (commit, tag or branch) to pin")
    batch_size: int = Field(32, ge=1, description="pairs per model batch")
    device: str = Field("auto", description="auto (CUDA when present), cpu, cuda, cuda:1, mps")
    trust_remote_code: bool = Field(False, description="run the model's own code from its repository; a served "
                                                       "deployment refuses it unless its server allows it")


class CrossEncoderSpec(_ModelReranker):
    """A sentence-transformers CrossEncoder scores each (query, passage) pair."""

    kind: Literal["cross-encoder"] = Field(description="cross-encoder")
    max_length: int | None = Field(256, ge=8, description="tokens per (query, passage) pair")


class BiEncoderSpec(_ModelReranker):
    """A sentence-transformers bi-encoder: cosine of query and passage embeddings."""

    kind: Literal["bi-encoder"] = Field(description="bi-encoder")
    max_length: int | None = Field(256, ge=8, description="tokens per text")


class BM25Spec(_Reranker):
    """BM25 over the candidates, with Turkish casing, Snowball stems and ASCII folding."""

    kind: Literal["bm25"] = Field(description="bm25")
    language: str = Field("turkish", pattern=r"^[a-z]+$", description="Snowball stemmer and casing rules")
    k1: float = Field(1.5, gt=0, description="term-frequency saturation")
    b: float = Field(0.75, ge=0, le=1, description="length normalisation")


class RRFSpec(_Reranker):
    """Reciprocal-rank fusion of the rankings of rows listed above it (or first-stage)."""

    kind: Literal["rrf"] = Field(description="rrf")
    fuse: list[SlugName] = Field(min_length=2, description="rows to fuse: first-stage or rows listed above")
    rrf_k: int = Field(60, ge=1, description="k in 1 / (k + rank)")


RerankerSpec = Annotated[Union[CrossEncoderSpec, BiEncoderSpec, BM25Spec, RRFSpec], Field(discriminator="kind")]
MODEL_KINDS = ("cross-encoder", "bi-encoder")


def default_rerankers() -> list:
    """The rows every entry point runs unless told otherwise: lexical BM25 and its fusion with the first stage."""
    return [BM25Spec(name="bm25-tr", kind="bm25"), RRFSpec(name="hybrid-rrf", kind="rrf", fuse=[FIRST_STAGE, "bm25-tr"])]


class ScaleSpec(_Config):
    """How the heavy stages are cut into tasks (so W workers run W at once), and where workers share scores."""

    shard_size: int = Field(65536, ge=1, description="documents per corpus-encoding task (a contiguous block); "
                                                     "multiples of 2048 encode the same blocks as one task would")
    query_shard_size: int = Field(65536, ge=1, description="distinct query texts per query-encoding task")
    chunk_pairs: int = Field(50_000, ge=1, description="pairs per reranking task, rounded up to whole scoring blocks "
                                                       "(8 batches); the chunking never changes a score")
    worker_resources: dict[str, float] = Field(default_factory=dict, description="resources every model task needs on "
                                               "a Dask or Ray worker, e.g. {GPU: 1}: Dask workers started with "
                                               "`--resources GPU=1`, Ray nodes with GPUs")
    score_store: str | None = Field(None, description="score store shared by workers on several machines: a folder or "
                                                      "an fsspec URL (e.g. s3://bucket/terazi-scores); the local cache "
                                                      "stays the fast path (a served deployment accepts only its "
                                                      "server's)")


class CorruptionSpec(_Config):
    """Parameters of the query corruptions (see terazi.corrupt)."""

    samples: int = Field(1, ge=1, description="seeded samples per query for stochastic conditions")
    typo_rate: float = Field(0.15, gt=0, le=1)
    ascii_partial_rate: float = Field(0.5, gt=0, le=1)
    mobile_slip_rate: float = Field(0.05, ge=0, le=1)


BENCHMARK = r"^[a-z0-9][a-z0-9-]{0,62}$"


class EvalConfig(_Config):
    """Everything one evaluation needs. The same defaults hold for the CLI, config files, the deployment
    form and Python; the method they reproduce is described in docs/method.md."""

    benchmark: str = Field("terazi", pattern=BENCHMARK,
                           description="name of the benchmark (lowercase letters, digits, '-'): the nightly compares "
                                       "runs of the same benchmark, and Prefect artifact keys start with it")
    datasets: list[DatasetSpec] = Field(min_length=1, description="BEIR folders to evaluate on")
    encoder: EncoderSpec = Field(default_factory=EncoderSpec, description="first-stage dense retrieval")
    rerankers: list[RerankerSpec] = Field(default_factory=default_rerankers,
                                          description="rows of the leaderboard besides the first stage; each entry's "
                                                      "'kind' decides its fields")
    conditions: list[Condition] = Field(default_factory=lambda: ["clean", "upper", "ascii_full", "mobile", "typo"],
                                        description="query conditions; 'clean' is always included")
    corruption: CorruptionSpec = Field(default_factory=CorruptionSpec, description="parameters of the corruptions")
    candidates: dict[str, str] = Field(default_factory=dict,
                                       description="dataset name → frozen candidate fingerprint to reuse as it is")
    depth: int = Field(100, ge=1, description="first-stage candidates per query")
    rerank_depth: int = Field(30, ge=1, description="candidates each reranker rescores (≤ depth)")
    metrics: list[Measure] = Field(default_factory=lambda: ["nDCG@10", "RR@10"], description="measures per query")
    headline: Measure = Field("nDCG@10", description="measure of the leaderboard (added to metrics)")
    seed: int = Field(13, description="seed of the corruptions and the bootstrap")
    bootstrap_resamples: int = Field(2000, ge=100, description="paired bootstrap resamples")
    confidence: float = Field(0.95, gt=0.5, lt=1, description="level of the intervals")
    holm: bool = Field(False, description="Holm correction across the cells of each pairwise comparison")
    task_runner: Literal["thread", "dask", "ray"] = Field("thread", description="where model tasks run: threads in "
                                                          "this process, a Dask cluster or a Ray cluster")
    task_runner_workers: int = Field(2, ge=1, description="local Dask workers (when no address is given)")
    task_runner_address: str | None = Field(None, description="existing Dask scheduler or Ray cluster address "
                                                              "(a served deployment accepts only its server's)")
    scale: ScaleSpec = Field(default_factory=ScaleSpec, description="shards, chunks and the shared score store")
    out_dir: str = Field("results", description="results folder: absolute, or relative to the folder terazi runs "
                                                "in (a served deployment keeps it inside its results root)")
    cache_dir: str = Field(".terazi-cache", description="frozen candidates, embeddings and the score cache: "
                                                       "absolute or relative like out_dir")
    run_name: SlugName | None = Field(None, description="results sub-folder; default: a UTC time stamp")
    offline: bool = Field(False, description="never contact a model hub")

    @field_validator("conditions", mode="before")
    @classmethod
    def _known_conditions(cls, v: object) -> object:
        if isinstance(v, list):
            unknown = [c for c in v if not isinstance(c, str) or any(p not in CONDITIONS for p in c.split("+"))]
            if unknown:
                raise ValueError(f"unknown condition(s) {unknown}; known: {list(CONDITIONS)}, composable with '+'")
            return list(dict.fromkeys(["clean", *v] if "clean" not in v else v))
        return v

    @model_validator(mode="after")
    def _consistent(self) -> EvalConfig:
        from terazi.metrics import parse_measure

        for m in [*self.metrics, self.headline]:
            parse_measure(m)
        if self.headline not in self.metrics:
            self.metrics = [self.headline, *self.metrics]
        if self.rerank_depth > self.depth:
            raise ValueError(f"rerank_depth ({self.rerank_depth}) exceeds depth ({self.depth})")
        given = [d.name for d in self.datasets if d.name]
        if len({n.lower() for n in given}) != len(given):
            raise ValueError(f"dataset names must be unique, got {given}")
        derived = unique(given + [d.label for d in self.datasets if not d.name])[len(given):]
        for d in (d for d in self.datasets if not d.name):
            d.name = derived.pop(0)
        labels = [d.label for d in self.datasets]
        stray = [k for k in self.candidates if k not in labels]
        if stray:
            raise ValueError(f"candidates given for unknown dataset(s) {stray}; datasets: {labels}")
        names = [r.name for r in self.rerankers]
        if len({n.lower() for n in names}) != len(names):
            raise ValueError(f"reranker names must be unique, got {names}")
        earlier = {FIRST_STAGE}  # a fusion can only use rows listed before it
        for r in self.rerankers:
            missing = [f for f in getattr(r, "fuse", []) if f not in earlier]
            if missing:
                raise ValueError(f"reranker {r.name!r} fuses {missing}: fuse only first-stage or rows listed above it")
            earlier.add(r.name)
        return self

    def models(self) -> list[tuple[str, str, str | None, bool]]:
        """(where in the config, model, revision, trust_remote_code) of every model the run loads."""
        out = [("encoder", self.encoder.model, self.encoder.revision, self.encoder.trust_remote_code)]
        out += [(f"rerankers.{r.name}", r.model, r.revision, r.trust_remote_code)
                for r in self.rerankers if r.kind in MODEL_KINDS]
        return out
