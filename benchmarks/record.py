"""Measured figures in one dated place: each benchmark writes its headline figures to benchmarks/results/<name>.json.

A figure from a shared machine means little without the day it was measured, the code it measured and how busy the
machine was, so every file carries them beside the figures:

    {"benchmark": "bench_warm", "command": "benchmarks/bench_warm.py --skip-demo", "date": "2026-12-05 09:14 UTC",
     "commit": "5d2e2ba", "machine": "2 cores, load 3.1 2.8 2.5", "cpus": 2, "load": [3.1, 2.8, 2.5],
     "figures": {...}}

`load` is the machine's load average over 1, 5 and 15 minutes when the benchmark ended (the 5- and 15-minute ones
cover most runs); `commit` ends in `+changes` when the code measured was not committed. A benchmark's newest run
replaces its file (git keeps the ones before); benchmarks/results/history.md holds the figures measured before the
benchmarks wrote their own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
CODE = ("terazi", "flows", "tasks", "schemas", "deployments", "benchmarks/*.py")


def commit() -> str:
    """The short hash of HEAD, `+changes` when the measured code differs from it; `unknown` outside a checkout."""

    def git(*args: str) -> str:
        out = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)
        return out.stdout.strip() if out.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD")
    if not head:
        return "unknown"
    return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no", "--", *CODE) else "")


def record(name: str, figures: dict, folder: Path = RESULTS) -> Path:
    """Write `figures` (JSON-able: numbers, strings, lists, dicts) as `folder/<name>.json` with the date, the commit,
    the command and the machine's load; returns the file."""
    load = [round(x, 2) for x in os.getloadavg()]
    body = {
        "benchmark": name,
        "command": " ".join([Path(sys.argv[0]).as_posix().removeprefix(f"{ROOT.as_posix()}/"), *sys.argv[1:]]),
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "commit": commit(),
        "machine": f"{os.cpu_count()} cores, load {' '.join(f'{x:.1f}' for x in load)}",
        "cpus": os.cpu_count(),
        "load": load,
        "figures": _rounded(figures),
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(body, indent=1, ensure_ascii=False, default=_plain) + "\n", encoding="utf-8")
    tmp.replace(path)
    print(f"figures written to {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return path


def _rounded(value):
    """Floats to 6 significant digits (a timing's noise is in the second), inside dicts and lists."""
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {str(k): _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value


def _plain(value):
    """numpy scalars as Python numbers, paths and anything else as text."""
    return value.item() if hasattr(value, "item") else str(value)
