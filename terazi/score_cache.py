"""Persistent (model, query, document) → score store, so no pair is ever scored twice.

SQLite in WAL mode: it ships with Python, lets readers and one writer work at once, and
several processes (two runs, or Prefect workers on one machine) can share one file; writers
wait on a busy timeout instead of failing. Each chunk is committed as it is scored, so a run
killed mid-way loses at most the chunk in flight.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Iterable

SCHEMA = """
CREATE TABLE IF NOT EXISTS scores (
    model TEXT NOT NULL,
    max_length INTEGER NOT NULL,
    query_hash TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    doc_hash TEXT NOT NULL,
    score REAL NOT NULL,
    PRIMARY KEY (model, max_length, query_hash, doc_id, doc_hash)
) WITHOUT ROWID;
"""

Key = tuple[str, str, str]  # (query_hash, doc_id, doc_hash)


class ScoreCache:
    def __init__(self, path: str | Path, timeout: float = 120.0):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._timeout = timeout
        with self._conn() as con:
            con.executescript(SCHEMA)

    def _conn(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            self._local.con = con
        return con

    def get(self, model: str, max_length: int, keys: Iterable[Key]) -> dict[Key, float]:
        """Scores already known for these keys (missing keys are absent from the result)."""
        wanted = set(keys)
        by_query: dict[str, set[Key]] = {}
        for k in wanted:
            by_query.setdefault(k[0], set()).add(k)
        found: dict[Key, float] = {}
        con = self._conn()
        qhashes = list(by_query)
        for i in range(0, len(qhashes), 500):
            part = qhashes[i : i + 500]
            rows = con.execute(
                f"SELECT query_hash, doc_id, doc_hash, score FROM scores WHERE model=? AND max_length=? "
                f"AND query_hash IN ({','.join('?' * len(part))})",
                (model, max_length, *part),
            )
            for q, d, h, s in rows:
                if (q, d, h) in wanted:
                    found[(q, d, h)] = s
        return found

    def put(self, model: str, max_length: int, items: Iterable[tuple[Key, float]]) -> None:
        """Store scores in one transaction; a pair another run stored first is kept as it is."""
        rows = [(model, max_length, q, d, h, float(s)) for (q, d, h), s in items]
        if not rows:
            return
        con = self._conn()
        con.execute("BEGIN IMMEDIATE")
        try:
            con.executemany("INSERT OR IGNORE INTO scores VALUES (?, ?, ?, ?, ?, ?)", rows)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def count(self, model: str | None = None) -> int:
        sql, args = ("SELECT COUNT(*) FROM scores", ()) if model is None else ("SELECT COUNT(*) FROM scores WHERE model=?", (model,))
        return self._conn().execute(sql, args).fetchone()[0]
