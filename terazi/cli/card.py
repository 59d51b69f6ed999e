"""`terazi card`: the evaluation section of a model card for one system of a results folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from terazi.base.paths import Found, Place
from terazi.cli.common import console
from terazi.cli.options import Force, Verbose
from terazi.cli.places import declares
from terazi.config.config_files import key_values


def more_places(kwargs: dict) -> tuple[Found, Found]:
    """The files --format all writes (besides --out itself, declared), and the inputs of the results folder's run:
    the card describes them, and never writes onto them."""
    from terazi.present.card import card_files
    from terazi.results.run_folder import run_inputs

    out, fmt = kwargs.get("out"), kwargs.get("fmt")
    written = [("card file", str(p)) for p in card_files(out, fmt).values() if p != out] if out and fmt == "all" else []
    return written, run_inputs(kwargs["results"])


FORMATS = (
    "markdown | yaml (the README front matter's model-index) | eval-results (a .eval_results/ file) | json "
    "(every number unrounded) | all (each in its own file: needs --out)"
)
OUT = (
    "write here instead of printing (with --format all: FILE.md, FILE.yaml, FILE.json and "
    ".eval_results/FILE.yaml beside them)"
)
NAMES = "how a row is called on the card, e.g. --name bge=BAAI/bge-reranker-v2-m3 (repeatable)"


def card_names(kwargs: dict) -> list[str]:
    """The files the card is written to, as names in --out's folder (for the overwrite rule)."""
    from terazi.present.card import card_files

    out = Path(kwargs["out"])
    return [str(p.relative_to(out.parent)) for p in card_files(out, kwargs.get("fmt", "markdown")).values()]


@declares(
    reads=(Place("results", "results folder"),),
    writes=(Place("out", "card file", file=True, files=card_names),),
    more=more_places,
)
def card(
    results: Annotated[Path, typer.Argument(exists=True, file_okay=False, help="a `terazi run` or `analyze` folder")],
    system: Annotated[str, typer.Option("--system", "-s", help="the system the card is about (a leaderboard row)")],
    labels: Annotated[
        Literal["tr", "en"] | None, typer.Option(help="tr (the Kalbur card's words), en; default: the run's")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help=FORMATS)] = "markdown",
    model_name: Annotated[str | None, typer.Option(help="name in model-index (default: the system's)")] = None,
    name: Annotated[list[str] | None, typer.Option(metavar="SYSTEM=NAME", help=NAMES)] = None,
    rival: Annotated[list[str] | None, typer.Option(help="systems the comparison counts list (default: all)")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", dir_okay=False, help=OUT)] = None,
    force: Force = False,
    verbose: Verbose = False,
) -> None:
    """The card's evaluation section: protocol, results, per-dataset and comparison tables, significant cells, rank
    intervals, and its Hugging Face metadata."""
    from terazi.present.card import build_card, check_format

    check_format(fmt, out)
    names = key_values(name, "--name", "SYSTEM=NAME")
    made = build_card(results, system, labels, model_name, names or None, rival or None)
    if out is None:
        print(made.text(fmt), end="")
        return
    for path in made.write(out, fmt):
        console.print(f"wrote {path}", highlight=False)
