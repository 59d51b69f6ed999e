"""The temporary server's database is migrated once: a later server on the same file, at the revision this Prefect
version left it at and with the same Prefect collections installed, starts with migrations and block registration
off; anything else starts as Prefect would."""

from __future__ import annotations

import sqlite3

import prefect
import pytest
from prefect.settings import PREFECT_API_DATABASE_CONNECTION_URL, temporary_settings

from terazi.cli import prefect_db


def database(path, revision: str | None, block_types: int = 3) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE IF NOT EXISTS block_type (name TEXT)")
    con.execute("DELETE FROM block_type")
    con.executemany("INSERT INTO block_type VALUES (?)", [(f"b{i}",) for i in range(block_types)])
    con.execute("CREATE TABLE IF NOT EXISTS alembic_version (version_num TEXT)")
    con.execute("DELETE FROM alembic_version")
    if revision:
        con.execute("INSERT INTO alembic_version VALUES (?)", (revision,))
    con.commit()
    con.close()


@pytest.fixture
def db(tmp_path, monkeypatch):
    for pair in prefect_db.SETTINGS.items():
        for name in pair:
            monkeypatch.delenv(name, raising=False)
    path = tmp_path / "prefect.db"
    with temporary_settings({PREFECT_API_DATABASE_CONNECTION_URL: f"sqlite+aiosqlite:///{path}"}):
        yield path


def test_a_database_this_version_migrated_is_not_migrated_again(db, monkeypatch):
    assert prefect_db.start_settings() == {}  # no database yet: Prefect creates and migrates it
    database(db, "27d8f4e1a6c9")
    assert prefect_db.start_settings() == {}  # never seen by a server of this version
    prefect_db.remember()  # a server answered on it
    off = {"PREFECT_SERVER_DATABASE_MIGRATE_ON_START": "false", "PREFECT_SERVER_REGISTER_BLOCKS_ON_START": "false",
           "PREFECT_SERVER_MEMOIZE_BLOCK_AUTO_REGISTRATION": "false"}
    assert prefect_db.start_settings() == off
    database(db, "27d8f4e1a6c9", block_types=0)  # `prefect server database reset` since: register them again
    assert prefect_db.start_settings() == {}
    database(db, "27d8f4e1a6c9")

    installed = prefect_db._collections()
    monkeypatch.setattr(prefect_db, "_collections", lambda: [*installed, ["prefect_aws", "prefect_aws", "0.5.0"]])
    assert prefect_db.start_settings() == {}  # a collection installed since: its block types are registered
    monkeypatch.setattr(prefect_db, "_collections", lambda: installed)
    assert prefect_db.start_settings() == off

    database(db, "ffffffffffff")  # another Prefect version moved it on
    assert prefect_db.start_settings() == {}
    database(db, "27d8f4e1a6c9")
    monkeypatch.setattr(prefect, "__version__", "0.0.0")  # this is another version than the one that recorded it
    assert prefect_db.start_settings() == {}


def test_the_users_own_setting_and_other_databases_are_left_alone(db, monkeypatch):
    database(db, "27d8f4e1a6c9")
    prefect_db.remember()
    for name in (n for pair in prefect_db.SETTINGS.items() for n in pair):
        monkeypatch.setenv(name, "true")
        assert prefect_db.start_settings() == {}
        monkeypatch.delenv(name)
    assert prefect_db.start_settings() != {}
    db.unlink()
    assert prefect_db.start_settings() == {}  # a new file must be created and migrated
    with temporary_settings({PREFECT_API_DATABASE_CONNECTION_URL: "postgresql+asyncpg://u:p@db/prefect"}):
        assert prefect_db.start_settings() == {}
        prefect_db.remember()  # nothing to record


def test_a_temporary_server_that_cannot_start_says_so_in_one_line_naming_its_log(tmp_path, monkeypatch):
    """Its output goes to $PREFECT_HOME/terazi-temporary-server.log (not the terminal), and the error names that."""
    from prefect.settings import PREFECT_API_URL, PREFECT_HOME

    from terazi.cli.prefect_api import TEMPORARY_LOG, temporary_server
    from terazi.errors import TeraziError

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    bad = f"sqlite+aiosqlite:///{tmp_path / 'no-such-folder' / 'deeper' / 'prefect.db'}"
    (tmp_path / "no-such-folder").write_text("a file where the database's folder should be")
    with temporary_settings({PREFECT_HOME: str(tmp_path), PREFECT_API_URL: None,
                             PREFECT_API_DATABASE_CONNECTION_URL: bad}):
        with pytest.raises(TeraziError, match=r"exited with code \d+ before answering \(see .*"
                                              + TEMPORARY_LOG.replace(".", r"\.") + r"\)"):
            with temporary_server() as ready:
                ready()
    assert (tmp_path / TEMPORARY_LOG).is_file()  # what the server printed (tests set Prefect's server logging quiet)
