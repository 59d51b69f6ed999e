"""Score stores and the cache folder: keys, a damaged cache named and repaired, a full disk reported as such,
the first cache layout carried over, a shared store two processes use, merging, relocatable candidate sets."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from terazi.base import fingerprint
from terazi.base.errors import CacheError
from terazi.rerank.pair_keys import variant_keys
from terazi.rerank.store import ModelKey, Scores, SharedStore, SQLiteStore
from terazi.rerank.store import sqlite as sqlite_store
from tests.conftest import TINY_FLAGS

ROOT = str(Path(__file__).resolve().parents[1])
MODEL = ModelKey("cross-encoder:tiny#abc", 64)


def frame(n: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "q": rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64),
            "d": rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64),
            "score": rng.normal(size=n),
        }
    )


def doc_key(doc_id: str, text: str) -> int:
    """A document's key as the corpus table computes it: its id with the hash of its text."""
    return int(fingerprint.doc_keys([doc_id], fingerprint.text_keys([text]))[0])


def test_pair_keys_are_the_hashes_of_query_and_document():
    query = "çay kaç dakika demlenir"
    var = variant_keys(pl.DataFrame({"condition": ["clean"], "sample": [0], "query_id": ["q1"], "text": [query]}))
    assert var["q"][0] == int.from_bytes(bytes.fromhex(fingerprint.of_text(query)), "big", signed=True)
    d = doc_key("d1", "Siyah çay demlikte demlenir.")
    assert doc_key("d2", "Siyah çay demlikte demlenir.") != d  # same text, another id
    assert doc_key("d1", "Siyah çay demlikte demlenir!") != d  # same id, another text
    assert MODEL.id != ModelKey(MODEL.identity, 128).id


def test_sqlite_store_round_trip_keeps_first_score(tmp_path):
    store = SQLiteStore(tmp_path / "scores.sqlite")
    rows = frame(5000)
    assert store.put_many(MODEL, rows) == 5000
    assert store.put_many(MODEL, rows.with_columns(pl.col("score") + 1).head(10)) == 0  # first write wins
    got = store.get_many(MODEL, rows.select("q", "d").head(100).vstack(frame(50, 1).select("q", "d")))
    assert got.height == 100
    assert got.sort("q", "d").equals(rows.head(100).sort("q", "d"))
    assert store.count(MODEL) == 5000 and store.count(ModelKey("other", 1)) == 0
    assert store.models() == [(MODEL.id, MODEL.identity, 64, 5000)]


def test_first_cache_layout_is_carried_over(tmp_path):
    """Rows of the first layout (text model, hex hashes) are found under the keys of the same texts."""
    db = tmp_path / "scores.sqlite"
    con = sqlite3.connect(db)
    con.execute(
        "CREATE TABLE scores (model TEXT NOT NULL, max_length INTEGER NOT NULL, query_hash TEXT NOT NULL, "
        "doc_id TEXT NOT NULL, doc_hash TEXT NOT NULL, score REAL NOT NULL, "
        "PRIMARY KEY (model, max_length, query_hash, doc_id, doc_hash)) WITHOUT ROWID"
    )
    con.execute(
        "INSERT INTO scores VALUES (?, ?, ?, ?, ?, ?)",
        (MODEL.identity, 64, fingerprint.of_text("çay"), "d1", fingerprint.of_text("Siyah çay."), 0.25),
    )
    con.commit()
    con.close()
    store = SQLiteStore(db)
    q, d = int(fingerprint.text_keys(["çay"])[0]), doc_key("d1", "Siyah çay.")
    assert store.get_many(MODEL, pl.DataFrame({"q": [q], "d": [d]}))["score"].to_list() == [0.25]
    assert not sqlite3.connect(db).execute("SELECT 1 FROM sqlite_master WHERE name='scores'").fetchone()


def damage(path: Path, where: float) -> None:
    """Two pages of garbage in the file (after moving what the WAL holds into it, as a closed cache would be)."""
    import gc

    gc.collect()  # stores left by earlier commands close their connections
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.seek(int(size * where))
        f.write(np.random.default_rng(7).bytes(8192))  # the same garbage every time


