"""`AnalyzeConfig`: the statistics of a terazi results folder, computed from run files made anywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_serializer, model_validator

from terazi.schemas.config import (
    LEAKAGE,
    LEAKAGE_BY,
    EvalConfig,
    measures,
    omit_unset_leakage,
    renamed_fields,
)
from terazi.schemas.fields import BENCHMARK, MeasureName, SlugName, StrictModel
from terazi.schemas.statistics import Statistics
from terazi.schemas.tables import CLEAN

_EVAL = EvalConfig.model_fields


class Runs(StrictModel):
    """Where the runs are and what they measured (`AnalyzeConfig`'s first fields; how differences are judged follows
    them: `Statistics`)."""

    folder: str = Field(
        description="runs folder: qrels/<dataset>.tsv, runs/<dataset>/<condition>/<system>.trec, "
        "optional changed/<dataset>/<condition>.txt and datasets.yaml"
    )
    benchmark: str = Field(_EVAL["benchmark"].default, pattern=BENCHMARK, description=_EVAL["benchmark"].description)
    conditions: list[SlugName] | None = Field(
        None,
        description="conditions to analyse, in this order ('clean' is always first); default: every condition found",
    )
    metrics: list[MeasureName] = Field(
        default_factory=lambda: ["nDCG@10", "RR@10"], description=_EVAL["metrics"].description
    )
    headline: MeasureName = Field(_EVAL["headline"].default, description=_EVAL["headline"].description)
    first_stages: list[SlugName] | None = Field(
        None,
        description="runs of several first stages (files named "
        "<first stage>~<system>.trec): their order, the first one's results "
        "fill the results folder, each other's first-stages/<name>/; "
        "default: sorted",
    )


class AnalyzeConfig(Statistics, Runs):
    """A runs folder (qrels/, runs/, optional changed/ and datasets.yaml) and how to analyse it. The settings mean
    what they mean in `EvalConfig`, with the same defaults."""

    borda: Literal["per-task", "mteb"] = Field(_EVAL["borda"].default, description=_EVAL["borda"].description)
    retention: Literal["macro", "pooled"] = Field(
        _EVAL["retention"].default, description=_EVAL["retention"].description
    )
    featured: SlugName | None = Field(None, description=_EVAL["featured"].description)
    labels: Literal["en", "tr"] = Field(_EVAL["labels"].default, description=_EVAL["labels"].description)
    out_dir: str = Field(_EVAL["out_dir"].default, description=_EVAL["out_dir"].description)
    run_name: SlugName | None = Field(None, description=_EVAL["run_name"].description)
    leakage: str | None = Field(None, description=LEAKAGE)
    leakage_by: Literal["queries", "relevant"] = Field("queries", description=LEAKAGE_BY)

    _old_spellings = model_validator(mode="before")(renamed_fields)

    @model_serializer(mode="wrap")
    def _leakage_only_when_set(self, handler):
        return omit_unset_leakage(self, handler(self))

    @model_validator(mode="after")
    def _consistent(self) -> AnalyzeConfig:
        measures(self)
        if self.conditions is not None:
            self.conditions = list(dict.fromkeys([CLEAN, *self.conditions]))
        return self

    def folders(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """(what the analysis writes, the folders it reads), as `EvalConfig.folders`."""
        outputs = [("results folder", str(Path(self.out_dir) / (self.run_name or "<time stamp>")))]
        return outputs, [("runs folder", self.folder)] + ([("leakage folder", self.leakage)] if self.leakage else [])

    def as_eval_config(self, conditions: list[str]) -> EvalConfig:
        """The settings the shared aggregation reads (headline, metrics, conditions, statistics, Borda,
        retention, featured system, labels), as an EvalConfig; every other field keeps its default. Built without
        validation because conditions of runs made elsewhere may have any safe name, not only terazi's corruption
        names."""
        return EvalConfig.model_construct(
            benchmark=self.benchmark,
            datasets=[],
            conditions=conditions,
            metrics=self.metrics,
            headline=self.headline,
            **dict(self.statistics()),
            borda=self.borda,
            retention=self.retention,
            featured=self.featured,
            labels=self.labels,
            out_dir=self.out_dir,
            run_name=self.run_name,
            leakage=self.leakage,
            leakage_by=self.leakage_by,
        )
