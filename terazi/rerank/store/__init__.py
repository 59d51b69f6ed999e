"""Score stores: (model, query, document) → score, so that no pair is ever scored twice.

Two stores behind one small interface (`get_many` / `put_many` on polars frames of 64-bit pair keys):

- `SQLiteStore` (`<cache>/scores.sqlite`): the fast path on one machine, shared safely by processes on
  it (WAL mode), with leases so that concurrent runs split the work instead of repeating it;
- `SharedStore` (a folder or any fsspec URL): parquet files that workers on many machines write and
  read; each write is a whole file that appears at once (write, then rename).

`Scores` is what a run uses: the local file, plus the shared store when one is configured.
"""

from terazi.rerank.store.keys import (
    KEY_SCHEMA,
    SCORE_SCHEMA,
    ModelKey,
    ScoreStore,
    empty_scores,
)
from terazi.rerank.store.scores import Scores
from terazi.rerank.store.shared import SharedStore
from terazi.rerank.store.sqlite import SQLiteStore

__all__ = [
    "KEY_SCHEMA",
    "SCORE_SCHEMA",
    "ModelKey",
    "ScoreStore",
    "Scores",
    "SharedStore",
    "SQLiteStore",
    "empty_scores",
]
