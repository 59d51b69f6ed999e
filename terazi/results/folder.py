"""The results folder of one run: confined to its root, and visibly incomplete until it is finished.

A run writes `.terazi-incomplete` first and `manifest.json` last (then removes the marker), so an
interrupted run (Ctrl-C, SIGTERM, kill -9, a crash) never looks finished and is never used as a
nightly baseline.
"""

from __future__ import annotations

import json
import os
import socket
from datetime import datetime, timezone
from pathlib import Path

from terazi.paths import inside, writable_folder
from terazi.schemas.layout import RunLayout

MARKER, MANIFEST = RunLayout.MARKER, RunLayout.MANIFEST


def start(out_dir: str, run_name: str | None, kind: str, flow_run_id: str | None) -> Path:
    """Create (or reuse) the run folder inside `out_dir`, drop a stale manifest, mark it incomplete."""
    root = writable_folder(out_dir, "results folder")
    name = run_name or datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    run = inside(root, name)
    if run.exists() and not run.is_dir():
        from terazi.errors import OutputPathError

        raise OutputPathError(f"results folder {run} is a file: choose another run name")
    run.mkdir(parents=True, exist_ok=True)
    (run / MANIFEST).unlink(missing_ok=True)
    (run / MARKER).write_text(json.dumps({
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "kind": kind, "pid": os.getpid(),
        "host": socket.gethostname(), "flow_run_id": flow_run_id, "status": "running"}, indent=2))
    return run


def finish(run: Path, manifest_json: str) -> None:
    """Write the manifest last (atomically), then remove the marker: the run is complete."""
    tmp = run / (MANIFEST + ".tmp")
    tmp.write_text(manifest_json)
    tmp.replace(run / MANIFEST)
    (run / MARKER).unlink(missing_ok=True)


def mark_stopped(run: Path, reason: str) -> None:
    """Record why an incomplete run stopped (the marker stays)."""
    marker = run / MARKER
    try:
        body = json.loads(marker.read_text())
    except (OSError, ValueError):
        body = {}
    body.update(status="stopped", reason=reason, stopped=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    try:
        marker.write_text(json.dumps(body, indent=2))
    except OSError:
        pass


def stale_runs(out_dir: str | Path) -> list[tuple[Path, str | None]]:
    """Run folders under `out_dir` still marked running whose process on this machine is gone (e.g. kill -9):
    each is marked stopped; returns (folder, flow run id) so their Prefect runs can be marked crashed too."""
    import psutil

    found = []
    root = Path(out_dir)
    if not root.is_dir():
        return found
    for marker in root.glob(f"*/{MARKER}"):
        try:
            body = json.loads(marker.read_text())
        except (OSError, ValueError):
            continue
        if body.get("status") != "running" or body.get("host") != socket.gethostname():
            continue
        pid = body.get("pid")
        if isinstance(pid, int) and psutil.pid_exists(pid) and pid != os.getpid():
            continue
        mark_stopped(marker.parent, "the process that ran it is gone (killed?)")
        found.append((marker.parent, body.get("flow_run_id")))
    return found
