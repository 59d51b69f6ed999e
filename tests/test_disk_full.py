"""A full disk is reported for the folder that is on it (results or cache), as one line naming that folder, whichever
write hits it; never as a Prefect state ("UnfinishedRun: Run is in PENDING state"), never retried. The writes are
made to fail as a full disk fails them (ENOSPC without a file name from a buffered write; SQLite's "database or disk
is full"), and the free space is what the disks would report; tests/test_stop_stages.py's data is reused."""

from __future__ import annotations

import errno
import json
import sqlite3

import pytest

from terazi.base.errors import DiskFullError
from terazi.base.paths import disk_full
from tests.conftest import TERAZI
from tests.test_stop_stages import data  # noqa: F401 - the module fixture: 12 passages, first stage from TREC runs


def test_the_folder_holding_the_file_or_the_one_without_space_is_named(tmp_path, monkeypatch):
    results, cache = tmp_path / "results", tmp_path / "results" / "cache"  # one inside the other: the innermost
    folders = {"results folder": (results, "--out"), "cache folder": (cache, "--cache")}
    named = disk_full(OSError(errno.ENOSPC, "No space left on device", str(cache / "scores.db")), folders)
    assert isinstance(named, DiskFullError) and str(named).startswith(f"disk full under the cache folder {cache} (")
    assert "point --cache at another one" in str(named)
    free = {results: 0, cache: 10 << 20}
    monkeypatch.setattr("terazi.base.paths._free_bytes", lambda folder: free[folder])
    assert "under the results folder" in str(disk_full(OSError(errno.ENOSPC, "No space left on device"), folders))
    free = {results: 10 << 20, cache: 0}
    assert "under the cache folder" in str(disk_full(sqlite3.OperationalError("database or disk is full"), folders))
    assert disk_full(OSError(errno.EACCES, "Permission denied"), folders) is None


def run_with(tmp_path, data, monkeypatch, where: str, fail):  # noqa: F811
    from terazi.flows.evaluate import evaluate
    from terazi.schemas import EvalConfig

    monkeypatch.setattr(where, fail)
    config = EvalConfig.model_validate(
        {
            "datasets": [{"path": str(data / "ds"), "name": "stop", "first_stage_runs": str(data / "runs")}],
            "conditions": ["clean"],
            "rerankers": [{"name": "bm25", "kind": "bm25"}],
            "depth": 12,
            "rerank_depth": 12,
            "robustness": "end-to-end",
            "out_dir": str(tmp_path / "results"),
            "run_name": "full",
            "cache_dir": str(tmp_path / "cache"),
            "offline": True,
        }
    )
    with pytest.raises(DiskFullError) as raised:
        evaluate(config)
    marker = json.loads((tmp_path / "results" / "full" / ".terazi-incomplete").read_text())
    assert marker["status"] == "stopped" and marker["reason"] == str(raised.value)
    return str(raised.value)


def test_a_full_cache_disk_while_scores_are_written(prefect_server, tmp_path, data, monkeypatch):  # noqa: F811
    def full(*args, **kwargs):  # BM25's chunk scores go to the plan's work folder in the cache (it bypasses the store)
        raise OSError(errno.ENOSPC, "No space left on device")

    cache = tmp_path / "cache"
    monkeypatch.setattr("terazi.base.paths._free_bytes", lambda folder: 0 if folder == cache else 1 << 30)
    message = run_with(tmp_path, data, monkeypatch, "terazi.rerank.stage.score_unstored", full)
    assert message.startswith(f"disk full under the cache folder {cache} (0 KiB free)")


def test_a_full_results_disk_while_runs_are_exported(prefect_server, tmp_path, data, monkeypatch):  # noqa: F811
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")  # what a buffered write raises: no file name

    results = tmp_path / "results" / "full"
    monkeypatch.setattr("terazi.base.paths._free_bytes", lambda folder: 0 if folder == results else 1 << 30)
    message = run_with(tmp_path, data, monkeypatch, "terazi.data.runfolder.write_rankings", full)
    assert message.startswith(f"disk full under the results folder {results}")


