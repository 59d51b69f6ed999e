"""One overwrite rule for every file a command writes (issue 44, `terazi.base.paths.foreign`): an existing file there
that terazi did not write, or that was edited since, is refused in one line unless `--force`; a file terazi wrote is
replaced. The outputs are found in the commands' own declarations (as tests/test_places.py finds its places)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from terazi.base.paths import WRITTEN
from terazi.cli import app
from tests.test_hostile_files import snapshot
from tests.test_places import _kind, _value, commands

USER = "the user's own file\n"


def file_outputs() -> list[tuple[str, str]]:
    """(command, parameter) for every output that names files: a file itself, or the files a folder gets."""
    return [
        (name, place.param)
        for name, cmd in commands().items()
        for place in getattr(getattr(cmd.callback, "declared", None), "writes", ())
        if place.file or place.files
    ]


OUTPUTS = file_outputs()


def _call(tmp_path: Path, name: str, param: str) -> tuple[list[str], list[Path]]:
    """A call of the command writing `param` under `tmp_path`, every required path made, and the files it would
    write (as its declaration says)."""
    cmd = commands()[name]
    declared = cmd.callback.declared
    values: dict = {p.name: p.default for p in cmd.params}
    args, positional = [], []
    for p in cmd.params:
        if p.name == param:
            value = str(tmp_path / "out" / ("card.md" if _kind(p, declared) == "file" else "folder"))
        elif p.required:  # an input typer checks exists, made; a name
            kind = _kind(p, declared)
            value = "s" if kind == "any" else str(_value(p, tmp_path / "in" / p.name, kind == "file"))
        else:
            continue
        values[p.name] = value
        if p.param_type_name == "argument":
            positional.append(value)
        else:
            args += [p.opts[0], value]
    files = [Path(f) for _, f in declared.files(values)]
    return [*name.split(), *args, *positional], files


@pytest.mark.parametrize("name, param", OUTPUTS, ids=[f"{n} {p}" for n, p in OUTPUTS])
def test_a_file_terazi_did_not_write_is_refused_without_force(tmp_path, name, param):
    args, files = _call(tmp_path, name, param)
    assert files and "force" in {p.name for p in commands()[name].params}
    for target in files:  # each file the call would write, the user's in turn
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(USER)
        before = snapshot(tmp_path)
        res = CliRunner().invoke(app, args)
        errors = [line for line in res.output.splitlines() if line.startswith("error:")]
        assert res.exit_code == 2 and len(errors) == 1, res.output
        assert f"{target.resolve()} already exists and terazi did not write it" in " ".join(res.output.split())
        assert snapshot(tmp_path) == before  # refused before anything was written
        target.unlink()
    target.write_text(USER)
    res = CliRunner().invoke(app, [*args, "--force"])
    assert "terazi did not write it" not in res.output  # --force passes the rule (the dummy inputs may fail after)


def test_convert_squad_replaces_its_own_files_and_keeps_an_edited_one(tmp_path):
    squad = tmp_path / "squad.json"
    paragraph = {"context": "Ankara başkenttir.", "qas": [{"id": "q1", "question": "Başkent neresi?"}]}
    squad.write_text(json.dumps({"data": [{"paragraphs": [paragraph]}]}), encoding="utf-8")
    target = tmp_path / "beir"
    first = CliRunner().invoke(app, ["convert-squad", str(squad), str(target)])
    assert first.exit_code == 0, first.output
    assert sorted(json.loads((target / WRITTEN).read_text())) == ["corpus.jsonl", "queries.jsonl"]
    again = CliRunner().invoke(app, ["convert-squad", str(squad), str(target)])
    assert again.exit_code == 0, again.output  # its own files: replaced without a word
    (target / "queries.jsonl").write_text('{"_id": "mine", "text": "kendi sorum"}\n')  # the user edits one
    edited = CliRunner().invoke(app, ["convert-squad", str(squad), str(target)])
    assert edited.exit_code == 2 and "queries.jsonl already exists and terazi did not write it" in edited.output
    assert "kendi sorum" in (target / "queries.jsonl").read_text()
    forced = CliRunner().invoke(app, ["convert-squad", str(squad), str(target), "--force"])
    assert forced.exit_code == 0 and "kendi sorum" not in (target / "queries.jsonl").read_text()
