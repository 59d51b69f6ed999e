"""What a run reads and writes scores through: the local cache file and, when configured, a shared store.

The flow process (planning and assembling rankings) uses both: lookups try the local file first, then the
shared store, and copy what they find there into the local file, so the next run on this machine reads
it locally. Chunk tasks write to the shared store when there is one (they may run on machines that cannot
reach the flow's cache file; their writes are gathered in parts of `SHARED_PART_ROWS` pairs), else to the
local file, under a lease so that concurrent runs on one cache split the work.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl

from terazi.base.errors import OutputPathError
from terazi.base.outside import shown
from terazi.rerank.store.keys import ModelKey, empty_scores
from terazi.rerank.store.shared import SharedStore
from terazi.rerank.store.sqlite import SQLiteStore, damaged
from terazi.store.layout import CacheLayout

SHARED_PART_ROWS = 20_000
SHARED_PART_SECONDS = 120.0


def check_opens(cache_dir: str | Path, shared: str | None = None) -> None:
    """Before any heavy stage: the score cache opens and passes SQLite's quick check, a shared store is reachable."""
    store = SQLiteStore(CacheLayout(cache_dir).scores)
    problems = store.check(quick=True)
    store.close()
    if problems:
        raise damaged(store.path, problems[0])
    if shared:
        try:
            store = SharedStore(shared)
            store.fs.makedirs(store.root, exist_ok=True)
        except Exception as e:  # noqa: BLE001 - fsspec back-ends raise many kinds
            raise OutputPathError(f"score store {shared} is not reachable ({type(e).__name__}: {shown(e)})") from None


class Lease:
    """Pairs this task may score; released when the `with` block ends, whichever way it ends."""

    def __init__(self, store: SQLiteStore | None):
        self.store, self.id = store, uuid.uuid4().hex

    def claim(self, model: ModelKey, keys: pl.DataFrame) -> pl.DataFrame:
        return self.store.claim(self.id, model, keys) if self.store else keys

    def renew(self) -> None:
        if self.store:
            self.store.renew(self.id)


class Scores:
    def __init__(self, cache_dir: str | Path, shared: str | None = None, local: bool = True):
        self.local = SQLiteStore(CacheLayout(cache_dir).scores) if local else None
        self.shared = SharedStore(shared) if shared else None
        self._pending: dict[ModelKey, list[pl.DataFrame]] = {}
        self._flushed = time.monotonic()

    @classmethod
    def for_worker(cls, cache_dir: str | Path, shared: str | None) -> Scores:
        """A chunk task's view: the shared store when there is one, else the local cache file."""
        return cls(cache_dir, shared, local=shared is None)

    def get_many(self, model: ModelKey, keys: pl.DataFrame) -> pl.DataFrame:
        found = self.local.get_many(model, keys) if self.local else empty_scores()
        if self.shared is not None and found.height < keys.height:
            rest = keys.join(found, on=["q", "d"], how="anti")
            more = self.shared.get_many(model, rest)
            if self.local and more.height:
                self.local.put_many(model, more)
            found = pl.concat([found, more])
        return found

    def put_many(self, model: ModelKey, scores: pl.DataFrame) -> None:
        if self.local:
            self.local.put_many(model, scores)
            if self.shared is None:
                return
        if self.shared is not None:
            self._pending.setdefault(model, []).append(scores)
            if (
                sum(f.height for f in self._pending[model]) >= SHARED_PART_ROWS
                or time.monotonic() - self._flushed >= SHARED_PART_SECONDS
            ):
                self.flush()

    def flush(self) -> None:
        """Write the scores gathered for the shared store, one part per model."""
        for model, frames in self._pending.items():
            if frames:
                self.shared.put_many(model, pl.concat(frames))
        self._pending.clear()
        self._flushed = time.monotonic()

    @contextmanager
    def lease(self) -> Iterator[Lease]:
        """A lease on the local cache (without one, a task owns every pair it is given)."""
        lease = Lease(self.local if self.shared is None else None)
        try:
            yield lease
        finally:
            if self.shared is not None:
                self.flush()
            if lease.store:
                lease.store.release(lease.id)
