"""What crosses task boundaries: small manifests that point at files by path and fingerprint.

Heavy data (embeddings, candidate lists, scores) stays in terazi's own stores; Prefect only
ever sees these.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from terazi.schemas.first_stages import EncoderSpec
from terazi.schemas.listwise import ListwiseCost
from terazi.schemas.rerankers import RerankerSpec


class _Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatasetManifest(_Manifest):
    name: str
    path: str
    split: str
    task_type: str
    in_ranking: bool
    reason: str | None = Field(None, description="why the dataset is out of the ranking")
    language: str = Field("tur-Latn", description="the queries' language and script, as MTEB names them")
    source: str | None = Field(
        None,
        description="where a named dataset came from (hf:…, mteb:…, ir_datasets:…, with "
        "its revision); `path` is then terazi's BEIR copy of it",
    )
    fingerprint: str = Field(
        description="hash of the content: corpus, judged queries and the split's judgments, "
        "texts in Unicode NFC, and the queries' excluded_ids where any are given "
        "(ignore_identical_ids is a setting, recorded beside it and in the first "
        "stage's lookup key)"
    )
    corpus_fingerprint: str
    n_docs: int
    n_queries: int = Field(description="queries that have judgments in the split")
    n_judgments: int
    n_queries_without_relevant: int
    ignore_identical_ids: bool = Field(
        False,
        description="a document whose id equals the query's id is left out of "
        "every ranking (BEIR's and MTEB's convention)",
    )
    n_dropped: int = Field(
        0,
        description="(query, document) pairs every first stage leaves out: the queries' "
        "excluded_ids and, with ignore_identical_ids, identical ids",
    )


class VariantSet(_Manifest):
    """The query variants of one dataset under one condition."""

    dataset: str
    condition: str
    params: dict[str, float]
    seed: int
    samples: int
    path: str
    n_queries: int
    n_changed: int = Field(description="queries whose text changed in at least one sample")
    edit_rate: float | None = Field(
        None,
        description="effective character edits per letter of the originals, case ignored (terazi.corrupt.edit_rate)",
    )

    @property
    def share_changed(self) -> float:
        return self.n_changed / self.n_queries if self.n_queries else 0.0


class RequestCost(_Manifest):
    """What a row served over HTTP took in requests (`kind: http`): how many, how many were sent again, how long each
    answered one took."""

    requests: int = Field(0, description="requests answered with scores")
    retries: int = Field(
        0, description="requests sent again after a 429 or 5xx answer, a time-out or a dropped connection"
    )
    p50_ms: float | None = Field(None, description="median time from sending a request to its answer")
    p95_ms: float | None = Field(None, description="95th percentile of the same")


class ModelCost(_Manifest):
    """What a row costs to run: the model's size, and its warm speed measured inside the scoring calls (model loaded
    and warmed up first, score-cache reads and writes outside the timer)."""

    params: int | None = Field(None, description="parameters (None: no trained parameters, e.g. BM25)")
    size_bytes: int | None = Field(None, description="the model files it runs on disk (weights or ONNX file)")
    device: str | None = Field(None, description="cpu, cuda, mps")
    precision: str | None = Field(None, description="fp32, fp16, bf16 or int8")
    batch_size: int | None = Field(None, description="items per model batch used")
    unit: Literal["pairs", "texts"] = Field(
        "pairs", description="pairs scored (rerankers) or texts encoded (the first stage)"
    )
    items: int = Field(0, description="pairs scored (or texts encoded) inside the timer")
    seconds: float = Field(0.0, description="seconds spent in those calls")
    latency_p50_ms: float | None = Field(None, description="median time to score one query's rerank_depth candidates")
    latency_p95_ms: float | None = Field(None, description="95th percentile of the same")
    latency_queries: int = Field(0, description="queries timed one at a time for the latency")
    cached: bool = Field(
        False, description="nothing was scored in this run: the figures are those of the runs that scored the pairs"
    )
    requests: RequestCost | None = Field(None, description="a reranker served over HTTP: its requests")
    listwise: ListwiseCost | None = Field(None, description="a listwise reranker: its windows and their answers")

    @model_serializer(mode="wrap")
    def _requests_only_when_served(self, handler):
        """A row that is neither served nor listwise is written as before those fields existed."""
        body = handler(self)
        if isinstance(body, dict):
            for name in ("requests", "listwise"):
                if getattr(self, name) is None:
                    body.pop(name, None)
        return body

    @property
    def per_second(self) -> float | None:
        return self.items / self.seconds if self.items and self.seconds > 0 else None


class CandidateSet(_Manifest):
    """Frozen first-stage candidates for every variant of one dataset."""

    fingerprint: str = Field(description="hash of the manifest, candidate ids included")
    lookup_key: str = Field(description="hash of the inputs; finds the frozen set before retrieving")
    dataset: str
    dataset_fingerprint: str
    encoder: str
    encoder_identity: str
    index: dict[str, str | int]
    depth: int
    faiss_version: str
    path: str = Field(
        description="parquet: condition, sample, query_id, rank, doc_id, score (in the cache file: "
        "relative to the manifest's folder)"
    )
    trec_dir: str
    recall: dict[str, float] = Field(description="recall@depth of the first stage per condition")
    reused: bool
    queries_encoded: int
    docs_encoded: int
    seconds: float
    cost: ModelCost | None = Field(
        None, description="the encoder's size and warm encoding speed (texts/s) in the run that froze the candidates"
    )
    files: dict[str, str] = Field(
        default_factory=dict,
        description="SHA-256 of each frozen file, by its path relative to the manifest's folder; checked before use",
    )
    index_recall: float | None = Field(
        None, description="approximate index only: recall@depth against exact search on a sample of query variants"
    )
    index_recall_queries: int = Field(0, description="query variants in that sample")
    shards: int = Field(1, description="corpus shards the embeddings were encoded (and searched) in")
    ties: str = Field(
        "",
        description="the tie rule the lists were ranked by (trec: score, then document id "
        "descending); empty: frozen in FAISS's order, before terazi ranked by the rule",
    )
    ignore_identical_ids: bool = Field(False, description="a document whose id is the query's was left out")


class RetrievalPlan(_Manifest):
    """The first stage of one dataset cut into encoding shards; `frozen` is set when nothing needs computing."""

    dataset: str
    lookup_key: str
    folder: str = Field(description="the candidate set's folder in the cache")
    frozen: CandidateSet | None = None
    encoder: EncoderSpec
    encoder_identity: str = ""
    depth: int
    offline: bool
    corpus: str = Field("", description="corpus table (parquet) in the cache")
    corpus_shards: list[tuple[int, int]] = Field(default_factory=list, description="[start, stop) rows per shard")
    embeddings: str = Field("", description="folder of the corpus embedding shards")
    query_vectors: str = Field("", description="vector store the query texts' embeddings are kept in")
    queries: str = Field("", description="work folder: distinct query texts and their embedding shards")
    query_shards: list[tuple[int, int]] = Field(default_factory=list)
    started: float = 0.0


class RerankPlan(_Manifest):
    """One system's reranking of one dataset cut into chunks: what each chunk task needs, by path."""

    system: str
    dataset: str
    spec: RerankerSpec
    identity: str
    max_length: int
    candidates: str = Field(description="candidate fingerprint")
    candidates_path: str
    rerank_depth: int
    sweep_depth: int | None = Field(None, description="a depth sweep's deepest depth: its clean pairs are scored too")
    ties: str = Field("trec", description="how the head's tied scores are ordered (terazi.metrics.contracts.TIES)")
    corpus: str = Field(description="corpus table (parquet) in the cache")
    corpus_fingerprint: str
    cache_dir: str
    score_store: str | None
    offline: bool
    work: str = Field(description="folder of the pair table, the known scores and the work list")
    variants: list[str] = Field(
        default_factory=list, description="the query variants' parquet files (for the latency probe)"
    )
    block: int = Field(description="pairs per scoring call and store commit")
    chunks: list[tuple[int, int]] = Field(description="[start, stop) positions in the work list, one task each")
    needed: int
    unique: int
    cached: int
    started: float
    output: str = Field("", description="key of the ranking among the cache's stored outputs (terazi.store.derived)")
    stored: bool = Field(False, description="the ranking of these inputs is stored: no pair is read, none scored")
    listwise: ListwiseCost | None = Field(
        None, description="a listwise row whose ranking is stored: the answers it rests on, as that run counted them"
    )
    in_store: bool = Field(
        True,
        description="the scores go through the score store; False for a scorer cheaper to "
        "run than the store is to read and write (BM25): each chunk's scores "
        "are kept in the work folder for the ranking only",
    )


