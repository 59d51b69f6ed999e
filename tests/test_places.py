"""Every command keeps `terazi run`'s promise (issue 37): what it writes never overlaps what it reads.

The test walks the CLI: every command, every option or argument that is a path (a `Path` parameter, or one whose help
speaks of a file, folder, path, store or root) must be declared as read or written (`terazi.cli.places.declares`);
then, for every output and every other place of the same command, it calls the command with the two the same path,
the output inside the other (a folder) and the output holding it, and proves the call is refused in one line before
anything is written. A new command, or a new path option, cannot skip it: undeclared, this test fails.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from terazi.cli import app
from terazi.cli.score import parser as score_parser
from tests.test_hostile_files import snapshot

PATHLIKE = re.compile(r"\b(file|files|folder|folders|path|store|stores|root)\b", re.IGNORECASE)
NOT_PATHS = {  # parameters whose help speaks of files without being one
    ("analyze", "first_stage"): "names of first stages (as the run files name them)",
    ("card", "fmt"): "a format name",
    ("card", "labels"): "a label set",
    ("leakage", "field"): "field names of training records",
    ("leakage", "query_field"): "field names of training records",
    ("leaderboard", "split"): "an MTEB split name",
    ("leaderboard", "fmt"): "a format name",
    ("leaderboard", "task_type"): "TASK=TYPE",
    ("serve", "print_policy"): "a switch",
    ("serve", "allow_model"): "model ids or folders a served run may load, not read or written by serve",
    ("run", "encoder"): "a model id or folder (models are read-only inputs the run never writes near)",
    ("run", "reranker"): "reranker specs",
    ("demo", "run_name"): "a name (a sub-folder of --out)",
    ("leaderboard", "language"): "a language code",
    ("run", "split"): "a split name",
    ("leakage", "split"): "a split name",
}
# calls whose pair of places applies only with other values: the cache is written only for a named dataset; --into
# replaces the cache folder as merge's target
EXTRA = {("leakage", "cache"): ["--dataset", "mteb:SomeTask"]}
NOT_TOGETHER = {("cache merge", "cache", "into")}
REQUIRED = {"system": "s", "condition": "clean"}


def commands() -> dict[str, object]:
    """'card', 'cache merge', … → the click command."""
    found = {}

    def walk(group, prefix: str) -> None:
        for name, cmd in group.commands.items():
            full = f"{prefix} {name}".strip()
            if hasattr(cmd, "commands"):
                walk(cmd, full)
            else:
                found[full] = cmd

    walk(get_command(app), "")
    return found


def is_path(param) -> bool:
    annotation = param.type_descriptor.annotation
    kinds = {annotation, *get_args(annotation)}
    return Path in kinds or bool(PATHLIKE.search(param.help or ""))


def test_every_command_declares_every_path_it_takes_and_has_verbose():
    undeclared, without_verbose = [], []
    for name, cmd in commands().items():
        declared = getattr(cmd.callback, "declared", None)
        names = {p.name for p in cmd.params}
        if name != "score" and "verbose" not in names:
            without_verbose.append(name)
        if name == "score":  # argparse behind a pass-through command: its own parser's paths
            paths = {a.dest for a in score_parser()._actions if a.type is Path}
            assert "verbose" in {a.dest for a in score_parser()._actions}
        else:
            paths = {p.name for p in cmd.params if is_path(p) and (name.split()[-1], p.name) not in NOT_PATHS}
        missing = paths - (declared.params() if declared else set())
        if missing:
            undeclared.append(f"{name}: {sorted(missing)}")
    assert undeclared == [] and without_verbose == []


def _value(param, where: Path, file: bool) -> Path:
    """A path that satisfies the parameter's own checks (typer's exists=True): a file or a folder made there."""
    if file:
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_text("{}\n")
    else:
        where.mkdir(parents=True, exist_ok=True)
    return where


def _kind(param, declared) -> str:
    """'file', 'folder' (typer's own checks say so) or 'any'."""
    place = next((p for p in (*declared.reads, *declared.writes) if p.param == param.name), None)
    info = param.type_descriptor.parameter_info
    if (
        info.dir_okay is False
        or (place and place.file)
        or param.name in ("config", "source", "qrels", "run_file", "train")
    ):
        return "file"
    return "folder" if info.file_okay is False else "any"


def _args(cmd, values: dict[str, str]) -> list[str]:
    """A call of `cmd`: the given values, and a dummy for every other required parameter."""
    positional, options = [], []
    for p in cmd.params:
        value = values.get(p.name)
        if value is None and p.required:
            value = REQUIRED.get(p.name, "x")
        if value is None:
            continue
        if p.param_type_name == "argument":
            positional.append(value)
        else:
            options += [p.opts[0], value]
    return [*options, *positional]


def cases() -> list[tuple[str, str, str, str]]:
    """(command, output, other place, relation) for every output of every command against every other place."""
    out = []
    for name, cmd in commands().items():
        declared = getattr(cmd.callback, "declared", None)
        if declared is None:
            continue
        for w in declared.writes:
            for other in (*declared.reads, *declared.writes):
                if (
                    other.param == w.param
                    or (name, w.param, other.param) in NOT_TOGETHER
                    or (name, other.param, w.param) in NOT_TOGETHER
                ):
                    continue
                for relation in ("is", "lies inside", "holds"):
                    out.append((name, w.param, other.param, relation))
    return out


@pytest.mark.parametrize("name, write, other, relation", cases())
def test_no_command_writes_onto_an_input_of_the_same_call(tmp_path, name, write, other, relation):
    cmd = commands()[name]
    declared = cmd.callback.declared
    params = {p.name: p for p in cmd.params}
    w, o = params[write], params[other]
    kinds = {_kind(w, declared), _kind(o, declared)}
    w_file, o_file = _kind(w, declared) == "file", _kind(o, declared) == "file"
    if relation == "is" and kinds == {"file", "folder"}:
        pytest.skip("a file-only and a folder-only parameter cannot name one path (typer refuses it)")
    if relation == "lies inside" and o_file or relation == "holds" and w_file:
        pytest.skip("nothing lies inside a file")
    case = tmp_path / "case"
    if relation == "is":
        other_path = _value(o, case / ("same.json" if "file" in kinds else "same"), "file" in kinds)
        write_path = other_path
    elif relation == "lies inside":
        other_path = _value(o, case / "other", False)
        write_path = other_path / ("inside.json" if w_file else "inside")
    else:
        other_path = _value(o, case / "holder" / ("held.json" if o_file else "held"), o_file)
        write_path = other_path.parent
    values = {write: str(write_path), other: str(other_path)}
    before = snapshot(tmp_path)
    extra = [*EXTRA.get((name.split()[-1], write), []), *EXTRA.get((name.split()[-1], other), [])]
    args = [*name.split(), *_args(cmd, values), *extra]
    res = CliRunner().invoke(app, args)
    out = " ".join(res.output.split())
    assert res.exit_code == 2 and "outputs never overlap inputs" in out, (args, res.output)
    assert "Traceback" not in res.output and len([x for x in res.output.splitlines() if x.startswith("error:")]) == 1
    assert snapshot(tmp_path) == before  # refused before anything was written
