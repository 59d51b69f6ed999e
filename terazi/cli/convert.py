"""`terazi convert-squad`: SQuAD-format JSON to a BEIR folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from terazi.base.paths import Place
from terazi.cli.common import err
from terazi.cli.options import Force, Verbose
from terazi.cli.places import declares


def beir_names(kwargs: dict) -> list[str]:
    """The files a BEIR folder is written as (for the overwrite rule)."""
    return ["corpus.jsonl", "queries.jsonl", f"qrels/{kwargs.get('split', 'test')}.tsv"]


@declares(reads=(Place("source", "SQuAD file"),), writes=(Place("target", "dataset folder", files=beir_names),))
def convert_squad(
    source: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="SQuAD-format JSON file")],
    target: Annotated[Path, typer.Argument(help="BEIR folder to write")],
    split: str = "test",
    force: Force = False,
    verbose: Verbose = False,
) -> None:
    """SQuAD → BEIR: paragraphs become the corpus, questions the queries, the answer paragraph grade 1."""
    from terazi.data.squad import squad_to_beir

    counts = squad_to_beir(source, target, split)
    err.print(f"wrote {target}: {counts['docs']} passages, {counts['queries']} queries")
