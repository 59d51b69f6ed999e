"""`terazi card`: the evaluation section of a model card for one system of a results folder."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from terazi.cli.common import console, errors_as_lines, fail

FORMATS = ("markdown", "yaml", "json", "all")


def card(
    results: Path = typer.Argument(..., exists=True, file_okay=False, help="results folder of `terazi run` or `analyze`"),
    system: str = typer.Option(..., "--system", "-s", help="the system the card is about (a leaderboard row)"),
    labels: Optional[str] = typer.Option(None, help="tr (the Kalbur card's words) or en; default: the run's labels"),
    fmt: str = typer.Option("markdown", "--format", help="markdown | yaml (Hugging Face model-index and "
                                                         ".eval_results) | json (every number unrounded) | all"),
    model_name: Optional[str] = typer.Option(None, help="the model's name in model-index (default: the system's)"),
    name: list[str] = typer.Option([], "--name", metavar="SYSTEM=NAME", help="how a row is called on the card, e.g. "
                                   "--name bge=BAAI/bge-reranker-v2-m3 (repeatable)"),
    rival: list[str] = typer.Option([], "--rival", help="systems the comparison counts list (repeatable; default: all)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", dir_okay=False,
                                       help="write here instead of printing (with --format all: FILE.md, .yaml, .json)"),
) -> None:
    """The card's evaluation section: protocol, results, per-dataset and comparison tables, significant cells, rank
    intervals, and its Hugging Face metadata."""
    from terazi.present.card import build_card

    if fmt not in FORMATS:
        fail(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if labels not in (None, "tr", "en"):
        fail(f"--labels must be tr or en, got {labels!r}")
    names = {}
    for item in name:
        key, eq, value = item.partition("=")
        if not eq or not key or not value:
            fail(f"--name {item!r}: expected SYSTEM=NAME")
        names[key] = value
    with errors_as_lines():
        made = build_card(results, system, labels, model_name, names or None, rival or None)
    texts = {"markdown": made.markdown(), "yaml": made.model_index_yaml() + "\n" + made.eval_results_yaml(),
             "json": made.to_json() + "\n"}
    if fmt != "all":
        if out:
            out.write_text(texts[fmt], encoding="utf-8")
            console.print(f"wrote {out}", highlight=False)
        else:
            print(texts[fmt], end="")
        return
    if out is None:
        print(texts["markdown"] + "\n---\n" + texts["yaml"], end="")
        return
    for suffix, key in ((".md", "markdown"), (".yaml", "yaml"), (".json", "json")):
        path = out.with_suffix(suffix)
        path.write_text(texts[key], encoding="utf-8")
        console.print(f"wrote {path}", highlight=False)