class ChunkResult(_Manifest):
    system: str
    dataset: str
    chunk: int
    pairs: int
    scored: int = Field(description="pairs this task scored (the rest were stored already, or by another run)")
    seconds: float
    cost: ModelCost | None = Field(
        None, description="warm speed inside this chunk's scoring calls (and, in the last chunk, the latency per query)"
    )


class RerankResult(_Manifest):
    """One system's ranking of one dataset's candidates, all conditions."""

    system: str
    dataset: str
    identity: str = Field(description="model identity used in the score cache")
    candidates: str = Field(description="candidate fingerprint")
    path: str = Field(description="parquet: condition, sample, query_id, rank, doc_id, score")
    rerank_depth: int | None = Field(
        None,
        description="the rescored head's depth, above the first stage's tail (None: "
        "no head, the first stage's own row or runs made elsewhere)",
    )
    pairs_needed: int = 0
    pairs_unique: int = 0
    pairs_cached: int = 0
    pairs_scored: int = 0
    seconds: float = 0.0
    cost: ModelCost | None = Field(
        None,
        description="size and warm speed of the row (this run's, or the figures of "
        "the run that scored the cached pairs)",
    )


class SharedPairs(_Manifest):
    """With several first stages: the pairs one model row rescores on one dataset, per first stage, shared by two or
    more of them (scored once: the store is keyed by the pair), and in all (what the row's scores cost)."""

    dataset: str
    system: str
    pairs: dict[str, int] = Field(description="distinct pairs per first stage")
    shared: int = Field(description="distinct pairs two or more first stages hold")
    unique: int = Field(description="distinct pairs of all first stages together: what the store holds for the row")


