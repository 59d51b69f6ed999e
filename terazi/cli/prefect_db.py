"""The temporary Prefect server's database, migrated once and reused.

Every start of Prefect's server runs its database migrations (`PREFECT_SERVER_DATABASE_MIGRATE_ON_START`): Alembic
loads Prefect's whole migration history to find nothing to do, most of a second of each run's temporary server. It
then checks whether its block types are registered in the database (`PREFECT_SERVER_REGISTER_BLOCKS_ON_START`), by
hashing every block class and collection it can load: another half second. Once a server of this Prefect version has
started on the database (so it is at the revision this version migrates to, with the block types of the Prefect
collections installed now), terazi records that revision and those collections beside the database; a later
temporary server on the same SQLite file, still at that revision, with the same Prefect version and collections,
starts with both off. Anything else (another Prefect version, a collection installed or removed, a database another
version moved on or reset since, a new file, a database that is not terazi's default SQLite file, any of these
settings given by the user in the environment) starts as Prefect would.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

SETTINGS = {  # what terazi turns off for a database known current: each setting's name, then the alias Prefect also reads
    "PREFECT_SERVER_DATABASE_MIGRATE_ON_START": "PREFECT_API_DATABASE_MIGRATE_ON_START",
    "PREFECT_SERVER_REGISTER_BLOCKS_ON_START": "PREFECT_API_BLOCKS_REGISTER_ON_START",
    "PREFECT_SERVER_MEMOIZE_BLOCK_AUTO_REGISTRATION": "PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION",
}


def _database() -> Path | None:
    """The SQLite file of Prefect's database (None for another database)."""
    from prefect.settings import get_current_settings

    url = get_current_settings().server.database.connection_url
    url = url.get_secret_value() if url is not None else ""
    prefix = "sqlite+aiosqlite:///"
    if not url.startswith(prefix) or ":memory:" in url:
        return None
    return Path(url.removeprefix(prefix))


def _revision(db: Path) -> str | None:
    """The Alembic revision the database is at (None when it cannot be read, or holds no block types: a database
    reset since, whose block types a server must register again)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0)
        try:
            rows = con.execute("SELECT version_num FROM alembic_version").fetchall()
            blocks = con.execute("SELECT count(*) FROM block_type").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return None
    return rows[0][0] if len(rows) == 1 and blocks else None


def _marker(db: Path) -> Path:
    return db.with_name(f"{db.name}.terazi-migrated.json")


def _collections() -> list[list[str]]:
    """The Prefect collections installed (what the server loads block types from): name, module, version."""
    from importlib.metadata import entry_points

    return sorted([e.name, e.value, e.dist.version if e.dist else ""] for e in entry_points(group="prefect.collections"))


def _record(db: Path) -> dict | None:
    import prefect

    revision = _revision(db)
    return {"prefect": prefect.__version__, "revision": revision, "collections": _collections()} if revision else None


def start_settings() -> dict[str, str]:
    """Settings for a server about to start: migrations and block registration off when the database is known to be
    current."""
    if any(name in os.environ for pair in SETTINGS.items() for name in pair):  # the user's own choice stands
        return {}
    db = _database()
    if db is None or not db.is_file():
        return {}
    try:
        known = json.loads(_marker(db).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    record = _record(db)
    return {name: "false" for name in SETTINGS} if record is not None and known == record else {}


def remember() -> None:
    """Call once a server of this Prefect version answers: its database is at this version's revision."""
    db = _database()
    if db is None or (record := _record(db)) is None:
        return
    marker = _marker(db)
    try:
        if marker.is_file() and json.loads(marker.read_text(encoding="utf-8")) == record:
            return
        tmp = marker.with_name(f".{marker.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record), encoding="utf-8")
        tmp.replace(marker)
    except (OSError, ValueError):
        pass  # not remembered: the next server migrates, as Prefect's own would
