"""A finished results folder (`terazi run` or `terazi analyze`), read once into typed parts for the card.

Everything the card prints comes from these files at full precision: manifest.json (what the run did),
leaderboard.csv (order, groups, means, retention), per_query.parquet (the per-cell intervals and the rank
intervals), comparisons.csv (the paired cells), and, where the run wrote them, costs.csv and variants.csv.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from pydantic import ValidationError

from terazi.analysis.intervals import PAIRS_SCHEMA
from terazi.base.errors import DatasetError, describe
from terazi.base.readback import finite_parquet, read_csv
from terazi.schemas import FIRST_STAGE, CandidateSet, DatasetManifest, MetricContract, RunManifest
from terazi.schemas.layout import RunLayout

REQUIRED = ("manifest.json", "leaderboard.csv", "per_query.parquet", "comparisons.csv")


@dataclass(frozen=True)
class Settings:
    """The run's statistics and method settings, whichever flow wrote the folder."""

    benchmark: str
    headline: str
    conditions: list[str]
    seed: int
    resamples: int
    confidence: float
    holm: bool
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
        seed=int(config.get("seed", 13)),
        resamples=int(config.get("bootstrap_resamples", 2000)),
        confidence=float(config.get("confidence", 0.95)),
        holm=bool(config.get("holm", False)),
        retention=config.get("retention", "macro"),
        labels=config.get("labels", "en"),
        encoder=encoder if manifest.candidates else None,
        depth=config.get("depth") if manifest.candidates else None,
        rerank_depth=config.get("rerank_depth") if manifest.candidates else None,
        rerankers=[r["name"] for r in config.get("rerankers", []) if r.get("name") != FIRST_STAGE],
    )


def _csv(path: Path, optional: bool = False, schema: dict | None = None) -> pl.DataFrame | None:
    """A table of the folder, its numbers checked (terazi.base.readback); `schema` types a table that may have no rows
    (a run of one system compares none)."""
    if not path.is_file():
        if optional:
            return None
        raise DatasetError(path, None, "missing: not a finished terazi results folder")
    return read_csv(path, schema)


def read_folder(path: str | Path) -> RunFolder:
    """The results folder at `path`; a missing, unfinished or malformed part is one error naming the file."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise DatasetError(root, None, "no such results folder")
    RunLayout(root).refuse_unfinished()
    for name in REQUIRED:
        if not (root / name).is_file():
            raise DatasetError(
                root / name,
                None,
                "missing: not a finished terazi results folder (`terazi run` or `terazi analyze` writes it)",
            )
    try:
        manifest = RunManifest.model_validate(json.loads((root / "manifest.json").read_text(encoding="utf-8")))
    except ValueError as e:
        problem = describe(e) if isinstance(e, ValidationError) else f"not JSON ({e})"
        raise DatasetError(root / "manifest.json", None, problem) from None
    settings = _settings(manifest.config, manifest)
    try:  # only the headline's rows are read
        finite_parquet(root / "per_query.parquet")
        per_query = pl.scan_parquet(root / "per_query.parquet").filter(pl.col("measure") == settings.headline).collect()
    except (OSError, pl.exceptions.PolarsError) as e:
        raise DatasetError(root / "per_query.parquet", None, f"cannot read it ({str(e).splitlines()[0]})") from None
    if per_query.height == 0:
        raise DatasetError(root / "per_query.parquet", None, f"no {settings.headline} values (the run's headline)")
    contracts = [c for s in manifest.scores for c in s.contracts if c.measure == settings.headline]
    return RunFolder(
        path=root,
        settings=settings,
        datasets=list(manifest.datasets),
        candidates=list(manifest.candidates),
        fingerprint=manifest.benchmark.fingerprint,
        started=manifest.started,
        contract=contracts[0] if contracts else None,
        board=_csv(root / "leaderboard.csv"),
        per_query=per_query,
        comparisons=_csv(root / "comparisons.csv", schema=PAIRS_SCHEMA),
        costs=_csv(root / "costs.csv", optional=True),
        variants=_csv(root / "variants.csv", optional=True),
    )