class DepthSet(_Manifest):
    """Per-query values of a depth sweep on one dataset's clean queries: a reranker's headline at each depth, or
    (system: the first stage) the ceiling, recall@depth and the oracle's headline."""

    system: str
    dataset: str
    path: str


class MetricContract(_Manifest):
    """The conventions a score was computed under; printed and stored beside every number."""

    measure: str
    contract: str = Field(
        "trec",
        description="the named contract (trec: trec_eval -c conventions, which BEIR-style "
        "candidate lists need: unjudged candidates count as irrelevant)",
    )
    cutoff: int
    gain: str
    relevance_threshold: int
    no_relevant: str
    missing_query: str
    extra_query: str
    unjudged: str
    zero_ideal: str = "score 0"
    ties: str = "score descending, then document id descending (trec_eval)"


class MetricRecord(_Manifest):
    """One per-query value (a row of per_query.parquet)."""

    dataset: str
    system: str
    condition: str
    query_id: str
    measure: str
    value: float
    changed: bool


class ScoreSet(_Manifest):
    """Per-query metrics of one system on one dataset, all conditions."""

    system: str
    dataset: str
    path: str
    contracts: list[MetricContract]


class LeaderboardRow(_Manifest):
    system: str
    borda_votes: float
    borda_rank: int
    mean_task: float | None
    mean_task_type: float | None
    group: int | None = Field(None, description="significance group (1 = top)")
    ci_low: float | None = None
    ci_high: float | None = None
    per_dataset: dict[str, float]
    per_condition: dict[str, float]
    retention: dict[str, float | None]


class BenchmarkIdentity(_Manifest):
    """What a run measured, so that runs of the same benchmark can be compared (and others cannot)."""

    name: str = Field(description="the config's benchmark name")
    fingerprint: str = Field(
        description="hash of every dataset's frozen candidate fingerprint: one 16-hex number "
        "for the benchmark's inputs (datasets, first stage, query variants)"
    )
    parts: dict[str, str] = Field(
        description="hash per part (datasets, first_stage, conditions, systems, metrics), "
        "to say which part changed between two runs"
    )


class RunManifest(BaseModel):
    """manifest.json of a results folder; written last, so its presence means the run completed."""

    model_config = ConfigDict(extra="forbid")

    terazi_version: str
    run_dir: str
    kind: Literal["cli", "ad-hoc", "nightly", "python"] = Field(description="what started the run")
    flow_run_id: str | None = None
    benchmark: BenchmarkIdentity
    started: str
    seconds: float
    config: dict
    datasets: list[DatasetManifest]
    variants: list[VariantSet]
    candidates: list[CandidateSet]
    reranks: list[RerankResult]
    scores: list[ScoreSet]
    leaderboard: list[LeaderboardRow]
    shared_pairs: list[SharedPairs] = Field(
        default_factory=list, description="several first stages only: the pairs they share, per model row and dataset"
    )

    @model_serializer(mode="wrap")
    def _shared_only_when_several(self, handler):
        """A run with one first stage is written as before the field existed."""
        body = handler(self)
        if isinstance(body, dict) and not self.shared_pairs:
            body.pop("shared_pairs", None)
        return body
