"""Weighing and pruning the cache folder (terazi.upkeep.usage): entries by when a run last used them, a size budget
met least recently used first, and what is never pruned."""

from __future__ import annotations

import os
import time

import pytest

from terazi.base.amounts import parse_age, parse_size
from terazi.upkeep import usage as cache_usage
from terazi.upkeep.usage import GRACE_SECONDS, entries, prunable, usage


def entry(path, size: int, days_ago: float, now: float, marker=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    if marker:
        path.mkdir()
        (path / "data.bin").write_bytes(os.urandom(size))
        (path / marker).write_text("{}")
        stamp = path / marker
    else:
        path.write_bytes(os.urandom(size))
        stamp = path
    t = now - days_ago * 86400
    os.utime(stamp, (t, t))
    return path


@pytest.fixture
def cache(tmp_path):
    now = time.time()
    c = tmp_path / "cache"
    entry(c / "outputs" / "ranking-old", 40_000, 50, now, ".meta.json")
    entry(c / "outputs" / "per-query-mid", 40_000, 20, now, ".meta.json")
    entry(c / "outputs" / "runs-new", 40_000, 1, now, ".meta.json")
    entry(c / "outputs" / "plot-x.txt", 4_000, 60, now)
    entry(c / "candidates" / "abc", 80_000, 45, now, "manifest.json")
    entry(c / "corpus" / "f.parquet", 8_000, 0.001, now)  # used a minute ago: within the grace period
    entry(c / "work" / "queries-x", 4_000, 0.5, now)  # a plan of a run that may still be running
    entry(c / "scores.sqlite", 200_000, 90, now)  # the score store: never pruned
    return c, now


def names(chosen):
    return [e.path.name for e in chosen]


def test_older_than_takes_what_no_run_used_since_and_never_the_scores_or_a_running_plan(cache):
    c, now = cache
    assert names(prunable(c, older_than=30 * 86400, now=now)) == ["plot-x.txt", "ranking-old", "abc"]
    assert names(prunable(c, older_than=0, now=now)) == [
        "plot-x.txt",
        "ranking-old",
        "abc",
        "per-query-mid",
        "runs-new",
    ]  # not the corpus (grace), not the plan (a day)
    assert GRACE_SECONDS >= 60


def test_a_size_budget_is_met_least_recently_used_first(cache):
    c, now = cache
    total = sum(e.size for e in entries(c)) + (c / "scores.sqlite").stat().st_blocks * 512
    small = (c / "outputs" / "plot-x.txt").stat().st_blocks * 512
    chosen = prunable(c, max_size=total - small, now=now)
    assert names(chosen) == ["plot-x.txt"]
    chosen = prunable(c, max_size=total - small - 1, now=now)
    assert names(chosen) == ["plot-x.txt", "ranking-old"]
    everything = prunable(c, max_size=0, now=now)  # the scores alone exceed it: all that may go, goes
    assert "scores.sqlite" not in names(everything) and "f.parquet" not in names(everything)
    assert {row[0] for row in usage(c)} >= {"outputs", "candidates", "scores (kept)"}


def test_removing_an_entry_and_reading_ages_and_sizes(cache):
    c, now = cache
    [old] = [e for e in entries(c) if e.path.name == "ranking-old"]
    assert old.part == "outputs" and now - old.used == pytest.approx(50 * 86400, abs=5) and old.freed == old.size
    os.link(old.path / "data.bin", c / "linked.bin")  # a results folder links it: removing frees nothing
    assert [e for e in entries(c) if e.path.name == "ranking-old"][0].freed < old.size
    cache_usage.remove(old)
    assert not old.path.exists()
    assert parse_age("30d") == 30 * 86400 and parse_age("12h") == 43200 and parse_age("2") == 2 * 86400
    assert parse_size("20G") == 20 << 30 and parse_size("1.5k") == 1536 and parse_size("500MiB") == 500 << 20
    for bad in ("soon", "-1d"):
        with pytest.raises(ValueError):
            parse_age(bad)
    with pytest.raises(ValueError):
        parse_size("lots")
