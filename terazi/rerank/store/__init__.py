"""Score stores: (model, query, document) → score, so that no pair is ever scored twice.

Two stores behind one small interface (`get_many` / `put_many` on polars frames of 64-bit pair keys):

- `SQLiteStore` (`<cache>/scores.sqlite`): the fast path on one machine, shared safely by processes on
  it (WAL mode), with leases so that concurrent runs split the work instead of repeating it;
- `SharedStore` (a folder or any fsspec URL): parquet files that workers on many machines write and
  read; each write is a whole file that appears at once (write, then rename).

`Scores` is what a run uses: the local file, plus the shared store when one is configured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import polars as pl

from terazi import fingerprint

KEY_SCHEMA = {"q": pl.Int64, "d": pl.Int64}
SCORE_SCHEMA = {"q": pl.Int64, "d": pl.Int64, "score": pl.Float64}


@dataclass(frozen=True)
class ModelKey:
    """Which scores: a model identity and the max length it scored at. Rows carry `id`, a 64-bit hash of both."""

    identity: str
    max_length: int

    @property
    def id(self) -> int:
        return fingerprint.key64(f"{self.identity}\0{self.max_length}")


class ScoreStore(Protocol):
    where: str

    def get_many(self, model: ModelKey, keys: pl.DataFrame) -> pl.DataFrame:
        """Known scores (q, d, score) of the given keys (q, d); unknown keys are absent."""

    def put_many(self, model: ModelKey, scores: pl.DataFrame) -> int:
        """Store (q, d, score) rows; a pair stored before is kept as it is. Returns the rows added."""

    def count(self, model: ModelKey | None = None) -> int: ...


def empty_scores() -> pl.DataFrame:
    return pl.DataFrame(schema=SCORE_SCHEMA)


from terazi.rerank.store.scores import Scores  # noqa: E402
from terazi.rerank.store.shared import SharedStore  # noqa: E402
from terazi.rerank.store.sqlite import SQLiteStore  # noqa: E402

__all__ = ["KEY_SCHEMA", "SCORE_SCHEMA", "ModelKey", "ScoreStore", "Scores", "SharedStore", "SQLiteStore", "empty_scores"]
