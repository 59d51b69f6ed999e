"""The leakage check's contracts: a training source, how to check, the flow's config (`terazi-leakage`) and the small
manifest it returns. The check itself is terazi.leakage; these live here so that a config (the flow's parameter,
a YAML file) can hold them without the contracts importing the core."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from terazi.base.amounts import Range
from terazi.base.errors import ConfigError, describe
from terazi.base.paths import unique
from terazi.schemas.datasets import DatasetSpec
from terazi.schemas.fields import StrictModel
from terazi.schemas.sources import parse as parse_source

QUERY_NAMES = frozenset({"query", "question", "queries", "questions", "anchor"})
LOCAL_HF = ("/", ".", "~")  # an hf: name starting so is a folder on this machine


class TrainSource(BaseModel):
    """One training source as a config gives it (`{path: …, fields: […], queries: […]}`) or a command line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(
        min_length=1,
        description="training source: a .jsonl/.ndjson/.parquet/.txt file (.gz too), a "
        "folder of them, a BEIR folder, a `datasets` save_to_disk folder, or "
        "hf:ORG/NAME (from the local Hugging Face cache)",
    )
    fields: tuple[str, ...] = Field(
        default=("text",), min_length=1, description="the fields of a record that hold text, e.g. text and query"
    )
    queries: tuple[str, ...] | None = Field(
        None,
        description="which of them are queries (compared for repeats); "
        "default: those named query, question, queries, "
        "questions or anchor",
    )
    split: str | None = Field(None, description="a `datasets` table's split (default: train, else the only one)")
    name: str | None = Field(None, description="the source's name in the outputs (default: its file or folder)")

    @classmethod
    def of(cls, spec: str | dict[str, Any] | TrainSource, **defaults: Any) -> TrainSource:
        """A source from a path or a config mapping (`defaults`, e.g. the command line's fields, fill the gaps)."""
        if isinstance(spec, TrainSource):
            return spec
        body = {"path": spec} if isinstance(spec, str) else dict(spec)
        try:
            return cls.model_validate({**{k: v for k, v in defaults.items() if v is not None}, **body})
        except ValidationError as e:
            raise ConfigError(f"training source {body.get('path', spec)!r}: {describe(e)}") from None

    @property
    def query_fields(self) -> tuple[str, ...]:
        if self.queries is not None:
            return self.queries
        return tuple(f for f in self.fields if f.lower() in QUERY_NAMES)

    @property
    def plan(self) -> list[tuple[str, bool]]:
        """(field, is a query field) for every field read; a record may lack some of them, not all."""
        names = list(dict.fromkeys([*self.fields, *self.query_fields]))
        return [(f, f in self.query_fields) for f in names]

    @property
    def place(self) -> str | None:
        """The file or folder on this machine the source is read from; None for a hub dataset."""
        if self.path.startswith("hf:"):
            return self.path[3:] if self.path[3:].startswith(LOCAL_HF) else None
        return self.path

    @property
    def label(self) -> str:
        base = self.path.removeprefix("hf:").rstrip("/").split("/")[-1]
        if self.path.startswith("hf:") and not self.path[3:].startswith(LOCAL_HF):
            base = base.split("@")[0].split("#")[0]
        return self.name or base or self.path


