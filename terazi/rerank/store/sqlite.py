"""The local score cache: one SQLite file (`<cache>/scores.sqlite`) in WAL mode.

SQLite ships with Python, lets readers and one writer work at once, and several processes on one machine
(two runs, or Prefect workers) can share one file; writers wait on a busy timeout instead of failing.
Rows are (model id, query key, document key, score), all numbers: the model's identity is stored once,
in `models`. Each block of pairs is committed as it is scored, so a run killed mid-way loses at most the
block in flight.

Concurrent runs split the work with leases: before scoring, a run claims the pairs it is about to score
under a lease that names its host and process and expires unless renewed. Another run skips pairs under
a live claim and waits for their scores; a lease whose process died (same host) or that expired is
released, and its pairs are claimed again. So two runs on one cache score every pair once.

A damaged file raises `CacheError` naming it and `terazi cache repair` (never retried); a full disk keeps
SQLite's own error ("database or disk is full") instead of the follow-up "cannot rollback".
"""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import repeat
from pathlib import Path

import numpy as np
import polars as pl
import psutil

from terazi.base import fingerprint
from terazi.base.errors import CacheError
from terazi.rerank.store.keys import KEY_SCHEMA, SCORE_SCHEMA, ModelKey, empty_scores
from terazi.store.files import set_aside
from terazi.store.layout import CacheLayout

log = logging.getLogger("terazi.store")

SCHEMA = """
CREATE TABLE IF NOT EXISTS models (id INTEGER PRIMARY KEY, identity TEXT NOT NULL, max_length INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS pair_scores (
    model INTEGER NOT NULL, q INTEGER NOT NULL, d INTEGER NOT NULL, score REAL NOT NULL,
    PRIMARY KEY (model, q, d)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS leases (
    id TEXT PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL, expires REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS claims (
    model INTEGER NOT NULL, q INTEGER NOT NULL, d INTEGER NOT NULL, lease TEXT NOT NULL,
    PRIMARY KEY (model, q, d)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS claims_by_lease ON claims (lease);
"""
ROW = np.dtype([("q", "i8"), ("d", "i8"), ("score", "f8")])
LEASE_SECONDS = 600.0
HOST = socket.gethostname()
DAMAGED = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB


def is_damage(e: sqlite3.Error) -> bool:
    code = getattr(e, "sqlite_errorcode", None)
    return (code is not None and code & 0xFF in DAMAGED) or "malformed" in str(e) or "not a database" in str(e)


def damaged(path: Path, e: BaseException) -> CacheError:
    return CacheError(
        f"score cache {path} is damaged ({e}): run `terazi cache repair --cache {path.parent}` (it keeps "
        "the damaged file, salvages every readable score and rebuilds the cache)"
    )


