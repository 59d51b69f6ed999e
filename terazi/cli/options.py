"""The options several commands take, declared once, and the help of an option that sets a config field: that field's
own description and default, so the text is written once (in the schema) and the command line's help cannot drift
from what the config means. An option that takes an amount reads it with `terazi.base.amounts` (`amount`): an option
that sets a numeric field (`sets`) within that field's own constraints, so the flag refuses what the config refuses."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

import typer
from pydantic import BaseModel
from rich.markup import escape

from terazi.base.amounts import Range
from terazi.cli.common import fail
from terazi.schemas import DatasetSpec, EvalConfig


def about(model: type[BaseModel], field: str) -> str:
    """The help of an option that sets `field` of `model`: the field's description, and its default."""
    info = model.model_fields[field]
    default = None if info.is_required() else info.get_default(call_default_factory=True)
    if isinstance(default, list | tuple):
        default = ", ".join(map(str, default))
    shown = "" if default is None or default is False else f" [default: {'on' if default is True else default}]"
    many = any(get_origin(t) in (list, tuple) for t in (info.annotation, *get_args(info.annotation)))
    repeat = " (repeatable)" if many else ""
    return escape(f"{info.description}{repeat}{shown}")  # typer reads help as rich markup: [#SUBSET] is text here


def sets(model: type[BaseModel], field: str, *names: str, **settings: Any) -> Any:
    """The option (`typer.Option(*names, **settings)`) that sets `field` of `model`, its help the field's own; a
    number is read as an amount in the field's range (`min`/`max` narrow it)."""
    info = model.model_fields[field]
    if {int, float} & {info.annotation, *get_args(info.annotation)} and "parser" not in settings:
        narrower = {"ge": settings.pop("min", None), "le": settings.pop("max", None)}
        rng = Range.of(model, field, **{k: v for k, v in narrower.items() if v is not None})
        settings.update(reads(rng.read))
    return typer.Option(*names, help=about(model, field), **settings)


def reads(read: Callable[[str], Any]) -> dict[str, Any]:
    """The settings of an option whose text `read` turns into its value (or a ValueError saying why not): the text
    is kept as typed (`parser`) and read by the option's callback, which knows the option's name, so a refusal is
    one `error:` line naming it, as every refusal is. The callback is marked `amount`: tests find every such option."""

    def read_option(param: typer.CallbackParam, value: Any) -> Any:
        if not isinstance(value, str):  # absent, or a default: already a value
            return value
        try:
            return read(value)
        except ValueError as e:
            fail(f"{param.opts[0]}: {e}")

    read_option.amount = True
    return {"parser": str, "callback": read_option}


def amount(rng: Range, *names: str, **settings: Any) -> Any:
    """An option (`typer.Option(*names, **settings)`) that takes a number in `rng`."""
    return typer.Option(*names, **reads(rng.read), **settings)


Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="debug logging and full tracebacks")]
Datasets = Annotated[
    list[str] | None, typer.Option("--dataset", "-d", help=about(DatasetSpec, "path") + " (repeatable)")
]
Split = Annotated[str | None, typer.Option(help=about(DatasetSpec, "split"))]
ConfigFile = Annotated[
    Path | None,
    typer.Option("--config", "-c", dir_okay=False, help="YAML, JSON or TOML config file; flags override its fields"),
]
Results = Annotated[
    str | None, typer.Option("--out", "-o", help="results folder, written into directly (no time-stamped sub-folder)")
]
Leakage = Annotated[str | None, typer.Option(help=about(EvalConfig, "leakage"))]
LeakageBy = Annotated[str | None, typer.Option(help=about(EvalConfig, "leakage_by"))]
Force = Annotated[
    bool,
    typer.Option("--force", help="replace an existing output that terazi did not write (or that was since edited)"),
]