def test_damaged_cache_is_named_and_repaired(tmp_path):
    db = tmp_path / "scores.sqlite"
    store = SQLiteStore(db)
    rows = frame(100_000)
    store.put_many(MODEL, rows)
    store.close()
    damage(db, 0.6)
    with pytest.raises(CacheError, match=f"score cache {db} is damaged .*terazi cache repair --cache {tmp_path}"):
        Scores(tmp_path).get_many(MODEL, rows.select("q", "d"))
    from terazi.rerank.store.scores import check_opens

    with pytest.raises(CacheError, match="terazi cache repair"):
        check_opens(tmp_path)
    report = sqlite_store.repair(db)
    assert Path(report["quarantined"]).is_file() and report["unreadable_ranges"] >= 1
    assert 95_000 < report["salvaged"] < 100_000  # only the rows on the damaged pages are lost
    fresh = SQLiteStore(db)
    assert fresh.check() == [] and fresh.count(MODEL) == report["salvaged"]
    kept = fresh.get_many(MODEL, rows.select("q", "d"))
    assert kept.join(rows, on=["q", "d"]).filter(pl.col("score") != pl.col("score_right")).height == 0


def test_a_header_that_is_not_sqlite_is_a_cache_error(tmp_path):
    db = tmp_path / "scores.sqlite"
    store = SQLiteStore(db)
    store.put_many(MODEL, frame(10))
    store.close()  # the last connection checkpoints the WAL into the file
    with open(db, "r+b") as f:
        f.write(b"not a database at all" * 10)
    with pytest.raises(CacheError, match="file is not a database"):
        SQLiteStore(db)
    assert sqlite_store.repair(db)["salvaged"] == 0 and SQLiteStore(db).count() == 0


def test_full_disk_keeps_sqlites_own_error(tmp_path):
    """Disk full (here: the page limit SQLite reports the same way) is not hidden behind "cannot rollback"."""
    from terazi.cli.common import OUTPUTS, explain

    store = SQLiteStore(tmp_path / "scores.sqlite")
    store._conn().execute("PRAGMA max_page_count=20")
    with pytest.raises(sqlite3.OperationalError, match="database or disk is full") as e:
        store.put_many(MODEL, frame(50_000))
    assert "rollback" not in str(e.value)
    token = OUTPUTS.set({"cache folder": (tmp_path, "--cache")})  # what `terazi cache merge --cache …` declares
    try:
        assert explain(e.value)[0].startswith(f"disk full under the cache folder {tmp_path} (")
    finally:
        OUTPUTS.reset(token)
    assert store.count() == 0  # the transaction left nothing behind


SHARED_WORKER = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from terazi.schemas import BM25Spec
    from tests.stages import rerank_row, wrap_scorers
    from tests.test_rerank import Exploding, inputs
    made = []  # batch size 1: blocks of 8 pairs, chunks of 16
    wrap_scorers(lambda s: made.append(Exploding(s, 10**6, 1)) or made[-1])
    ds, cands, variants, _ = inputs(Path({data!r}))
    result, ranked = rerank_row(ds, cands, variants, BM25Spec(name="bm25", kind="bm25"), Path({tmp!r}),
                                rerank_depth=12, chunk_pairs=16, cache=Path({cache!r}), score_store={store!r})
    ranked.write_parquet({out!r})
    print(json.dumps({{"scored": result.pairs_scored, "model_pairs": sum(s.pairs for s in made),
                       "unique": result.pairs_unique}}))
