"""A full disk is reported for the folder that is on it (results or cache), as one line naming that folder, whichever
write hits it; never as a Prefect state ("UnfinishedRun: Run is in PENDING state"), never retried. The writes are
made to fail as a full disk fails them (ENOSPC without a file name from a buffered write; SQLite's "database or disk
is full"), and the free space is what the disks would report; tests/test_stop_stages.py's data is reused."""

from __future__ import annotations

import errno
import json
import sqlite3

import pytest

from terazi.errors import DiskFullError
from terazi.paths import disk_full
from tests.test_stop_stages import data  # noqa: F401 - the module fixture: 12 passages, first stage from TREC runs


def test_the_folder_holding_the_file_or_the_one_without_space_is_named(tmp_path, monkeypatch):
    results, cache = tmp_path / "results", tmp_path / "results" / "cache"  # one inside the other: the innermost
    folders = {"results folder": (results, "--out"), "cache folder": (cache, "--cache")}
    named = disk_full(OSError(errno.ENOSPC, "No space left on device", str(cache / "scores.db")), folders)
    assert isinstance(named, DiskFullError) and str(named).startswith(f"disk full under the cache folder {cache} (")
    assert "point --cache at another one" in str(named)
    free = {results: 0, cache: 10 << 20}
    monkeypatch.setattr("terazi.paths._free_bytes", lambda folder: free[folder])
    assert "under the results folder" in str(disk_full(OSError(errno.ENOSPC, "No space left on device"), folders))
    free = {results: 10 << 20, cache: 0}
    assert "under the cache folder" in str(disk_full(sqlite3.OperationalError("database or disk is full"), folders))
    assert disk_full(OSError(errno.EACCES, "Permission denied"), folders) is None


def run_with(tmp_path, data, monkeypatch, where: str, fail):  # noqa: F811
    from terazi.flows.evaluate import evaluate
    from terazi.schemas import EvalConfig

    monkeypatch.setattr(where, fail)
    config = EvalConfig.model_validate({
        "datasets": [{"path": str(data / "ds"), "name": "stop", "first_stage_runs": str(data / "runs")}],
        "conditions": ["clean"], "rerankers": [{"name": "bm25", "kind": "bm25"}], "depth": 12, "rerank_depth": 12,
        "robustness": "end-to-end", "out_dir": str(tmp_path / "results"), "run_name": "full",
        "cache_dir": str(tmp_path / "cache"), "offline": True})
    with pytest.raises(DiskFullError) as raised:
        evaluate(config)
    marker = json.loads((tmp_path / "results" / "full" / ".terazi-incomplete").read_text())
    assert marker["status"] == "stopped" and marker["reason"] == str(raised.value)
    return str(raised.value)


def test_a_full_cache_disk_while_scores_are_written(prefect_server, tmp_path, data, monkeypatch):  # noqa: F811
    def full(*args, **kwargs):  # BM25's chunk scores go to the plan's work folder in the cache (it bypasses the store)
        raise OSError(errno.ENOSPC, "No space left on device")

    cache = tmp_path / "cache"
    monkeypatch.setattr("terazi.paths._free_bytes", lambda folder: 0 if folder == cache else 1 << 30)
    message = run_with(tmp_path, data, monkeypatch, "terazi.rerank.stage.score_unstored", full)
    assert message.startswith(f"disk full under the cache folder {cache} (0 KiB free)")


def test_a_full_results_disk_while_runs_are_exported(prefect_server, tmp_path, data, monkeypatch):  # noqa: F811
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")  # what a buffered write raises: no file name

    results = tmp_path / "results" / "full"
    monkeypatch.setattr("terazi.paths._free_bytes", lambda folder: 0 if folder == results else 1 << 30)
    message = run_with(tmp_path, data, monkeypatch, "terazi.data.runfolder.write_rankings", full)
    assert message.startswith(f"disk full under the results folder {results}")
