"""A finished results folder (`terazi run` or `terazi analyze`), read once (`schemas.results_folder.ResultsFolder`,
the one reader) into typed parts for the card.

Everything the card prints comes from these files at full precision: manifest.json (what the run did),
leaderboard.csv (order, groups, means, retention), per_query.parquet (the per-cell intervals and the rank
intervals), comparisons.csv (the paired cells), and, where the run wrote them, costs.csv and variants.csv.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from terazi.analysis.intervals import PAIRS_SCHEMA
from terazi.base.errors import DatasetError
from terazi.schemas import FIRST_STAGE, CandidateSet, DatasetManifest, MetricContract, RunManifest
from terazi.schemas.results_folder import ResultsFolder
from terazi.schemas.statistics import Statistics


@dataclass(frozen=True)
class Settings:
    """The run's statistics and method settings, whichever flow wrote the folder."""

    benchmark: str
    headline: str
    conditions: list[str]
    statistics: Statistics
    retention: str
    labels: str
    encoder: str | None
    depth: int | None
    rerank_depth: int | None
    rerankers: list[str]


@dataclass(frozen=True)
class RunFolder:
    path: Path
    settings: Settings
    datasets: list[DatasetManifest]
    candidates: list[CandidateSet]
    fingerprint: str
    started: str
    contract: MetricContract | None
    board: pl.DataFrame
    per_query: pl.DataFrame
    comparisons: pl.DataFrame
    costs: pl.DataFrame | None
    variants: pl.DataFrame | None

    @property
    def imported(self) -> bool:
        """Runs made elsewhere (`terazi analyze`): no first stage of terazi's, no frozen candidates."""
        return not self.candidates

    @property
    def order(self) -> list[str]:
        return self.board["system"].to_list()

    @property
    def ranked(self) -> list[str]:
        """Datasets in the ranking (all of them if every one was marked out, as the aggregation does)."""
        return [d.name for d in self.datasets if d.in_ranking] or [d.name for d in self.datasets]

    @property
    def corrupted(self) -> list[str]:
        """The corrupted conditions the leaderboard shows (the isolated setting is not a column of the card)."""
        return [c for c in self.settings.conditions if c != "clean" and c in self.board.columns]


def _settings(config: dict, manifest: RunManifest) -> Settings:
    found = list(dict.fromkeys(v.condition for v in manifest.variants if "~" not in v.condition))
    conditions = config.get("conditions") or found
    encoder = (config.get("encoder") or {}).get("model")
    return Settings(
        benchmark=manifest.benchmark.name,
        headline=config.get("headline", "nDCG@10"),
        conditions=["clean", *(c for c in conditions if c != "clean")],
        statistics=Statistics.model_validate({k: config[k] for k in Statistics.model_fields if k in config}),
        retention=config.get("retention", "macro"),
        labels=config.get("labels", "en"),
        encoder=encoder if manifest.candidates else None,
        depth=config.get("depth") if manifest.candidates else None,
        rerank_depth=config.get("rerank_depth") if manifest.candidates else None,
        rerankers=[r["name"] for r in config.get("rerankers", []) if r.get("name") != FIRST_STAGE],
    )


def read_folder(path: str | Path) -> RunFolder:
    """The results folder at `path`, read once into the card's typed parts (`ResultsFolder`: a missing, unfinished or
    malformed part is one error naming the file)."""
    folder = ResultsFolder(path)
    layout = folder.layout
    folder.require(layout.manifest, layout.leaderboard_csv, layout.per_query, layout.comparisons_csv)
    manifest = folder.manifest
    settings = _settings(manifest.config, manifest)
    per_query = folder.per_query(settings.headline)  # only the headline's rows are read
    if per_query.height == 0:
        raise DatasetError(layout.per_query, None, f"no {settings.headline} values (the run's headline)")
    contracts = [c for s in manifest.scores for c in s.contracts if c.measure == settings.headline]
    return RunFolder(
        path=folder.path,
        settings=settings,
        datasets=list(manifest.datasets),
        candidates=list(manifest.candidates),
        fingerprint=manifest.benchmark.fingerprint,
        started=manifest.started,
        contract=contracts[0] if contracts else None,
        board=folder.board,
        per_query=per_query,
        comparisons=folder.table(layout.comparisons_csv, schema=PAIRS_SCHEMA),
        costs=folder.table(layout.costs_csv, optional=True),
        variants=folder.table(layout.variants_csv, optional=True),
    )
