"""Files and results under hostile use (issue 21): outputs never overlap inputs, one run per results folder, a folder
that is not complete is never shown as a result, and a bad run file is one line before Prefect starts.

Every case runs the command as a user would (typer's runner, or a subprocess where a second process is the point);
a refusal must be one `error:` line, exit 2, no traceback, and must leave every file as it was.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from terazi.cli import app
from tests.conftest import TINY_QRELS, make_tiny

RUN = ("--offline", "--reranker", "bm25", "--condition", "upper", "--depth", "10", "--rerank-depth", "5")


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under `root` with its bytes (None for a folder): what a refusal must leave as it was."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def refused(args: list[str], message: str) -> str:
    """Run the command; it must print exactly one `error:` line matching `message`, exit 2, without a traceback."""
    res = CliRunner().invoke(app, args)
    out = res.output
    assert "Traceback" not in out, out
    assert res.exit_code == 2, out
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, out
    assert re.search(message, " ".join(out.split())), out
    return out


def tiny_runs(root: Path) -> Path:
    """A runs folder (qrels/, runs/<dataset>/<condition>/<system>.trec) of the tiny dataset: two systems, two
    conditions, every query ranking every judged document."""
    (root / "qrels").mkdir(parents=True)
    (root / "qrels" / "tiny.tsv").write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in TINY_QRELS))
    docs: dict[str, list[str]] = {}
    for q, d, _ in TINY_QRELS:
        docs.setdefault(q, []).append(d)
    for cond in ("clean", "upper"):
        for k, system in enumerate(("first-stage", "bm25")):
            path = root / "runs" / "tiny" / cond / f"{system}.trec"
            path.parent.mkdir(parents=True, exist_ok=True)
            lines = []
            for q, ds in docs.items():
                order = ds[::-1] if (k + (cond == "upper")) % 2 else ds
                lines += [f"{q} Q0 {d} {r} {len(order) - r + 1} {system}\n" for r, d in enumerate(order, start=1)]
            path.write_text("".join(lines))
    return root


# ---------------------------------------------------------------- outputs never overlap inputs


def _run(tmp: Path, ds: Path, out: str, cache: str) -> list[str]:
    return [
        "run",
        "--dataset",
        str(ds),
        "--out",
        out.format(tmp=tmp, ds=ds),
        "--cache",
        cache.format(tmp=tmp, ds=ds),
        *RUN,
    ]


def _config_inside_results(tmp: Path, ds: Path) -> list[str]:
    (tmp / "x").mkdir()
    (tmp / "x" / "eval.yaml").write_text(f"datasets: [{{path: {ds}}}]\nrerankers: [{{kind: bm25, name: bm25}}]\n")
    return ["run", "--config", str(tmp / "x" / "eval.yaml"), "--out", str(tmp / "x"), "--cache", str(tmp / "c"), *RUN]


def _leakage_is_results(tmp: Path, ds: Path) -> list[str]:
    return [*_run(tmp, ds, "{tmp}/x", "{tmp}/c"), "--leakage", str(tmp / "x")]


def _first_stage_runs_inside_cache(tmp: Path, ds: Path) -> list[str]:
    (tmp / "c" / "fs").mkdir(parents=True)
    (tmp / "eval.yaml").write_text(
        f"datasets: [{{path: {ds}, first_stage_runs: {tmp / 'c' / 'fs'}}}]\nrerankers: [{{kind: bm25, name: bm25}}]\n"
    )
    return ["run", "--config", str(tmp / "eval.yaml"), "--out", str(tmp / "x"), "--cache", str(tmp / "c"), *RUN]


def _analyze(out: str) -> Callable[[Path, Path], list[str]]:
    def args(tmp: Path, ds: Path) -> list[str]:
        runs = tiny_runs(tmp / "runs-folder")
        return ["analyze", str(runs), "--out", out.format(runs=runs)]

    return args


OVERLAPS = {
    # issue 21, case 1: `--dataset DIR/test --out DIR/test` overwrote the dataset's qrels/test.tsv
    "results folder is the dataset folder": (
        lambda tmp, ds: _run(tmp, ds, "{ds}", "{tmp}/c"),
        r"results folder \S+/test is the dataset folder \S+/test",
    ),
    # case 2: the same folder for --out and --cache, then `terazi cache check` found a damaged manifest
    "results folder is the cache folder": (
        lambda tmp, ds: _run(tmp, ds, "{tmp}/x", "{tmp}/x"),
        r"results folder \S+/x is the cache folder \S+/x",
    ),
    "cache inside the results folder": (
        lambda tmp, ds: _run(tmp, ds, "{tmp}/x", "{tmp}/x/cache"),
        r"results folder \S+/x holds the cache folder \S+/x/cache",
    ),
    "results inside the cache folder": (
        lambda tmp, ds: _run(tmp, ds, "{tmp}/c/run", "{tmp}/c"),
        r"results folder \S+/c/run lies inside the cache folder \S+/c",
    ),
    "results inside the dataset folder": (
        lambda tmp, ds: _run(tmp, ds, "{ds}/results", "{tmp}/c"),
        r"results folder \S+/test/results lies inside the dataset folder \S+/test",
    ),
    "cache inside the dataset folder": (
        lambda tmp, ds: _run(tmp, ds, "{tmp}/x", "{ds}/.cache"),
        r"cache folder \S+/test/\.cache lies inside the dataset folder \S+/test",
    ),
    "leakage folder is the results folder": (_leakage_is_results, r"results folder \S+/x is the leakage folder \S+/x"),
    "config file inside the results folder": (
        _config_inside_results,
        r"results folder \S+/x holds the config file \S+/x/eval\.yaml",
    ),
    "first-stage runs inside the cache folder": (
        _first_stage_runs_inside_cache,
        r"cache folder \S+/c holds the first-stage runs folder \S+/c/fs",
    ),
    "analyze into its runs folder": (_analyze("{runs}"), r"results folder \S+ is the runs folder \S+runs-folder"),
    "analyze inside its runs folder": (
        _analyze("{runs}/analysis"),
        r"results folder \S+/analysis lies inside the runs folder \S+runs-folder",
    ),
}


@pytest.mark.parametrize("case", OVERLAPS, ids=list(OVERLAPS))
def test_outputs_never_overlap_inputs(case: str, tmp_path: Path):
    """Refused before anything is written: not a byte changes anywhere (no folder made, no probe file left)."""
    make_args, message = OVERLAPS[case]
    ds = make_tiny(tmp_path / "test")  # the name of issue 21's case: its qrels are qrels/test.tsv
    args = make_args(tmp_path, ds)
    before = snapshot(tmp_path)
    refused(args, message + r".*outputs never overlap inputs")
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------- one run per results folder

HOLD = """
import sys, time
from terazi.flows.lifecycle import results_folder
with results_folder(sys.argv[1], sys.argv[2], "cli", "hold"):
    print("ready", flush=True)
    time.sleep(120)
