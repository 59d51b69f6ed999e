"""The options several commands take, declared once, and the help of an option that sets a config field: that field's
own description and default, so the text is written once (in the schema) and the command line's help cannot drift
from what the config means."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

import typer
from pydantic import BaseModel
from rich.markup import escape

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
    """The option (`typer.Option(*names, **settings)`) that sets `field` of `model`, its help the field's own."""
    return typer.Option(*names, help=about(model, field), **settings)


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
