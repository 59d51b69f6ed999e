"""`DatasetSpec`: one dataset of an evaluation as a config names it, a folder or a named dataset, with how it counts.

Its own module because more than the evaluation reads it: the leakage check (`schemas.leakage`) and the results
folder's reader take datasets in the same shape.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from terazi.base.errors import FieldsError
from terazi.base.paths import slugify
from terazi.schemas.fields import SlugName, StrictModel
from terazi.schemas.sources import parse as parse_source


class DatasetSpec(StrictModel):
    """A BEIR-format folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) or a named dataset (hf:, mteb:,
    ir_datasets:), read into a BEIR folder in the cache."""

    path: str = Field(
        description="BEIR folder: absolute, or relative to the folder terazi runs in (for a served "
        "deployment: the folder `terazi serve` was started in); or a named dataset: "
        "hf:ORG/NAME[@REVISION][#SUBSET], hf:/local/folder, mteb:TASK[#SUBSET], "
        "ir_datasets:ID"
    )
    name: SlugName | None = Field(
        None,
        description="label in the leaderboard and folder name in the results; "
        "default: the folder's name, made safe and unique",
    )
    split: SlugName = Field("test", description="qrels split: reads qrels/<split>.tsv")
    task_type: str = Field("retrieval", max_length=100, description="groups datasets for Mean (TaskType)")
    language: str = Field(
        "tur-Latn",
        pattern=r"^[a-z]{3}-[A-Z][a-z]{3}$",
        description="the queries' language and "
        "script, as MTEB names them (ISO 639-3 and 15924): written in the MTEB result files",
    )
    in_ranking: bool = Field(True, description="False: shown in the results, not aggregated")
    reason: str | None = Field(
        None,
        max_length=200,
        description="why the dataset is out of the ranking (in_ranking: false), printed beside its '*' in every table",
    )
    first_stage_runs: str | None = Field(
        None,
        description="folder of TREC runs computed elsewhere to freeze as this "
        "dataset's first stage instead of the encoder: one per "
        "condition, <condition>.trec or <condition>-<sample>.trec; "
        "or MTEB's saved predictions (a prediction_folder, or its "
        "<task>_predictions.json) for the clean queries",
    )
    ignore_identical_ids: bool = Field(
        False,
        description="leave a document whose id equals the query's id out of "
        "every ranking (BEIR's and MTEB's ignore_identical_ids, set "
        "for ArguAna- and Quora-style sets where a query is also a "
        "document); a query's excluded_ids (BRIGHT's) in "
        "queries.jsonl are always left out",
    )

    @model_validator(mode="after")
    def _reason_only_out_of_ranking(self) -> DatasetSpec:
        if self.reason is not None and self.in_ranking:
            raise FieldsError(
                ("reason", "in_ranking"),
                "reason is for a dataset out of the ranking: set in_ranking: false, or drop the reason",
            )
        return self

    @property
    def label(self) -> str:
        """The dataset's name; EvalConfig fills it in from the folder (or dataset) name when it is not given."""
        source = parse_source(self.path)
        return self.name or (source.label if source else slugify(Path(self.path).resolve().name))

    @property
    def folder(self) -> str | None:
        """The folder on this machine the dataset is read from (a BEIR folder, hf:/local/folder); None for a hub's."""
        source = parse_source(self.path)
        return self.path if source is None else source.name if source.local else None
