"""What every score store shares: which model's scores (`ModelKey`), the frames of pair keys and scores, the
`ScoreStore` protocol (`get_many` / `put_many` on polars frames of 64-bit pair keys)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import polars as pl

from terazi.base import fingerprint

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
        """BootstrapStore scores (q, d, score) of the given keys (q, d); unknown keys are absent."""

    def put_many(self, model: ModelKey, scores: pl.DataFrame) -> int:
        """Store (q, d, score) rows; a pair stored before is kept as it is. Returns the rows added."""

    def count(self, model: ModelKey | None = None) -> int: ...


def empty_scores() -> pl.DataFrame:
    return pl.DataFrame(schema=SCORE_SCHEMA)