class SQLiteStore:
    def __init__(self, path: str | Path, timeout: float = 120.0):
        self.path = Path(path)
        self.where = str(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._timeout = timeout
        with self._write() as con:
            for stmt in SCHEMA.strip().split(";"):
                if stmt.strip():
                    con.execute(stmt)
            if con.execute("SELECT 1 FROM sqlite_master WHERE name='scores' AND sql LIKE '%query_hash%'").fetchone():
                _migrate_v1(con)

    # connections and transactions ------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            with self._guard():
                con = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
                self._wal(con)
                con.execute("PRAGMA synchronous=NORMAL")
            self._local.con = con
        return con

    def _wal(self, con: sqlite3.Connection) -> None:
        """Switch a new file to WAL (it stays so). SQLite answers `database is locked` at once, without waiting,
        when another process is switching the same new file: two runs starting together on one fresh cache."""
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                if con.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    con.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """A damaged file becomes a `CacheError` that names it and the command that repairs it."""
        try:
            yield
        except sqlite3.DatabaseError as e:
            if is_damage(e):
                raise damaged(self.path, e) from None
            raise

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; on failure the original error is raised, never ROLLBACK's own."""
        con = self._conn()
        with self._guard():
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
                con.execute("COMMIT")
            except BaseException:
                try:
                    con.execute("ROLLBACK")
                except sqlite3.Error:
                    pass  # SQLite already rolled back (e.g. disk full): keep the real error
                raise

    def close(self) -> None:
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None

    # scores ------------------------------------------------------------------------------------------
    def get_many(self, model: ModelKey, keys: pl.DataFrame) -> pl.DataFrame:
        if not keys.height:
            return empty_scores()
        con = self._conn()
        qs = keys["q"].unique().to_list()
        parts = []
        with self._guard():
            for i in range(0, len(qs), 500):
                part = qs[i : i + 500]
                cur = con.execute(
                    f"SELECT q, d, score FROM pair_scores WHERE model=? AND q IN ({','.join('?' * len(part))})",
                    (model.id, *part),
                )
                parts.append(np.fromiter(cur, dtype=ROW))
        rows = np.concatenate(parts)
        found = pl.DataFrame({"q": rows["q"], "d": rows["d"], "score": rows["score"]}, schema=SCORE_SCHEMA)
        return found.join(keys.select("q", "d"), on=["q", "d"], how="semi")

    def put_many(self, model: ModelKey, scores: pl.DataFrame) -> int:
        if not scores.height:
            return 0
        m = model.id
        with self._write() as con:
            con.execute("INSERT OR IGNORE INTO models VALUES (?, ?, ?)", (m, model.identity, model.max_length))
            before = con.total_changes
            con.executemany("INSERT OR IGNORE INTO pair_scores VALUES (?, ?, ?, ?)", _rows(m, scores))
            return con.total_changes - before

    def count(self, model: ModelKey | None = None) -> int:
        sql, args = (
            ("SELECT COUNT(*) FROM pair_scores", ())
            if model is None
            else ("SELECT COUNT(*) FROM pair_scores WHERE model=?", (model.id,))
        )
        with self._guard():
            return self._conn().execute(sql, args).fetchone()[0]

    def models(self) -> list[tuple[int, str, int, int]]:
        """(id, identity, max_length, rows) of every model in the cache."""
        with self._guard():
            ids = dict(self._conn().execute("SELECT model, COUNT(*) FROM pair_scores GROUP BY model").fetchall())
            named = {
                i: (ident, n) for i, ident, n in self._conn().execute("SELECT id, identity, max_length FROM models")
            }
        return [(i, *named.get(i, ("(unknown)", 0)), rows) for i, rows in ids.items()]

    def rows(self, model_id: int) -> pl.DataFrame:
        with self._guard():
            cur = self._conn().execute("SELECT q, d, score FROM pair_scores WHERE model=?", (model_id,))
            rows = np.fromiter(cur, dtype=ROW)
        return pl.DataFrame({"q": rows["q"], "d": rows["d"], "score": rows["score"]}, schema=SCORE_SCHEMA)

    def put_model_rows(self, model_id: int, identity: str | None, max_length: int, scores: pl.DataFrame) -> int:
        """Rows of a model known by id (merging and salvaging); its identity when known."""
        with self._write() as con:
            before = con.total_changes
            if identity is not None:
                con.execute("INSERT OR IGNORE INTO models VALUES (?, ?, ?)", (model_id, identity, max_length))
                before = con.total_changes
            con.executemany(
                "INSERT OR IGNORE INTO pair_scores VALUES (?, ?, ?, ?)",
                ((model_id, q, d, s) for q, d, s in scores.select("q", "d", "score").iter_rows()),
            )
            return con.total_changes - before

    # leases ------------------------------------------------------------------------------------------
    def claim(self, lease: str, model: ModelKey, keys: pl.DataFrame, ttl: float = LEASE_SECONDS) -> pl.DataFrame:
        """Claim the unscored pairs among `keys` that no live lease holds; returns the pairs now ours."""
        now = time.time()
        with self._write() as con:
            dead = [
                i
                for i, host, pid, expires in con.execute("SELECT id, host, pid, expires FROM leases")
                if i != lease and (expires < now or (host == HOST and not psutil.pid_exists(pid)))
            ]
            for i in dead:
                con.execute("DELETE FROM claims WHERE lease=?", (i,))
                con.execute("DELETE FROM leases WHERE id=?", (i,))
            if dead:
                log.info("released %d lease(s) of stopped or expired runs", len(dead))
            con.execute("INSERT OR REPLACE INTO leases VALUES (?, ?, ?, ?)", (lease, HOST, os.getpid(), now + ttl))
            m = model.id
            con.executemany("INSERT OR IGNORE INTO claims VALUES (?, ?, ?, ?)", _rows(m, keys, lease))
            cur = con.execute(
                "SELECT c.q, c.d FROM claims c WHERE c.lease=? AND c.model=? AND NOT EXISTS "
                "(SELECT 1 FROM pair_scores s WHERE s.model=c.model AND s.q=c.q AND s.d=c.d)",
                (lease, m),
            )
            rows = np.fromiter(cur, dtype=np.dtype([("q", "i8"), ("d", "i8")]))
        own = pl.DataFrame({"q": rows["q"], "d": rows["d"]}, schema=KEY_SCHEMA)
        return keys.join(own, on=["q", "d"], how="semi", maintain_order="left")

    def renew(self, lease: str, ttl: float = LEASE_SECONDS) -> None:
        with self._write() as con:
            con.execute("UPDATE leases SET expires=? WHERE id=?", (time.time() + ttl, lease))

    def release(self, lease: str) -> None:
        with self._write() as con:
            con.execute("DELETE FROM claims WHERE lease=?", (lease,))
            con.execute("DELETE FROM leases WHERE id=?", (lease,))

    # health ------------------------------------------------------------------------------------------
    def check(self, quick: bool = False) -> list[str]:
        """SQLite's integrity check (or its quicker variant, which skips index contents): empty when sound."""
        try:
            rows = [r[0] for r in self._conn().execute(f"PRAGMA {'quick_check' if quick else 'integrity_check'}")]
        except sqlite3.DatabaseError as e:
            if not is_damage(e):
                raise
            return [str(e)]
        return [] if rows == ["ok"] else rows


def _rows(model: int, frame: pl.DataFrame, last=None) -> Iterator[tuple]:
    """(model, q, d, score) rows of a frame of scores, or (model, q, d, `last`) of keys, in key order: inserts in the
    B-tree's own order touch each page once, where hash order touches pages at random."""
    frame = frame.sort("q", "d", maintain_order=True)
    tail = repeat(last) if last is not None else frame["score"].to_list()
    return zip(repeat(model), frame["q"].to_list(), frame["d"].to_list(), tail)


def _migrate_v1(con: sqlite3.Connection) -> None:
    """Carry rows of the first cache layout (text model, hex hashes) over to the numeric one, losslessly."""
    n = 0
    cur = con.execute("SELECT model, max_length, query_hash, doc_id, doc_hash, score FROM scores")
    while batch := cur.fetchmany(100_000):
        models = {(m, ml) for m, ml, *_ in batch}
        for m, ml in models:
            con.execute("INSERT OR IGNORE INTO models VALUES (?, ?, ?)", (ModelKey(m, ml).id, m, ml))
        ids = [ModelKey(m, ml).id for m, ml, *_ in batch]
        q = fingerprint.hex_keys(r[2] for r in batch)
        d = fingerprint.doc_keys((r[3] for r in batch), fingerprint.hex_keys(r[4] for r in batch))
        con.executemany(
            "INSERT OR IGNORE INTO pair_scores VALUES (?, ?, ?, ?)",
            zip(ids, q.tolist(), d.tolist(), (r[5] for r in batch)),
        )
        n += len(batch)
    con.execute("DROP TABLE scores")
    log.info("score cache: %d rows carried over from the first layout", n)


def _scan(con: sqlite3.Connection, model: int, down: bool) -> tuple[list[tuple[int, int, float]], int]:
    """Readable rows of one model in key order (or reverse order), resuming past each damaged region: from the
    last row read, single rows are fetched at ever further keys until one is readable."""
    op, order, sign = ("<=", "DESC", -1) if down else (">=", "ASC", 1)
    sql = f"SELECT q, d, score FROM pair_scores WHERE model=? AND q{op}? ORDER BY q {order}, d {order}"
    rows: list[tuple[int, int, float]] = []
    at, lost = (2**63 - 1) if down else -(2**63), 0
    while True:
        last = None
        try:
            for row in con.execute(sql, (model, at)):
                rows.append(row)
                last = row[0]
            return rows, lost
        except sqlite3.Error:
            lost += 1
        start = at if last is None else last + sign
        for k in range(64):
            try:
                one = con.execute(sql + " LIMIT 1", (model, start + sign * ((1 << k) - 1))).fetchall()
            except (sqlite3.Error, OverflowError):
                continue
            if not one:
                return rows, lost
            rows.append(one[0])
            at = one[0][0] + sign
            break
        else:
            return rows, lost


def _read_model(con: sqlite3.Connection, model: int) -> tuple[np.ndarray, int]:
    """Every readable row of one model: read forwards and backwards, so rows on both sides of damage are kept.
    Returns the rows and the number of read failures met going forwards (damaged regions)."""
    ahead, lost = _scan(con, model, down=False)
    behind = _scan(con, model, down=True)[0] if lost else []
    return np.array(ahead + behind, dtype=ROW), lost


def salvage(path: Path) -> tuple[dict[int, tuple[str, int]], dict[int, pl.DataFrame], int]:
    """Every readable row of a (damaged) cache file: model names, rows per model, and the unreadable ranges."""
    try:
        con = sqlite3.connect(path, isolation_level=None)
        con.execute("SELECT 1 FROM sqlite_master").fetchall()
    except sqlite3.Error:
        return {}, {}, 1
    names: dict[int, tuple[str, int]] = {}
    lost = 0
    try:
        names = {i: (ident, n) for i, ident, n in con.execute("SELECT id, identity, max_length FROM models")}
    except sqlite3.Error:
        lost += 1
    try:
        ids = [r[0] for r in con.execute("SELECT DISTINCT model FROM pair_scores")]
    except sqlite3.Error:
        ids = list(names)
        lost += 1
    rows: dict[int, pl.DataFrame] = {}
    for m in ids:
        got, bad = _read_model(con, m)
        lost += bad
        rows[m] = pl.DataFrame({"q": got["q"], "d": got["d"], "score": got["score"]}, schema=SCORE_SCHEMA).unique(
            ["q", "d"]
        )
    con.close()
    return names, rows, lost


def repair(path: Path) -> dict[str, int | str]:
    """Set the damaged score file aside (with its WAL and shared-memory files, into the cache's `quarantine/`),
    salvage what is readable into a fresh one. Returns what happened."""
    quarantine = CacheLayout(path.parent).quarantine
    kept = set_aside(
        path, "damaged; its readable scores salvaged", quarantine, "scores", ("-wal", "-shm"), derived=False
    )
    names, rows, lost = salvage(kept)
    store = SQLiteStore(path)
    saved = 0
    for m, frame in rows.items():
        identity, max_length = names.get(m, (None, 0))
        for i in range(0, frame.height, 200_000):
            saved += store.put_model_rows(m, identity, max_length, frame.slice(i, 200_000))
    store.close()
    return {"quarantined": str(kept), "salvaged": saved, "models": len(rows), "unreadable_ranges": lost}
