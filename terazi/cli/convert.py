"""`terazi convert-squad`: SQuAD-format JSON to a BEIR folder."""

from __future__ import annotations

from pathlib import Path

import typer

from terazi.cli.common import VERBOSE, err
from terazi.cli.places import Place, declares


@declares(reads=(Place("source", "SQuAD file"),), writes=(Place("target", "dataset folder"),))
def convert_squad(
    source: Path = typer.Argument(..., exists=True, dir_okay=False, help="SQuAD-format JSON file"),
    target: Path = typer.Argument(..., help="BEIR folder to write"),
    split: str = typer.Option("test"),
    verbose: bool = VERBOSE,
) -> None:
    """SQuAD → BEIR: paragraphs become the corpus, questions the queries, the answer paragraph grade 1."""
    from terazi.data.squad import squad_to_beir

    counts = squad_to_beir(source, target, split)
    err.print(f"wrote {target}: {counts['docs']} passages, {counts['queries']} queries")
