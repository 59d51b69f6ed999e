"""`EvalConfig`: every parameter of one evaluation, validated before any work starts; its sections that stand on
their own are in their modules (schemas/datasets.py, first_stages.py, rerankers.py, corruption.py, scale.py).

It is the flow's only parameter, so the Prefect UI renders it as a form with these defaults
and rejects bad values with pydantic's message.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_serializer, model_validator

from terazi.base.errors import FieldsError, MetricError
from terazi.base.paths import unique
from terazi.schemas.corruption import CorruptionSpec
from terazi.schemas.datasets import DatasetSpec
from terazi.schemas.fields import (
    BENCHMARK,
    CONDITIONS,
    FIRST_STAGE,
    Condition,
    MeasureName,
    SlugName,
    StrictModel,
)
from terazi.schemas.first_stages import EncoderSpec, FirstStageSpec
from terazi.schemas.measures import parse_measure
from terazi.schemas.rerankers import RerankerSpec, default_rerankers, loads_model
from terazi.schemas.scale import ScaleSpec
from terazi.schemas.statistics import Statistics
from terazi.schemas.tables import CLEAN


class VariantPair(StrictModel):
    """Two rows judged against each other, e.g. a model and its int8 copy: the headline difference on a seeded query
    subset with its paired-bootstrap interval, and the speed and size ratios."""

    base: SlugName = Field(description="the reference row, e.g. kalbur")
    variant: SlugName = Field(description="the row judged against it, e.g. kalbur-int8")
    label: str | None = Field(
        None,
        max_length=100,
        description="how the sentence names the variant, e.g. 'int8 sürüm' (default: 'VARIANT vs BASE')",
    )
    equivalence_margin: float | None = Field(
        None, ge=0, description="δ of this pair's equivalence test (default: the config's equivalence_margin)"
    )


LEAKAGE = (
    "leakage output folder (`terazi leakage --out`): every headline is also reported without the queries it "
    "lists for each dataset, beside the full one, with the paired interval of the difference "
    "(leak_free.csv)"
)
LEAKAGE_BY = (
    "queries: leave out the contaminated queries (n-gram hits and repeats: <dataset>/queries.txt); "
    "relevant: also the judged queries whose relevant passage is hit (relevant_hit.txt)"
)


TIES = (
    "how a ranking made from scores orders tied documents, part of the metric contract printed with every table: "
    "trec = score, then document id descending, as trec_eval, pytrec_eval, BEIR and MTEB do (every first stage "
    "ranks so); first-stage = a reranked head keeps tied documents in first-stage order (trec tools reading its "
    "run files then break those ties by document id instead)"
)


RERANK_DEPTHS = (
    "depth sweep, e.g. [10, 20, 30, 50, 100] (each ≤ depth; rerank_depth is added): the clean queries' "
    "top max(rerank_depths) are scored once and every depth is ranked from those scores, with the "
    "first stage's ceiling at each depth (depths.csv, ceiling.csv); default: no sweep"
)


FIRST_STAGES = (
    "named first stages, e.g. [{name: dense, kind: dense}, {name: bm25, kind: bm25}]: every reranker "
    "reranks each one's candidates (shared pairs scored once); the first one's results fill the results "
    "folder, each other's first-stages/<name>/, and protocol.csv says whether the rerankers' order holds; "
    "default: the dense `encoder:` alone"
)


def measures(config: object) -> None:
    """Every measure of `config` (EvalConfig, AnalyzeConfig) read, its bad one named by its field; the headline added
    to the metrics."""
    for i, m in enumerate(config.metrics):
        try:
            parse_measure(m)
        except MetricError as e:
            raise FieldsError(f"metrics.{i}", str(e)) from None
    try:
        parse_measure(config.headline)
    except MetricError as e:
        raise FieldsError("headline", str(e)) from None
    if config.headline not in config.metrics:
        config.metrics = [config.headline, *config.metrics]


OLD_SPELLINGS = {"exclude": "leakage", "exclude_by": "leakage_by"}  # read still, with a deprecation line
log = logging.getLogger("terazi.config")


def renamed_fields(data: object) -> object:
    """A config written with a field's old name (`exclude`, `exclude_by`: the leakage check's spellings before it was
    called leakage everywhere) read under the new one, said in one deprecation line; both names at once is an error."""
    if not isinstance(data, dict):
        return data
    for old, new in OLD_SPELLINGS.items():
        if old in data:
            if new in data:
                raise ValueError(f"{old} and {new} both given: {old} is the old name of {new}; keep {new}")
            log.warning("config: `%s` is deprecated, read as `%s` (write `%s` from now on)", old, new, new)
            data = {**{k: v for k, v in data.items() if k != old}, new: data[old]}
    return data


def omit_unset_leakage(model: object, body: object) -> object:
    """A config without `leakage` (or `rerank_depths`) is written as it was before the field existed (a run's
    manifest unchanged)."""
    if isinstance(body, dict) and getattr(model, "leakage", None) is None:
        body.pop("leakage", None)
        body.pop("leakage_by", None)
    for name in ("rerank_depths", "first_stages"):
        if isinstance(body, dict) and getattr(model, name, 0) is None:
            body.pop(name, None)
    return body


class Evaluated(StrictModel):
    """What one evaluation weighs: the benchmark, its datasets, first stages and rerankers, the conditions and the
    measures (`EvalConfig`'s first fields; how differences are judged follows them: `Statistics`)."""

    benchmark: str = Field(
        "terazi",
        pattern=BENCHMARK,
        description="name of the benchmark (lowercase letters, digits, '-'): the nightly compares "
        "runs of the same benchmark, and Prefect artifact keys start with it",
    )
    datasets: list[DatasetSpec] = Field(
        min_length=1, description="datasets to evaluate on: BEIR folders or named datasets (hf:, mteb:, ir_datasets:)"
    )
    encoder: EncoderSpec = Field(default_factory=EncoderSpec, description="first-stage dense retrieval")
    first_stages: list[FirstStageSpec] | None = Field(None, min_length=1, description=FIRST_STAGES)
    rerankers: list[RerankerSpec] = Field(
        default_factory=default_rerankers,
        description="rows of the leaderboard besides the first stage; each entry's 'kind' decides its fields",
    )
    conditions: list[Condition] = Field(
        default_factory=lambda: [CLEAN, "upper", "ascii_full", "mobile", "typo"],
        description="query conditions; 'clean' is always included",
    )
    corruption: CorruptionSpec = Field(default_factory=CorruptionSpec, description="parameters of the corruptions")
    candidates: dict[str, str] = Field(
        default_factory=dict, description="dataset name → frozen candidate fingerprint to reuse as it is"
    )
    depth: int = Field(100, ge=1, description="first-stage candidates per query")
    rerank_depth: int = Field(
        30, ge=1, description="candidates each reranker rescores (≤ depth): the leaderboard's depth"
    )
    rerank_depths: list[int] | None = Field(None, min_length=1, description=RERANK_DEPTHS)
    metrics: list[MeasureName] = Field(default_factory=lambda: ["nDCG@10", "RR@10"], description="measures per query")
    ties: Literal["trec", "first-stage"] = Field("trec", description=TIES)
    headline: MeasureName = Field("nDCG@10", description="measure of the leaderboard (added to metrics)")
    borda: Literal["per-task", "mteb"] = Field(
        "per-task",
        description="Borda count: per-task = N is the systems evaluated on each task (the ranking note); "
        "mteb = N is every system with any result (MTEB's code)",
    )


class EvalConfig(Statistics, Evaluated):
    """Everything one evaluation needs. The same defaults hold for the CLI, config files, the deployment
    form and Python; the method they reproduce is described in docs/method.md."""

    retention: Literal["macro", "pooled"] = Field(
        "macro",
        description="how retention (corrupted / clean over the queries a condition changed) combines "
        "datasets: macro = mean over ranked datasets of each dataset's ratio (the Kalbur card's "
        "Koruma); pooled = ratio of the dataset-balanced means",
    )
    robustness: Literal["end-to-end", "both"] = Field(
        "both",
        description="end-to-end: corrupted queries go through the first stage and the reranker (the card's "
        "setting); both: also the isolated setting, each reranker reordering the clean query's "
        "candidates with the corrupted text, so the reranker's loss is told apart from the first "
        "stage's (costs the pairs not already scored end to end)",
    )
    featured: SlugName | None = Field(
        None,
        description="system whose significant cells against every other system "
        "are listed with their deltas (default: the top system)",
    )
    labels: Literal["en", "tr"] = Field(
        "en",
        description="display labels of conditions and columns: en = the "
        "condition names; tr = Temiz, BÜYÜK HARF, Türkçe karaktersiz, "
        "Mobil, Koruma, … as in the Kalbur card",
    )
    variants: list[VariantPair] = Field(
        default_factory=list,
        description="pairs of rows to judge against each other "
        "(a model and its int8 or ONNX copy): "
        "difference, interval, speed and size ratio",
    )
    subset: int | None = Field(
        1000,
        ge=2,
        description="judged variants: seeded sample of this many clean queries of "
        "the ranked datasets (all of them when fewer; none: all)",
    )
    task_runner: Literal["thread", "dask", "ray"] = Field(
        "thread", description="where model tasks run: threads in this process, a Dask cluster or a Ray cluster"
    )
    task_runner_workers: int = Field(2, ge=1, description="local Dask workers (when no address is given)")
    task_runner_address: str | None = Field(
        None,
        description="existing Dask scheduler or Ray cluster address (a served deployment accepts only its server's)",
    )
    scale: ScaleSpec = Field(default_factory=ScaleSpec, description="shards, chunks and the shared score store")
    out_dir: str = Field(
        "results",
        description="results folder: absolute, or relative to the folder terazi runs "
        "in (a served deployment keeps it inside its results root)",
    )
    cache_dir: str = Field(
        ".terazi-cache",
        description="cache folder (frozen candidates, embeddings, the score cache): absolute, or relative like out_dir",
    )
    run_name: SlugName | None = Field(None, description="results sub-folder; default: a UTC time stamp")
    offline: bool = Field(False, description="never contact a model hub")
    leakage: str | None = Field(None, description=LEAKAGE)
    leakage_by: Literal["queries", "relevant"] = Field("queries", description=LEAKAGE_BY)

    _old_spellings = model_validator(mode="before")(renamed_fields)

    @model_serializer(mode="wrap")
    def _leakage_only_when_set(self, handler):
        return omit_unset_leakage(self, handler(self))

    @field_validator("conditions", mode="before")
    @classmethod
    def _known_conditions(cls, v: object) -> object:
        if isinstance(v, list):
            unknown = [c for c in v if not isinstance(c, str) or any(p not in CONDITIONS for p in c.split("+"))]
            if unknown:
                raise ValueError(f"unknown condition(s) {unknown}; known: {list(CONDITIONS)}, composable with '+'")
            return list(dict.fromkeys([CLEAN, *v] if CLEAN not in v else v))
        return v

    @model_validator(mode="after")
    def _consistent(self) -> EvalConfig:
        measures(self)
        if self.rerank_depth > self.depth:
            raise FieldsError(
                ("rerank_depth", "depth"), f"rerank_depth ({self.rerank_depth}) exceeds depth ({self.depth})"
            )
        if self.rerank_depths is not None:
            if min(self.rerank_depths) < 1 or max(self.rerank_depths) > self.depth:
                raise FieldsError(
                    ("rerank_depths", "depth"),
                    f"rerank_depths {self.rerank_depths} must lie in 1..depth ({self.depth})",
                )
            self.rerank_depths = sorted({*self.rerank_depths, self.rerank_depth})
        given = [d.name for d in self.datasets if d.name]
        if len({n.lower() for n in given}) != len(given):
            raise FieldsError("datasets", f"dataset names must be unique, got {given}")
        derived = unique(given + [d.label for d in self.datasets if not d.name])[len(given) :]
        for d in (d for d in self.datasets if not d.name):
            d.name = derived.pop(0)
        labels = [d.label for d in self.datasets]
        both = [d.label for d in self.datasets if d.first_stage_runs and d.label in self.candidates]
        if both:
            raise FieldsError(
                ("candidates", "datasets"),
                f"dataset(s) {both} have both frozen candidates and first_stage_runs: choose one",
            )
        stages = [s.name for s in self.first_stages or []]
        if len({n.lower() for n in stages}) != len(stages):
            raise FieldsError("first_stages", f"first stage names must be unique, got {stages}")
        lexical = any(s.kind == "bm25" for s in self.first_stages or [])
        if lexical and (self.candidates or any(d.first_stage_runs for d in self.datasets)):
            raise FieldsError(
                ("first_stages", "candidates" if self.candidates else "datasets"),
                "a bm25 first stage retrieves its own candidates; drop `candidates` and the datasets' "
                "first_stage_runs, or the bm25 first stage",
            )
        stray = [k for k in self.candidates if k not in labels]
        if stray:
            raise FieldsError("candidates", f"candidates given for unknown dataset(s) {stray}; datasets: {labels}")
        names = [r.name for r in self.rerankers]
        if len({n.lower() for n in names}) != len(names):
            raise FieldsError("rerankers", f"reranker names must be unique, got {names}")
        earlier = {FIRST_STAGE}  # a fusion can only use rows listed before it
        for i, r in enumerate(self.rerankers):
            missing = [f for f in getattr(r, "fuse", []) if f not in earlier]
            if missing:
                raise FieldsError(
                    f"rerankers.{i}.fuse",
                    f"reranker {r.name!r} fuses {missing}: fuse only first-stage or rows listed above it",
                )
            earlier.add(r.name)
        for i, v in enumerate(self.variants):
            unknown = [n for n in (v.base, v.variant) if n not in earlier]
            if unknown or v.base == v.variant:
                raise FieldsError(
                    f"variants.{i}",
                    f"{v.variant!r} vs {v.base!r} must name two different rows; rows: {sorted(earlier)}",
                )
        if self.featured is not None and self.featured not in earlier:
            raise FieldsError(
                "featured",
                f"featured system {self.featured!r} is not a row of the leaderboard; rows: {sorted(earlier)}",
            )
        return self

    @property
    def first_stage(self) -> FirstStageSpec:
        """The run's (first) first stage: the first of `first_stages`, or the dense `encoder:`."""
        return self.stages[0]

    @property
    def stages(self) -> list[FirstStageSpec]:
        """Every first stage, in order: `first_stages`, or the dense `encoder:` alone."""
        return self.first_stages or [FirstStageSpec(name=FIRST_STAGE, kind="dense")]

    def alone(self, stage: FirstStageSpec) -> EvalConfig:
        """This config with `stage` as its only first stage: what one first stage's results are built with."""
        return self.model_copy(update={"first_stages": [stage]})

    @property
    def sweep_depth(self) -> int | None:
        """The deepest depth of the sweep (its pairs are scored once, clean queries), None without a sweep."""
        return max(self.rerank_depths) if self.rerank_depths else None

    def models(self) -> list[tuple[str, str, str | None, bool]]:
        """(where in the config, model, revision, trust_remote_code) of every model the run loads."""
        out = [("encoder", self.encoder.model, self.encoder.revision, self.encoder.trust_remote_code)]
        out += [
            (f"first_stages.{f.name}.encoder", f.encoder.model, f.encoder.revision, f.encoder.trust_remote_code)
            for f in self.first_stages or []
            if f.encoder
        ]
        out += [
            (f"rerankers.{r.name}", r.model, r.revision, r.trust_remote_code) for r in self.rerankers if loads_model(r)
        ]
        return out

    def folders(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """(what the run writes, the folders it reads) for `terazi.base.paths.disjoint`: outputs never overlap inputs.
        Without a run name the results folder is a new time-stamped one under out_dir."""
        outputs = [
            ("results folder", str(Path(self.out_dir) / (self.run_name or "<time stamp>"))),
            ("cache folder", self.cache_dir),
        ]
        inputs = [("dataset folder", d.folder) for d in self.datasets if d.folder]
        inputs += [("first-stage runs folder", d.first_stage_runs) for d in self.datasets if d.first_stage_runs]
        return outputs, inputs + ([("leakage folder", self.leakage)] if self.leakage else [])