def test_11_a_links_copy_across_disks_names_the_results_folder(prefect_server, tmp_path, data, monkeypatch):  # noqa: F811
    """--out on a full disk, --cache on another: hard links cannot cross file systems, so the frozen candidates are
    copied, and the copy fills the disk. shutil names the source (in the cache) first; the folder whose disk is full
    is the results folder, which holds the copy being written."""
    import os
    import shutil

    def no_link(src, dst, *a, **k):
        raise OSError(errno.EXDEV, "Invalid cross-device link", str(src), None, str(dst))

    def full_copy(src, dst, *a, **k):  # what shutil's sendfile copy raises on a full disk
        raise OSError(errno.ENOSPC, "No space left on device", str(src), None, str(dst))

    results = tmp_path / "results" / "full"
    monkeypatch.setattr(os, "link", no_link)
    monkeypatch.setattr("terazi.base.paths._free_bytes", lambda folder: 0 if folder == results else 71814708 << 10)
    message = run_with(tmp_path, data, monkeypatch, "shutil.copyfile", full_copy)
    assert message.startswith(f"disk full under the results folder {results} (0 KiB free, writing {results}/"), message
    assert "point --out at another one" in message and shutil.copyfile is full_copy


def test_12_polars_full_cache_disk_names_the_cache_folder(prefect_server, tmp_path, data, monkeypatch):  # noqa: F811
    """polars reports a full disk in its own words (ComputeError, no errno): named as any full disk, never retried."""
    import polars as pl

    cache, calls = tmp_path / "cache", []
    real = pl.DataFrame.write_parquet

    def full_under_cache(self, path, *a, **k):
        if str(path).startswith(str(cache)):
            calls.append(str(path))
            raise pl.exceptions.ComputeError(
                "parquet: File out of specification: underlying IO error: No space left on device (os error 28)"
            )
        return real(self, path, *a, **k)

    monkeypatch.setattr("terazi.base.paths._free_bytes", lambda folder: 0 if folder == cache else 1 << 30)
    message = run_with(tmp_path, data, monkeypatch, "polars.DataFrame.write_parquet", full_under_cache)
    assert message.startswith(f"disk full under the cache folder {cache} (0 KiB free)"), message
    assert len(calls) == len(set(calls)) == 1  # the first write that failed ended the run: not retried


@pytest.mark.parametrize("full", ["out", "cache"])
def test_a_real_full_disk_is_named_as_a_user_meets_it(prefect_server, tmp_path, data, full):  # noqa: F811
    """`terazi run` with --out (or --cache) on a 256 KiB tmpfs and the other on the ordinary disk (needs root to
    mount; skipped elsewhere): one line naming that folder, whichever library's write filled the disk first."""
    import os
    import subprocess

    from prefect.settings import PREFECT_API_URL

    disk = tmp_path / "small"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        out = disk / "run" if full == "out" else tmp_path / "run"
        cache = disk / "cache" if full == "cache" else tmp_path / "cache"
        proc = subprocess.run(
            [
                *TERAZI,
                "run",
                "--dataset",
                str(data / "ds"),
                "--reranker",
                "bm25",
                "--condition",
                "upper",
                "--depth",
                "12",
                "--rerank-depth",
                "12",
                "--offline",
                "--out",
                str(out),
                "--cache",
                str(cache),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value()},
        )
        what, folder = ("results", out) if full == "out" else ("cache", cache)
        assert proc.returncode == 2, proc.stderr[-3000:]
        line = " ".join(proc.stderr.split())
        assert f"error: disk full under the {what} folder {folder} (" in line and "Traceback" not in proc.stderr, line
    finally:
        subprocess.run(["umount", str(disk)], check=True)
