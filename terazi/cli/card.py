"""`terazi card`: the evaluation section of a model card for one system of a results folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from terazi.cli.common import VERBOSE, console, fail
from terazi.cli.places import Found, Kwargs, Place, declares

FORMATS = ("markdown", "yaml", "eval-results", "json", "all")
# --format all: each part in its own file, as the Hub reads them (the README's front matter, .eval_results/)
SUFFIXES = {"markdown": ".md", "yaml": ".yaml", "json": ".json"}


def files(out: Path, fmt: str) -> dict[str, Path]:
    """format → the file it is written to: `out` itself, or with --format all `out` with each suffix and the
    `.eval_results/<name>.yaml` beside it (the folder a model repository keeps them in)."""
    if fmt != "all":
        return {fmt: out}
    return {**{key: out.with_suffix(suffix) for key, suffix in SUFFIXES.items()},
            "eval-results": out.parent / ".eval_results" / f"{out.stem}.yaml"}


def run_inputs(results: Path) -> Found:
    """The folders the results folder's run read (its datasets, first-stage runs, exclude folder, runs folder): the
    card describes them, and never writes onto them. An unreadable manifest gives none (the card refuses it next)."""
    from terazi.cli.places import as_path, dataset_path

    try:
        body = json.loads((results / "manifest.json").read_text(encoding="utf-8"))
        config = body.get("config") or {}
        found = [("dataset folder", d["path"]) for d in body.get("datasets") or []]
        found += [("dataset folder", dataset_path(d["path"])) for d in config.get("datasets") or []]
        found += [("first-stage runs folder", d.get("first_stage_runs")) for d in config.get("datasets") or []]
        found += [("exclude folder", config.get("exclude")), ("runs folder", config.get("folder"))]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return []
    return [(what, p) for what, value in found if isinstance(value, str) and (p := as_path(value))]


def more_places(kwargs: Kwargs) -> tuple[Found, Found]:
    """The files --format all writes (besides --out itself, declared), and the run's inputs."""
    out, fmt = kwargs.get("out"), kwargs.get("fmt")
    written = [("card file", str(p)) for p in files(out, fmt).values() if p != out] if out and fmt == "all" else []
    return written, run_inputs(kwargs["results"])


@declares(reads=(Place("results", "results folder"),), writes=(Place("out", "card file", file=True),), more=more_places)
def card(
    results: Path = typer.Argument(..., exists=True, file_okay=False, help="results folder of `terazi run` or `analyze`"),
    system: str = typer.Option(..., "--system", "-s", help="the system the card is about (a leaderboard row)"),
    labels: Optional[str] = typer.Option(None, help="tr (the Kalbur card's words) or en; default: the run's labels"),
    fmt: str = typer.Option("markdown", "--format", help="markdown | yaml (the README front matter's model-index) | "
                                                         "eval-results (a .eval_results/ file) | json (every number "
                                                         "unrounded) | all (each in its own file: needs --out)"),
    model_name: Optional[str] = typer.Option(None, help="the model's name in model-index (default: the system's)"),
    name: list[str] = typer.Option([], "--name", metavar="SYSTEM=NAME", help="how a row is called on the card, e.g. "
                                   "--name bge=BAAI/bge-reranker-v2-m3 (repeatable)"),
    rival: list[str] = typer.Option([], "--rival", help="systems the comparison counts list (repeatable; default: all)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", dir_okay=False,
                                       help="write here instead of printing (with --format all: FILE.md, FILE.yaml, "
                                            "FILE.json and .eval_results/FILE.yaml beside them)"),
    verbose: bool = VERBOSE,
) -> None:
    """The card's evaluation section: protocol, results, per-dataset and comparison tables, significant cells, rank
    intervals, and its Hugging Face metadata."""
    from terazi.present.card import build_card

    if fmt not in FORMATS:
        fail(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt == "all" and out is None:
        fail("--format all writes each part to its own file: give --out FILE (FILE.md, FILE.yaml, FILE.json and "
             ".eval_results/FILE.yaml)")
    if labels not in (None, "tr", "en"):
        fail(f"--labels must be tr or en, got {labels!r}")
    names = {}
    for item in name:
        key, eq, value = item.partition("=")
        if not eq or not key or not value:
            fail(f"--name {item!r}: expected SYSTEM=NAME")
        names[key] = value
    made = build_card(results, system, labels, model_name, names or None, rival or None)
    texts = {"markdown": made.markdown, "yaml": made.model_index_yaml, "eval-results": made.eval_results_yaml,
             "json": lambda: made.to_json() + "\n"}
    if out is None:
        print(texts[fmt](), end="")
        return
    for key, path in files(out, fmt).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(texts[key](), encoding="utf-8")
        console.print(f"wrote {path}", highlight=False)