class LeakageOptions(BaseModel):
    """How to check. The defaults follow the Kalbur card's rule (8 words) and lm-evaluation-harness' practice."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    ngram: int = Field(
        8,
        ge=2,
        le=64,
        description="words in a shared sequence that counts as leakage (8 is the Kalbur "
        "card's rule; lm-evaluation-harness uses 13)",
    )
    fold_ascii: bool = Field(
        True,
        description="also match copies typed without Turkish letters (ç→c, ş→s, …): on "
        "XQuAD-tr and the demo it found no pair that is not a copy "
        "(benchmarks/leakage_folding.py); false: Turkish letters must match",
    )
    near_threshold: float | None = Field(
        90.0,
        ge=50,
        le=100,
        description="rapidfuzz ratio from which a training "
        "query is a near repeat of a benchmark query; null (none on the command line): exact repeats only",
    )
    max_examples: int = Field(
        10, ge=0, le=1000, description="examples kept per dataset, of queries and of passages each"
    )
    batch: int = Field(
        20_000, ge=100, le=1_000_000, description="texts (records, on the training side) read and hashed at a time"
    )
    hold: Literal["auto", "benchmark", "training"] = Field(
        "auto", description="the side whose n-grams are held in memory; auto: the one whose files are smaller"
    )


def read_near_threshold(text: str) -> float | None:
    """`--near-threshold 85` as `near_threshold`, or none/off/exact (null) for exact repeats only."""
    if text.strip().lower() in ("none", "off", "exact"):
        return None
    try:
        return Range.of(LeakageOptions, "near_threshold").read(text)
    except ValueError as e:
        raise ConfigError(str(e)) from None


class LeakageConfig(StrictModel):
    """One leakage check: the benchmark datasets, the training sources, how to check and where to write. The
    `terazi-leakage` flow's parameter (the Prefect UI renders it as a form), and what `terazi leakage` builds."""

    datasets: list[DatasetSpec] = Field(
        min_length=1, description="benchmark datasets: BEIR folders or named datasets (hf:, mteb:, ir_datasets:)"
    )
    train: list[TrainSource] = Field(
        min_length=1, description="training sources: a path, or {path, fields, queries, split, name}"
    )
    options: LeakageOptions = Field(default_factory=LeakageOptions, description="how to check")
    out: str = Field("leakage", description="output folder (never a dataset's folder, a source's or inside one)")
    cache_dir: str = Field(
        ".terazi-cache", description="cache folder: named datasets are copied into it as BEIR folders"
    )

    @field_validator("train", mode="before")
    @classmethod
    def _paths_as_sources(cls, v: object) -> object:
        return [{"path": s} if isinstance(s, str) else s for s in v] if isinstance(v, list) else v

    @classmethod
    def laid_over(
        cls,
        raw: dict[str, Any],
        train: list[str] | None,
        fields: list[str] | None,
        queries: list[str] | None,
        options: dict[str, Any],
        **given: Any,
    ) -> LeakageConfig:
        """A config file's fields (`raw`) with a command line's laid over: its training sources (read with its text
        and query fields, replacing the file's), check options and other fields."""
        if train:
            raw["train"] = [TrainSource.of(t, fields=fields or None, queries=queries or None) for t in train]
        if not raw.get("train"):
            raise ConfigError("no training source: give --train PATH or a --config file with train")
        return cls.model_validate({**raw, "options": {**(raw.get("options") or {}), **options}, **given})

    @model_validator(mode="after")
    def _named(self) -> LeakageConfig:
        """Every dataset named (its folder's or dataset's name, made unique), as an evaluation names it."""
        given = [d.name for d in self.datasets if d.name]
        derived = unique(given + [d.label for d in self.datasets if not d.name])[len(given) :]
        for d in (d for d in self.datasets if not d.name):
            d.name = derived.pop(0)
        return self

    def folders(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """(what the check writes, what it reads) for `terazi.base.paths.disjoint`: outputs never overlap inputs. The
        cache is written only when a named dataset is copied into it."""
        named = any(parse_source(d.path) for d in self.datasets)
        outputs = [("leakage output folder", self.out)] + ([("cache folder", self.cache_dir)] if named else [])
        inputs = [("dataset folder", d.folder) for d in self.datasets if d.folder]
        return outputs, inputs + [("training source", s.place) for s in self.train if s.place]


class DatasetCounts(BaseModel):
    """One dataset's counts in a leakage check (its ids are in the output folder)."""

    name: str
    folder: str = Field(description="its subfolder of the output folder")
    queries: int
    contaminated_queries: int = Field(description="n-gram hits and repeats: <folder>/queries.txt")
    query_hits: int
    repeats: int
    passages: int
    passage_hits: int
    judged_queries: int
    relevant_hit_queries: int = Field(description="judged queries with a relevant passage hit: relevant_hit.txt")
    train_hits: int


class LeakageManifest(BaseModel):
    """What the `terazi-leakage` flow returns: where the output folder is, and its counts."""

    model_config = ConfigDict(extra="forbid")

    terazi_version: str
    out: str
    seconds: float
    datasets: list[DatasetCounts]
    train_hits: int = Field(description="training records to drop (train_hits.txt)")
