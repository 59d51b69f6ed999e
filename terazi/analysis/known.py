"""Bootstrap results already computed, found again by the content of what they were computed from.

A warm rerun's statistics are the same bootstraps over the same per-query values as the run before, and drawing the
resamples and averaging them again was most of what a warm run still computed. So an
interval (`stats.interval`, and through it every paired difference) and a retention ratio (`stats.ratio_interval`) are
kept in the cache folder's `intervals.sqlite` under the SHA-256 of what decides them: the function, its parameters,
each dataset's name and values (in sorted order, as the function reads them) and the code of the function's
module (`terazi.codehash`: its source and imports, and numpy's version for its generator and quantiles). A run that
changes one reranker computes the intervals that involve its values and finds every other one; nothing is ever looked
up by name, so a result can only be found again for the very same numbers.

Only within `kept(cache_dir)` (a run's statistics, and the model card it publishes); elsewhere every call computes.
The file is derived: damaged or unwritable, it is set aside and everything is computed as before; `terazi cache
check` reports it and `repair` deletes it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import json
import logging
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from terazi import codehash
from terazi.paths import mark_used

FILE = "intervals.sqlite"
TIMEOUT = 10.0  # seconds to wait for another run's writes
log = logging.getLogger("terazi.known")
T = TypeVar("T")


class _Store:
    """One cache folder's results: looked up one by one, the new ones written together when the block ends."""

    def __init__(self, path: Path):
        self.new: dict[str, list] = {}
        self.db = sqlite3.connect(path, timeout=TIMEOUT, isolation_level=None, check_same_thread=False)
        self.db.execute("CREATE TABLE IF NOT EXISTS known (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    def get(self, key: str) -> list | None:
        if key in self.new:
            return self.new[key]
        row = self.db.execute("SELECT value FROM known WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def close(self) -> None:
        try:
            if self.new:
                with self.db:
                    self.db.executemany(
                        "INSERT OR IGNORE INTO known VALUES (?, ?)", [(k, json.dumps(v)) for k, v in self.new.items()]
                    )
        finally:
            self.db.close()


_active: ContextVar[_Store | None] = ContextVar("terazi_known", default=None)


def check(path: Path) -> str | None:
    """What is wrong with an intervals file (None when it is sound)."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            ok = db.execute("PRAGMA quick_check").fetchone()[0]
            db.execute("SELECT count(*) FROM known").fetchone()
        finally:
            db.close()
    except sqlite3.Error as e:
        return f"unreadable ({e})"
    return None if ok == "ok" else f"damaged ({ok})"


@contextmanager
def kept(cache_dir: str | Path | None) -> Iterator[None]:
    """Within the block, `by_content` functions look their results up in `cache_dir`'s intervals file first."""
    if cache_dir is None or not Path(cache_dir).is_dir():
        yield
        return
    path = Path(cache_dir) / FILE
    try:
        store = _Store(path)
    except sqlite3.OperationalError as e:  # held by another run past TIMEOUT, or a read-only folder: not damaged
        log.warning("%s: %s; computing every interval", path, e)
        yield
        return
    except sqlite3.DatabaseError as e:  # damaged: set aside (it is derived), this run computes everything
        log.warning("%s: %s; computing every interval (the file is set aside)", path, e)
        try:
            path.replace(path.with_name(f"{FILE}.damaged"))
        except OSError:
            pass
        yield
        return
    token = _active.set(store)
    try:
        yield
    finally:
        _active.reset(token)
        mark_used(path)
        try:
            store.close()
        except sqlite3.Error as e:  # a full or read-only disk: the results are right, only not kept
            log.warning("%s: %s; this run's intervals are not kept", path, e)


def _digest(h: hashlib._Hash, value: Any) -> None:
    if isinstance(value, Mapping):  # dataset -> per-query values, read in sorted order by every statistic
        h.update(b"M%d" % len(value))
        for name in sorted(value):
            values = np.ascontiguousarray(np.asarray(value[name], dtype=np.float64))
            h.update(b"%s\0%d\0" % (str(name).encode(), values.size))
            h.update(values.tobytes())
    else:  # a parameter: numpy's scalars (a resample count read from an array) as the Python numbers they equal
        h.update(json.dumps(value.item() if isinstance(value, np.generic) else value).encode() + b"\0")


def by_content(kind: type[T]) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """A function returning `kind` (a dataclass of numbers) looked up by the content of its arguments within `kept`."""

    def wrap(fn: Callable[..., T]) -> Callable[..., T]:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def call(*args, **kwargs) -> T:
            store = _active.get()
            if store is None:
                return fn(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            h = hashlib.sha256(f"{fn.__qualname__}\0{codehash.of_module(fn.__module__)}\0".encode())
            for name, value in bound.arguments.items():
                h.update(name.encode() + b"=")
                _digest(h, value)
            key = h.hexdigest()
            try:
                hit = store.get(key)
            except sqlite3.Error:
                hit = None
            if hit is not None:
                return kind(*hit)
            result = fn(*args, **kwargs)
            store.new[key] = list(dataclasses.astuple(result))
            return result

        return call

    return wrap
