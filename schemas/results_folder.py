"""A finished results folder, read: the one reader every command that reads a run's results goes through (the card,
`terazi compare`, the nightly's changes, `terazi leaderboard`, and the API's `evaluate` and `analyze`).

Its files are named in `RunLayout` (beside it); here they are read, each once when first asked for, typed and
checked: the manifest validated as a `RunManifest`, the tables' numbers finite (`terazi.base.readback`). A folder
still marked incomplete is refused whatever older files it holds, and a missing or malformed part is one error that
names the file.
"""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path

import polars as pl
from pydantic import ValidationError

from terazi.base.errors import DatasetError, describe
from terazi.base.readback import finite_parquet, read_csv
from terazi.schemas.layout import RunLayout
from terazi.schemas.manifests import RunManifest

WRITES_IT = "not a finished terazi results folder (`terazi run` or `terazi analyze` writes it)"


class ResultsFolder:
    """The results folder at `path`, finished (`RunLayout.refuse_unfinished`)."""

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        if not self.path.is_dir():
            raise DatasetError(self.path, None, "no such results folder")
        self.layout = RunLayout(self.path)
        self.layout.refuse_unfinished()

    @staticmethod
    def manifest_of(path: str | Path) -> RunManifest | None:
        """The manifest of a completed run; None for an incomplete or foreign folder (a nightly looking for the
        previous run passes over those)."""
        layout = RunLayout(path)
        if not layout.is_complete():
            return None
        try:
            return RunManifest.model_validate(json.loads(layout.manifest.read_text()))
        except (OSError, ValueError):
            return None

    def require(self, *paths: Path) -> None:
        """Each of `paths` is there, or one error naming the first that is not."""
        for path in paths:
            if not path.is_file():
                raise DatasetError(path, None, f"missing: {WRITES_IT}")

    @cached_property
    def manifest(self) -> RunManifest:
        path = self.layout.manifest
        self.require(path)
        try:
            return RunManifest.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except ValueError as e:
            problem = describe(e) if isinstance(e, ValidationError) else f"not JSON ({e})"
            raise DatasetError(path, None, problem) from None

    def headline(self, default: str = "nDCG@10") -> str:
        """The run's own headline measure (its config's), else `default` (a manifest that cannot be read included)."""
        try:
            return json.loads(self.layout.manifest.read_text())["config"].get("headline") or default
        except (OSError, ValueError, KeyError):
            return default

    def per_query(self, measure: str | None = None) -> pl.DataFrame:
        """per_query.parquet, its values finite; only `measure`'s rows when given (the others are never read)."""
        path = self.layout.per_query
        if not path.is_file():
            raise DatasetError(path, None, f"missing: {WRITES_IT}")
        try:
            finite_parquet(path)
            rows = pl.scan_parquet(path)
            return (rows.filter(pl.col("measure") == measure) if measure else rows).collect()
        except (OSError, pl.exceptions.PolarsError) as e:
            raise DatasetError(path, None, f"cannot read it ({str(e).splitlines()[0]})") from None

    def table(self, path: Path, schema: dict | None = None, optional: bool = False) -> pl.DataFrame | None:
        """A CSV table of the folder, its numbers checked; `schema` types a table that may have no rows. None for an
        `optional` table the run did not write."""
        if optional and not path.is_file():
            return None
        self.require(path)
        return read_csv(path, schema)

    @cached_property
    def board(self) -> pl.DataFrame:
        """leaderboard.csv: the order, groups, means and retention, at full precision."""
        return self.table(self.layout.leaderboard_csv)

    @cached_property
    def depths(self) -> pl.DataFrame | None:
        """depths.csv, where the run swept rerank depths."""
        return self.table(self.layout.depths_csv, optional=True)
