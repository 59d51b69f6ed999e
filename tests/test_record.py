"""benchmarks/record.py: a benchmark's figures written with the day, the code and the machine that measured them."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from benchmarks.record import record

ROOT = Path(__file__).resolve().parents[1]


def test_a_record_carries_date_commit_machine_and_the_figures(tmp_path):
    before = datetime.now(UTC).replace(second=0, microsecond=0)
    path = record(
        "bench_x",
        {"seconds": 1.23456789, "pairs": np.int64(7), "rows": {0.05: [np.float32(0.5)]}, "folder": tmp_path},
        folder=tmp_path,
    )
    assert path == tmp_path / "bench_x.json" and not list(tmp_path.glob("*.tmp"))
    body = json.loads(path.read_text(encoding="utf-8"))
    assert body["benchmark"] == "bench_x"
    when = datetime.strptime(body["date"], "%Y-%m-%d %H:%M UTC").replace(tzinfo=UTC)
    assert before <= when <= datetime.now(UTC) + timedelta(minutes=1)
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    assert body["commit"].removesuffix("+changes") == (head or "unknown")  # outside a checkout: unknown
    assert body["cpus"] == os.cpu_count() and len(body["load"]) == 3 and f"{os.cpu_count()} cores" in body["machine"]
    assert body["figures"] == {"seconds": 1.23457, "pairs": 7, "rows": {"0.05": [0.5]}, "folder": str(tmp_path)}