"""


@pytest.fixture
def held(tmp_path: Path):
    """Another process with the results folder `tmp/results/run` open, as a run writing into it has."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path / "results"), "run"],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    try:
        assert holder.stdout.readline() == b"ready\n"
        yield tmp_path / "results" / "run", holder
    finally:
        holder.kill()
        holder.wait()


def test_a_second_run_into_a_busy_folder_is_refused(held, tmp_path: Path):
    """Issue 21, case 4: two runs with the same --out both ran, one finishing while the other still wrote."""
    run, holder = held
    ds = make_tiny(tmp_path / "tiny")
    before = snapshot(run)
    refused(
        ["run", "--dataset", str(ds), "--out", str(run), "--cache", str(tmp_path / "c"), *RUN],
        rf"results folder \S+/results/run is in use by another run \(pid {holder.pid}\b.*choose another --out",
    )
    assert snapshot(run) == before  # the holder's marker is still its own


def test_the_folder_is_free_again_once_its_run_is_gone(held, tmp_path: Path):
    """kill -9 leaves no lock behind: the folder says its run was interrupted, and the next run takes it (and marks
    it as its own)."""
    import json

    from terazi.flows.lifecycle import results_folder

    run, holder = held
    holder.kill()
    holder.wait()
    refused(
        ["leaderboard", str(run)],
        rf"not a complete result: its run was interrupted \(its process, pid {holder.pid}, is gone\); run it again",
    )
    with pytest.raises(KeyboardInterrupt):
        with results_folder(str(run.parent), run.name, "cli", "next"):
            raise KeyboardInterrupt
    assert json.loads((run / ".terazi-incomplete").read_text())["pid"] == os.getpid()


