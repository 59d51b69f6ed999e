"""What each command reads and writes, declared with the command, and the one boundary every command goes through.

`terazi run` promised that its outputs never overlap its inputs; the promise is per command. So every command states,
parameter by parameter, which paths it reads and which it writes (`Place`), in `declares(...)` above its function, and
the declaration is what runs it: before the command's own code (so before anything is written) logging and
`--verbose` are set, every output is checked against every input and every other output (`terazi.paths.disjoint`:
none may be, hold or lie inside another, a file as a folder), and any failure is one `error:` line; a full disk names
the declared output whose disk it is. Places that only the call's values tell (the files `terazi card --format all`
writes, the folders a results folder's run read) come from the declaration's `more`. `tests/test_places.py` walks
every command's path options and proves that none can write onto an input of the same call.

Commands whose config file names more folders (`run`, `analyze`, `leakage`) check those with the same function once
the config is read (`terazi.results.folder.check_outputs`, `terazi.contamination.folder.check_inputs`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from terazi.cli.common import OUTPUTS, errors_as_lines, setup

Kwargs = dict[str, Any]
Found = list[tuple[str, str]]


def as_path(value: Any) -> str | None:
    """A value as a path on this machine; None for stdin (`-`) and URLs (`s3://…`), which no file check applies to."""
    text = str(value)
    return None if text in ("", "-") or "://" in text else text


def dataset_path(value: Any) -> str | None:
    """A dataset's folder on this machine (a BEIR folder, hf:/local/folder); None for a hub's, mteb: or ir_datasets:."""
    from terazi.schemas.config import DatasetSpec

    return DatasetSpec(path=str(value)).folder


def training_path(value: Any) -> str | None:
    """A training source's file or folder on this machine; None for a hub dataset."""
    from terazi.schemas.leakage import TrainSource

    return TrainSource(path=str(value)).place


@dataclass(frozen=True)
class Place:
    """One parameter that is a path: what it is (`results folder`), how its value becomes the path read or written
    (`local`), whether the call uses it at all (`when`: e.g. a cache written only for named datasets), and whether it
    is a file (a full disk then names its folder)."""

    param: str
    what: str
    local: Callable[[Any], str | None] = as_path
    when: Callable[[Kwargs], bool] | None = None
    file: bool = False

    @property
    def option(self) -> str:
        return "--" + self.param.replace("_", "-")

    def found(self, kwargs: Kwargs) -> Found:
        """(what, path) for each value of this parameter in a call (a repeatable option gives several)."""
        if self.when is not None and not self.when(kwargs):
            return []
        value = kwargs.get(self.param)
        values = value if isinstance(value, (list, tuple)) else [value]
        return [(self.what, p) for v in values if v is not None and (p := self.local(v))]


@dataclass(frozen=True)
class Declared:
    """What a command reads and writes, by parameter."""

    reads: tuple[Place, ...] = ()
    writes: tuple[Place, ...] = ()

    def params(self) -> set[str]:
        return {p.param for p in (*self.reads, *self.writes)}


def declares(reads: tuple[Place, ...] = (), writes: tuple[Place, ...] = (),
             more: Callable[[Kwargs], tuple[Found, Found]] | None = None) -> Callable:
    """The command, run through the boundary described above; `more(kwargs)` adds (outputs, inputs) the call's values
    imply. The declaration stays on the command as `.declared`."""
    declared = Declared(tuple(reads), tuple(writes))

    def wrap(command: Callable) -> Callable:
        @functools.wraps(command)
        def checked(**kwargs: Any) -> Any:
            from terazi.paths import disjoint

            setup(bool(kwargs.get("verbose")))
            with errors_as_lines():
                outputs = [f for p in declared.writes for f in p.found(kwargs)]
                inputs = [f for p in declared.reads for f in p.found(kwargs)]
                if more:
                    extra_out, extra_in = more(kwargs)
                    outputs, inputs = outputs + extra_out, inputs + extra_in
                disjoint(outputs, inputs)  # before anything is written
            token = OUTPUTS.set(_disks(declared, kwargs))
            try:
                with errors_as_lines():
                    return command(**kwargs)
            finally:
                OUTPUTS.reset(token)

        checked.declared = declared
        return checked

    return wrap


def _disks(declared: Declared, kwargs: Kwargs) -> dict[str, tuple[Path, str]]:
    """The declared outputs as the folders a full disk is named by: a file's folder, a folder itself."""
    out = {}
    for place in declared.writes:
        for what, path in place.found(kwargs):
            p = Path(path).expanduser().resolve()
            out[f"folder of the {what}" if place.file else what] = (p.parent if place.file else p, place.option)
    return out