""")


def test_two_processes_share_a_store_folder_and_the_second_scores_nothing(tmp_path, tiny_dataset):
    store = tmp_path / "store"
    got = []
    for name in ("first", "second"):  # separate processes, separate cache folders: only the store is shared
        code = SHARED_WORKER.format(
            root=ROOT,
            data=str(tiny_dataset),
            cache=str(tmp_path / f"cache-{name}"),
            store=str(store),
            out=str(tmp_path / f"{name}.parquet"),
            tmp=str(tmp_path / name),
        )
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        got.append(json.loads(run.stdout.strip().splitlines()[-1]))
    assert got[0]["scored"] == got[0]["unique"] == 96 and got[0]["model_pairs"] == 96
    assert got[1]["scored"] == 0 and got[1]["model_pairs"] == 0
    assert pl.read_parquet(tmp_path / "first.parquet").equals(pl.read_parquet(tmp_path / "second.parquet"))
    shared = SharedStore(str(store))
    ((model_id, identity, _, parts),) = shared.models()
    assert identity.startswith("bm25:") and parts == 96 // 16 and shared.count() == 96  # one part per chunk
    assert not list((store / "tmp").iterdir())  # every part was renamed into place


def test_cache_commands_check_repair_and_merge(tmp_path):
    from terazi.cli import app

    runner = CliRunner()
    a, b = tmp_path / "a", tmp_path / "b"
    for folder, n, seed in ((a, 3000, 0), (b, 2000, 1)):
        store = SQLiteStore(folder / "scores.sqlite")
        store.put_many(MODEL, frame(n, seed))
        store.close()
    shared = tmp_path / "shared"
    SharedStore(str(shared)).put_many(ModelKey("bm25:x", 0), frame(500, 2))
    assert runner.invoke(app, ["cache", "check", "--cache", str(a)]).exit_code == 0
    merged = runner.invoke(app, ["cache", "merge", str(b), str(shared), "--cache", str(a)])
    assert merged.exit_code == 0, merged.output
    assert SQLiteStore(a / "scores.sqlite").count() == 5500
    pushed = runner.invoke(app, ["cache", "merge", str(a), "--into", str(tmp_path / "pushed")])
    assert pushed.exit_code == 0 and SharedStore(str(tmp_path / "pushed")).count() == 5500
    runner.invoke(app, ["cache", "merge", str(a), "--into", str(tmp_path / "pushed")])  # again: nothing doubles
    assert SharedStore(str(tmp_path / "pushed")).count() == 5500
    assert [parts for *_, parts in SharedStore(str(tmp_path / "pushed")).models()] == [1, 1]  # compacted

    damage(a / "scores.sqlite", 0.5)
    checked = runner.invoke(app, ["cache", "check", "--cache", str(a)])
    assert checked.exit_code == 2 and "terazi cache repair" in checked.output
    repaired = runner.invoke(app, ["cache", "repair", "--cache", str(a)])
    assert repaired.exit_code == 0 and "salvaged" in repaired.output
    assert runner.invoke(app, ["cache", "check", "--cache", str(a)]).exit_code == 0
    assert list((a / "quarantine").glob("scores-scores.sqlite-*/scores.sqlite"))


def test_copied_cache_works_from_its_new_place(tmp_path, tiny_dataset):
    """Identical results from a copy with the original gone; a deleted TREC file is rebuilt, a deleted parquet is
    computed again (or, for a set named by fingerprint, stops the run with its name)."""
    from terazi.corrupt.variants import corrupt_queries
    from terazi.data.loading import load_dataset
    from terazi.retrieval.frozen import publish_candidates
    from terazi.schemas import BM25Spec, CorruptionSpec, DatasetSpec, EncoderSpec
    from tests.stages import first_stage, rank_row

    ds = load_dataset(DatasetSpec(path=str(tiny_dataset), name="tiny"))
    vs = [corrupt_queries(ds, c, CorruptionSpec(), 13, str(tmp_path / "run")) for c in ("clean", "upper")]
    spec = BM25Spec(name="bm25", kind="bm25")

    def run(cache: Path, out: str):
        cs = first_stage(ds, vs, EncoderSpec(), 10, str(cache), offline=True)
        return cs, pl.read_parquet(rank_row(ds, cs, vs, spec, 5, str(cache), str(tmp_path / out)).path)

    first, ranked = run(tmp_path / "orig", "r1")
    shutil.copytree(tmp_path / "orig", tmp_path / "copy")
    shutil.rmtree(tmp_path / "orig")  # nothing may be read from the old place
    again, ranked_again = run(tmp_path / "copy", "r2")
    assert again.reused and again.fingerprint == first.fingerprint and ranked_again.equals(ranked)
    assert Path(again.path).is_relative_to(tmp_path / "copy")
    manifest = json.loads((Path(again.path).parent / "manifest.json").read_text())
    assert manifest["path"] == "candidates.parquet" and set(manifest["files"]) == {
        "candidates.parquet",
        "runs/clean.trec",
        "runs/upper.trec",
    }

    trec = Path(again.trec_dir) / "upper.trec"
    original = trec.read_bytes()
    trec.unlink()
    rebuilt, _ = run(tmp_path / "copy", "r3")
    assert rebuilt.reused and trec.read_bytes() == original

    publish_candidates(rebuilt, tmp_path / "results")
    linked = tmp_path / "results" / "candidates" / "tiny" / "upper.trec"
    assert linked.read_bytes() == original and os.path.samefile(linked, trec)  # linked, not copied

    (Path(again.path)).unlink()
    recomputed, ranked_new = run(tmp_path / "copy", "r4")
    assert not recomputed.reused and recomputed.fingerprint == first.fingerprint and ranked_new.equals(ranked)
    assert list((tmp_path / "copy" / "quarantine").glob("candidates-*"))

    Path(recomputed.path).write_bytes(b"damaged")
    with pytest.raises(CacheError, match="candidates.parquet is missing or damaged"):
        first_stage(ds, vs, EncoderSpec(), 10, str(tmp_path / "copy"), offline=True, frozen=first.fingerprint)


def test_run_on_a_damaged_cache_stops_then_repair_restores_identical_results(prefect_server, tmp_path, tiny_dataset):
    from terazi.cli import app

    runner = CliRunner()
    cache = tmp_path / "cache"
    args = [
        "run",
        "--dataset",
        str(tiny_dataset),
        "--cache",
        str(cache),
        *TINY_FLAGS,
        "--offline",
    ]
    first = runner.invoke(app, [*args, "--out", str(tmp_path / "r1")])
    assert first.exit_code == 0, first.output
    db = cache / "scores.sqlite"
    for extra in ("-wal", "-shm"):
        Path(str(db) + extra).unlink(missing_ok=True)
    db.write_bytes(os.urandom(db.stat().st_size))  # the whole file damaged

    stopped = runner.invoke(app, [*args, "--out", str(tmp_path / "r2")])
    message = " ".join(stopped.output.split())
    assert stopped.exit_code == 2 and f"score cache {db} is damaged" in message and "terazi cache repair" in message
    assert "Traceback" not in stopped.output
    repaired = runner.invoke(app, ["cache", "repair", "--cache", str(cache)])
    assert repaired.exit_code == 0 and "quarantine" in repaired.output
    third = runner.invoke(app, [*args, "--out", str(tmp_path / "r3")])
    assert third.exit_code == 0, third.output
    assert (tmp_path / "r1" / "leaderboard.csv").read_bytes() == (tmp_path / "r3" / "leaderboard.csv").read_bytes()


def test_a_ranking_task_retried_after_its_cost_step_failed_still_has_its_work_files(
    tmp_path, tiny_dataset, monkeypatch
):
    """The plan's work files outlive every step of the ranking task that can fail, so its retry finds them."""
    from terazi.corrupt.variants import corrupt_queries
    from terazi.data.loading import load_dataset
    from terazi.rerank import metering
    from terazi.rerank.stage import finish_rerank, plan_rerank, score_chunk
    from terazi.schemas import BM25Spec, CorruptionSpec, DatasetSpec, EncoderSpec
    from tests.stages import first_stage, rank_row

    ds = load_dataset(DatasetSpec(path=str(tiny_dataset), name="tiny"))
    vs = [corrupt_queries(ds, c, CorruptionSpec(), 13, str(tmp_path / "run")) for c in ("clean", "upper")]
    cs = first_stage(ds, vs, EncoderSpec(), 10, str(tmp_path / "cache"), offline=True)
    spec = BM25Spec(name="bm25", kind="bm25")
    plan = plan_rerank(ds, cs, vs, spec, 5, str(tmp_path / "cache"))
    chunks = [score_chunk(plan, i) for i in range(len(plan.chunks))]
    settle = metering.settle

    def fails_once(*a, **k):
        monkeypatch.setattr(metering, "settle", settle)
        raise OSError("injected: cost store unreachable")

    monkeypatch.setattr(metering, "settle", fails_once)
    with pytest.raises(OSError, match="injected"):
        finish_rerank(plan, chunks, str(tmp_path / "out"))
    retried = finish_rerank(plan, chunks, str(tmp_path / "out"))
    assert retried.pairs_scored == plan.unique and not Path(plan.work).exists()
    alone = rank_row(ds, cs, vs, spec, 5, str(tmp_path / "cache2"), str(tmp_path / "alone"))
    assert pl.read_parquet(retried.path).equals(pl.read_parquet(alone.path))


def _open_together(path: str, barrier) -> None:
    barrier.wait()
    SQLiteStore(path)


def test_runs_opening_one_new_cache_together_all_get_it(tmp_path):
    """Switching a new file to WAL answers `database is locked` at once to a second process doing the same."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    for i in range(8):
        barrier = ctx.Barrier(6)
        procs = [ctx.Process(target=_open_together, args=(str(tmp_path / f"s{i}.sqlite"), barrier)) for _ in range(6)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert [p.exitcode for p in procs] == [0] * 6