# ---------------------------------------------------------------- a folder that is not complete is never a result


@pytest.fixture(scope="module")
def finished(tmp_path_factory, prefect_server) -> Path:
    """A complete results folder (`terazi analyze` on the tiny runs folder)."""
    import terazi

    tmp = tmp_path_factory.mktemp("finished")
    manifest, _ = terazi.analyze(tiny_runs(tmp / "runs"), out=tmp / "done", bootstrap_resamples=100)
    return Path(manifest.run_dir)


@pytest.fixture
def interrupted(finished: Path, tmp_path: Path) -> Path:
    """Issue 21, case 3: a rerun into a finished folder, stopped (Ctrl-C) before it wrote anything new: the previous
    run's leaderboard, tables and per-query values are all still there."""
    import shutil

    from terazi.flows.lifecycle import results_folder

    run = tmp_path / "results" / "done"
    shutil.copytree(finished, run)
    with pytest.raises(KeyboardInterrupt):
        with results_folder(str(run.parent), run.name, "cli", "rerun"):
            raise KeyboardInterrupt
    assert (run / "leaderboard.csv").is_file()
    return run


READERS = {
    "leaderboard": lambda run, done: ["leaderboard", str(run)],
    "compare, before": lambda run, done: ["compare", str(run), str(done)],
    "compare, after": lambda run, done: ["compare", str(done), str(run)],
    "compare --systems": lambda run, done: ["compare", str(run), "--systems", "bm25", "first-stage"],
    "card": lambda run, done: ["card", str(run), "--system", "bm25"],
    "analyze": lambda run, done: ["analyze", str(run), "--out", str(run.parent / "again")],
}


@pytest.mark.parametrize("reader", READERS, ids=list(READERS))
def test_a_stopped_folder_is_never_shown_as_a_result(reader: str, interrupted: Path, finished: Path):
    out = refused(
        READERS[reader](interrupted, finished),
        rf"{interrupted}: not a complete result: its run stopped \(KeyboardInterrupt\)",
    )
    assert "bm25" not in out.replace(interrupted.as_posix(), "")  # nothing of the previous run's results
    assert not (interrupted.parent / "again").exists()


def test_a_folder_being_written_is_never_shown_as_a_result(held, finished: Path):
    run, holder = held
    for args in (["leaderboard", str(run)], ["compare", str(run), str(finished)], ["card", str(run), "-s", "bm25"]):
        refused(args, rf"{run}: not a complete result: a run is still writing it \(pid {holder.pid}\b")


def test_the_api_refuses_a_stopped_folder(interrupted: Path, finished: Path):
    import terazi
    from terazi.base.errors import TeraziError

    for call in (lambda: terazi.compare(finished, interrupted), lambda: terazi.card(interrupted, "bm25")):
        with pytest.raises(TeraziError, match="not a complete result: its run stopped"):
            call()


# ---------------------------------------------------------------- bad run files: one line, before Prefect starts


@pytest.mark.parametrize(
    "content, message",
    [
        (
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe",
            r"bm25\.trec, line 1: not valid UTF-8 \(byte 0x89 at column 1\)",
        ),
        (b"", r"bm25\.trec: no rankings \(the file is empty\)"),
        (b"\n  \n", r"bm25\.trec: no rankings \(the file is empty\)"),
    ],
    ids=["binary", "empty", "blank lines"],
)
def test_analyze_names_a_bad_run_file_before_prefect_starts(content: bytes, message: str, tmp_path: Path):
    """Issue 21, case 14: a binary run file was named, then Prefect's traceback followed; an empty one ended in
    `ValueError: systems cover different datasets` and a traceback."""
    runs = tiny_runs(tmp_path / "runs")
    (runs / "runs" / "tiny" / "upper" / "bm25.trec").write_bytes(content)
    out = refused(["analyze", str(runs), "--out", str(tmp_path / "out")], r"upper/" + message)
    assert "starting Prefect" not in out
    assert not (tmp_path / "out").exists()
