"""Bootstrap results already computed, found again by the content of what they were computed from.

A warm rerun's statistics are the same bootstraps over the same per-query values as the run before, and drawing the
resamples and averaging them again was most of what a warm run still computed. So an
interval (`stats.interval`, and through it every paired difference) and a retention ratio (`stats.ratio_interval`) are
kept in the cache folder's `intervals.sqlite` under the key of what decides them (`derived.key`, the key every
stored thing has): the function, its parameters, each dataset's name and values (in sorted order, as the function
reads them) and the code of the function's module (its source and imports, and numpy's version for its generator
and quantiles). A run that
changes one reranker computes the intervals that involve its values and finds every other one; nothing is ever looked
up by name, so a result can only be found again for the very same numbers.

The store is an argument, never ambient: `opened(cache_dir)` opens it for a block (None without a usable cache folder),
and each statistic of a run, and of the model card the run publishes, takes it as its `known=` keyword and hands it
down to `stats.interval` and `stats.ratio_interval`. Called without it (a test, `terazi compare`, `terazi card`), a
statistic computes everything: what a function returns depends on what it is given, never on where it is called from.
The file is derived: damaged, it is set aside into `quarantine/` and everything is computed as before; unwritable,
everything is computed; `terazi cache check` reports it and `repair` sets it aside.
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
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from terazi.base.paths import mark_used
from terazi.store.derived import key as derived_key
from terazi.store.files import set_aside
from terazi.store.layout import CacheLayout

TIMEOUT = 10.0  # seconds to wait for another run's writes
log = logging.getLogger("terazi.store.bootstraps")
T = TypeVar("T")


class BootstrapStore:
    """One cache folder's results, open for a `kept` block: looked up one by one, the new ones written together when
    the block ends."""

    def __init__(self, path: Path):
        self.new: dict[str, list] = {}
        self.db = sqlite3.connect(path, timeout=TIMEOUT, isolation_level=None, check_same_thread=False)
        self.db.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    def get(self, key: str) -> list | None:
        if key in self.new:
            return self.new[key]
        row = self.db.execute("SELECT value FROM results WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def close(self) -> None:
        try:
            if self.new:
                with self.db:
                    self.db.executemany(
                        "INSERT OR IGNORE INTO results VALUES (?, ?)", [(k, json.dumps(v)) for k, v in self.new.items()]
                    )
        finally:
            self.db.close()


def check(path: Path) -> str | None:
    """What is wrong with an intervals file (None when it is sound)."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            ok = db.execute("PRAGMA quick_check").fetchone()[0]
            db.execute("SELECT count(*) FROM results").fetchone()
        finally:
            db.close()
    except sqlite3.Error as e:
        return f"unreadable ({e})"
    return None if ok == "ok" else f"damaged ({ok})"


@contextmanager
def opened(cache_dir: str | Path | None) -> Iterator[BootstrapStore | None]:
    """`cache_dir`'s intervals file, open for the block (to be passed as `known=`; its new results are written when
    the block ends), or None (compute everything) without a cache folder or when the file cannot be opened."""
    if cache_dir is None or not Path(cache_dir).is_dir():
        yield None
        return
    layout = CacheLayout(cache_dir)
    path = layout.intervals
    try:
        store = BootstrapStore(path)
    except sqlite3.OperationalError as e:  # held by another run past TIMEOUT, or a read-only folder: not damaged
        log.warning("%s: %s; computing every interval", path, e)
        yield None
        return
    except sqlite3.DatabaseError as e:  # damaged: set aside (it is derived), this run computes everything
        set_aside(path, f"{e}; computing every interval", layout.quarantine, "intervals", ("-wal", "-shm"))
        yield None
        return
    try:
        yield store
    finally:
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
    """A function returning `kind` (a dataclass of numbers), given a keyword-only `known` (a `BootstrapStore` or
    None): its
    result is looked up there by the content of its other arguments first, and a new one kept there. The function
    itself never sees `known`, nor does the key: the same arguments are the same result with or without a store."""

    def wrap(fn: Callable[..., T]) -> Callable[..., T]:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def call(*args, known: BootstrapStore | None = None, **kwargs) -> T:
            if known is None:
                return fn(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            h = hashlib.sha256()
            for name, value in bound.arguments.items():
                h.update(name.encode() + b"=")
                _digest(h, value)
            key = derived_key(fn.__qualname__, h.hexdigest(), maker=fn.__module__)
            try:
                hit = known.get(key)
            except sqlite3.Error:
                hit = None
            if hit is not None:
                return kind(*hit)
            result = fn(*args, **kwargs)
            known.new[key] = list(dataclasses.astuple(result))
            return result

        keyword = inspect.Parameter(
            "known", inspect.Parameter.KEYWORD_ONLY, default=None, annotation="BootstrapStore | None"
        )
        call.__signature__ = signature.replace(parameters=[*signature.parameters.values(), keyword])
        return call

    return wrap
