"""`terazi cache check|repair|merge`: the cache folder's health, and score caches combined."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from terazi.cli.common import VERBOSE, console, errors_as_lines, fail
from terazi.cli.places import Place, declares

cache_app = typer.Typer(no_args_is_help=True, help="Check, repair and merge terazi's cache folder.")
CACHE = typer.Option(Path(".terazi-cache"), "--cache", help="the cache folder (a run's --cache / cache_dir)")


def _folder(cache: Path) -> Path:
    if not cache.is_dir():
        fail(f"cache folder {cache} not found")
    return cache.resolve()


@cache_app.command("check")
@declares(reads=(Place("cache", "cache folder"),))
def check_cmd(cache: Path = CACHE, verbose: bool = VERBOSE) -> None:
    """Check the score cache (SQLite's integrity check), every frozen candidate set (file hashes), the embedding
    shards and corpus tables. Exit 0 when all is sound, 2 when `terazi cache repair` has work to do."""
    from terazi.cache_folder import check

    with errors_as_lines():
        findings = check(_folder(cache))
    if not findings:
        console.print(f"{cache}: no problems found")
        return
    table = Table(title=f"{cache}: {len(findings)} problem(s)")
    for c in ("file", "problem", "`terazi cache repair` will"):
        table.add_column(c, overflow="fold")
    for f in findings:
        table.add_row(f.path, f.problem, f.repair)
    console.print(table)
    fail(f"run `terazi cache repair --cache {cache}`")


@cache_app.command("repair")
@declares(writes=(Place("cache", "cache folder"),))
def repair_cmd(cache: Path = CACHE, verbose: bool = VERBOSE) -> None:
    """Quarantine a damaged score cache (kept under quarantine/), salvage every readable score into a new one,
    write damaged TREC files again from their parquet, set aside candidate sets that cannot be trusted and
    delete damaged derived files (embeddings, corpus tables): the next run rebuilds what is missing."""
    from terazi.cache_folder import repair

    with errors_as_lines():
        done = repair(_folder(cache))
    for line in done or [f"{cache}: nothing to repair"]:
        console.print(line, highlight=False, soft_wrap=True)


@cache_app.command("merge")
@declares(reads=(Place("sources", "score cache to merge"),),
          writes=(Place("cache", "cache folder", when=lambda kw: not kw.get("into")),
                  Place("into", "shared score store")))
def merge_cmd(
    sources: list[str] = typer.Argument(..., help="cache folders, scores.sqlite files or shared score stores "
                                                  "(folders or fsspec URLs such as s3://bucket/terazi-scores)"),
    cache: Path = CACHE,
    into: Optional[str] = typer.Option(None, "--into", help="merge into this shared score store instead of the "
                                                            "cache folder's scores.sqlite"),
    verbose: bool = VERBOSE,
) -> None:
    """Copy the scores of other caches or of a shared store into this cache (or, with --into, into a shared store).
    Pairs already present are kept as they are."""
    from terazi.cache_folder import merge, open_source
    from terazi.rerank.store import SharedStore, SQLiteStore
    from terazi.rerank.store.scores import cache_file

    with errors_as_lines():
        target = SharedStore(into) if into else SQLiteStore(cache_file(cache))
        for source in sources:
            got = merge(target, open_source(source))
            console.print(f"{source} → {into or target.where}: {got['rows']} scores of {got['models']} model(s) merged",
                          highlight=False, soft_wrap=True)
