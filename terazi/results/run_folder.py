"""The results folder of one run: confined to its root, never overlapping the run's inputs, held by one run at a
time, and visibly incomplete until it is finished.

A run writes `.terazi-incomplete` first and `manifest.json` last (then removes the marker), so an
interrupted run (Ctrl-C, SIGTERM, kill -9, a crash) never looks finished, is never used as a
nightly baseline, and no command shows it as a result (`RunLayout.refuse_unfinished`). While it writes, the run
holds an exclusive lock on the folder itself (flock: the kernel drops it when the process dies, kill -9 included),
so a second run into the same folder is refused with the first one's process named, before it writes anything.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq

from terazi.base.errors import IncompleteRunError, OutputPathError
from terazi.base.outside import blot
from terazi.base.paths import disjoint, inside, local_path, writable_folder, write_atomic
from terazi.schemas import AnalyzeConfig, EvalConfig
from terazi.schemas.datasets import DatasetSpec
from terazi.schemas.layout import RunLayout

MARKER, MANIFEST = RunLayout.MARKER, RunLayout.MANIFEST


def check_outputs(config: EvalConfig | AnalyzeConfig, files: list[tuple[str, str]] = ()) -> None:
    """Before anything is written: outputs never overlap inputs (the config's folders, and input `files` such as the
    config file), and no other run holds the results folder."""
    outputs, inputs = config.folders()
    disjoint(outputs, [*inputs, *files])
    if config.run_name:
        check_free(inside(Path(config.out_dir).expanduser().resolve(), config.run_name))


def run_inputs(run: Path) -> list[tuple[str, str]]:
    """The folders the run of a results folder read (its datasets, first-stage runs, leakage folder, runs folder), as
    its manifest names them: whatever is made from the folder (a card) is never written onto them. An unreadable
    manifest gives none (reading the folder refuses it next)."""
    try:
        body = json.loads((run / MANIFEST).read_text(encoding="utf-8"))
        config = body.get("config") or {}
        found = [("dataset folder", d["path"]) for d in body.get("datasets") or []]
        found += [("dataset folder", DatasetSpec(path=str(d["path"])).folder) for d in config.get("datasets") or []]
        found += [("first-stage runs folder", d.get("first_stage_runs")) for d in config.get("datasets") or []]
        found += [("leakage folder", config.get("leakage")), ("runs folder", config.get("folder"))]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return []
    return [(what, p) for what, value in found if isinstance(value, str) and (p := local_path(value))]


def _lock(run: Path) -> int | None:
    """The run folder's exclusive lock (an open descriptor: closing it releases the lock); None while another holds
    it."""
    fd = os.open(run, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _in_use(run: Path) -> OutputPathError:
    body = RunLayout(run).marker_body()
    who = (
        f"pid {body.get('pid')} on {body.get('host')}, started {body.get('started')}"
        if body.get("status") == "running"
        else "a process that is starting it"
    )
    return OutputPathError(
        f"results folder {run} is in use by another run ({who}): wait for it to end, or choose another --out (run_name)"
    )


def check_free(run: Path) -> None:
    """Refuse, before anything is written, a results folder another run holds (the run itself takes it in `held`)."""
    if not run.is_dir():
        return
    fd = _lock(run)
    if fd is None:
        raise _in_use(run)
    os.close(fd)


@contextmanager
def held(out_dir: str, run_name: str | None, kind: str, flow_run_id: str | None) -> Iterator[Path]:
    """The run folder inside `out_dir`, created (or reused) and held by this run until the block ends: a stale
    manifest dropped, marked incomplete. Another run holding it is refused before anything in it changes."""
    root = writable_folder(out_dir, "results folder")
    name = run_name or datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    run = inside(root, name)
    if run.exists() and not run.is_dir():
        raise OutputPathError(f"results folder {run} is a file: choose another run name")
    run.mkdir(parents=True, exist_ok=True)
    fd = _lock(run)
    if fd is None:
        raise _in_use(run)
    try:
        (run / MANIFEST).unlink(missing_ok=True)
        (run / MARKER).write_text(
            json.dumps(
                {
                    "started": datetime.now(UTC).isoformat(timespec="seconds"),
                    "kind": kind,
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                    "flow_run_id": flow_run_id,
                    "status": "running",
                },
                indent=2,
            )
        )
        yield run
    finally:
        os.close(fd)


def unreadable(run: Path) -> str | None:
    """The first file of a results folder that cannot be read as what it is named (a parquet's footer, a JSON
    document, any file at all), with why; None when every one can. Stored outputs linked in were checked against
    their recorded stamps when linked; this is the last look before the folder says it is complete."""
    for f in sorted(p for p in run.rglob("*") if p.is_file() and p.name != MARKER):
        try:
            if f.suffix == ".parquet":
                pq.read_metadata(f)
            elif f.suffix == ".json":
                json.loads(f.read_bytes())
            else:
                with open(f, "rb"):
                    pass
        except Exception as e:  # noqa: BLE001 - any reader's error: the file is not what it claims to be
            return f"{f.relative_to(run)}: {type(e).__name__}: {e}"
    return None


def finish(run: Path, manifest_json: str) -> None:
    """Write the manifest last (atomically), then remove the marker: the run is complete. A folder with a file that
    cannot be read is refused (`IncompleteRunError`): it stays marked, never complete."""
    if problem := unreadable(run):
        raise IncompleteRunError(f"results folder {run}: {problem}; the folder is left marked incomplete")
    write_atomic(run / MANIFEST, lambda p: p.write_text(manifest_json))
    (run / MARKER).unlink(missing_ok=True)


def mark_stopped(run: Path, reason: str) -> None:
    """Record why an incomplete run stopped (the marker stays); the reason may quote a server: its secrets blotted."""
    marker = run / MARKER
    try:
        body = json.loads(marker.read_text())
    except (OSError, ValueError):
        body = {}
    body.update(status="stopped", reason=blot(reason), stopped=datetime.now(UTC).isoformat(timespec="seconds"))
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
