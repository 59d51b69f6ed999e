"""`terazi cache check|repair|du|prune|merge`: the cache folder's health and size, and score caches combined."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from terazi.cli.common import VERBOSE, console, errors_as_lines, fail
from terazi.cli.places import Place, declares

cache_app = typer.Typer(no_args_is_help=True, help="Check, repair, weigh, prune and merge terazi's cache folder.")
CACHE = typer.Option(Path(".terazi-cache"), "--cache", help="the cache folder (a run's --cache / cache_dir)")


def _folder(cache: Path) -> Path:
    if not cache.is_dir():
        fail(f"cache folder {cache} not found")
    return cache.resolve()


@cache_app.command("check")
@declares(reads=(Place("cache", "cache folder"),))
def check_cmd(cache: Path = CACHE, verbose: bool = VERBOSE) -> None:
    """Check the score cache (SQLite's integrity check), every frozen candidate set and stored output (every byte
    against its recorded hash), the vector stores, corpus tables and intervals file. Exit 0 when all is sound, 2 when
    `terazi cache repair` has work to do."""
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


@cache_app.command("du")
@declares(reads=(Place("cache", "cache folder"),))
def du_cmd(cache: Path = CACHE, verbose: bool = VERBOSE) -> None:
    """What each part of the cache weighs on disk, and what removing it would give back (stored outputs that a
    results folder still links free nothing)."""
    from terazi.cache_usage import human, usage

    rows = usage(_folder(cache))
    table = Table(title=f"{cache}")
    for c in ("part", "entries", "on disk", "freed if removed"):
        table.add_column(c, justify="left" if c == "part" else "right")
    for part, n, size, freed in rows:
        table.add_row(part, str(n), human(size), "never pruned" if part.endswith("(kept)") else human(freed))
    table.add_row("total", str(sum(r[1] for r in rows)), human(sum(r[2] for r in rows)), "")
    console.print(table)


@cache_app.command("prune")
@declares(writes=(Place("cache", "cache folder"),))
def prune_cmd(
    cache: Path = CACHE,
    older_than: Optional[str] = typer.Option(None, "--older-than", help="remove entries no run used for this long "
                                                                         "(30d, 12h, 90m)"),
    max_size: Optional[str] = typer.Option(None, "--max-size", help="then remove the least recently used entries "
                                                                     "until the cache fits (20G, 500M)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="list what would be removed; remove nothing"),
    verbose: bool = VERBOSE,
) -> None:
    """Remove stored outputs, frozen candidate sets, vector stores, corpus tables, ONNX exports, the intervals file
    and quarantined items that no run used recently. The score store is never pruned; a warm run afterwards makes
    again exactly what was removed."""
    from terazi.cache_usage import age, human, parse_age, parse_size, prunable, remove

    if older_than is None and max_size is None:
        fail("say what to prune: --older-than AGE, --max-size SIZE, or both (add --dry-run to look first)")
    try:
        seconds = None if older_than is None else parse_age(older_than)
        budget = None if max_size is None else parse_size(max_size)
    except ValueError as e:
        fail(str(e))
    folder = _folder(cache)
    chosen = prunable(folder, seconds, budget)
    now = time.time()
    for e in chosen:
        if not dry_run:
            remove(e)
        console.print(f"{'would remove' if dry_run else 'removed'} {e.part}: {e.path.relative_to(folder)} "
                      f"({human(e.size)}, frees {human(e.freed)}, last used {age(now - e.used)} ago)",
                      highlight=False, soft_wrap=True)
    freed = sum(e.freed for e in chosen)
    console.print(f"{cache}: {len(chosen)} entr{'y' if len(chosen) == 1 else 'ies'} "
                  f"{'would be ' if dry_run else ''}removed, {human(freed)} "
                  f"{'would be ' if dry_run else ''}freed", highlight=False)


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
