"""`terazi cache check|repair|du|prune|merge`: the cache folder's health and size, and score caches combined."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from terazi.base.amounts import parse_age, parse_size
from terazi.base.paths import Place
from terazi.cli.common import console, fail
from terazi.cli.options import Verbose, reads
from terazi.cli.places import declares

cache_app = typer.Typer(no_args_is_help=True, help="Check, repair, weigh, prune and merge terazi's cache folder.")
Cache = Annotated[Path, typer.Option("--cache", help="the cache folder (a run's --cache / cache_dir)")]
CACHE = Path(".terazi-cache")


def _folder(cache: Path) -> Path:
    if not cache.is_dir():
        fail(f"cache folder {cache} not found")
    return cache.resolve()


@cache_app.command("check")
@declares(reads=(Place("cache", "cache folder"),))
def check_cmd(cache: Cache = CACHE, verbose: Verbose = False) -> None:
    """Check the score cache (SQLite's integrity check), every frozen candidate set and stored output (every byte
    against its recorded hash), the vector stores, corpus tables and intervals file. Exit 0 when all is sound, 2 when
    `terazi cache repair` has work to do."""
    from terazi.upkeep.health import check, findings_table

    findings = check(_folder(cache))
    if not findings:
        console.print(f"{cache}: no problems found")
        return
    console.print(findings_table(findings).rich(f"{cache}: {len(findings)} problem(s)", fold=True))
    fail(f"run `terazi cache repair --cache {cache}`")


@cache_app.command("repair")
@declares(writes=(Place("cache", "cache folder"),))
def repair_cmd(cache: Cache = CACHE, verbose: Verbose = False) -> None:
    """Quarantine a damaged score cache (kept under quarantine/), salvage every readable score into a new one,
    write damaged TREC files again from their parquet, set aside candidate sets that cannot be trusted and
    delete damaged derived files (embeddings, corpus tables): the next run rebuilds what is missing."""
    from terazi.upkeep.health import repair

    done = repair(_folder(cache))
    for line in done or [f"{cache}: nothing to repair"]:
        console.print(line, highlight=False, soft_wrap=True)


@cache_app.command("du")
@declares(reads=(Place("cache", "cache folder"),))
def du_cmd(cache: Cache = CACHE, verbose: Verbose = False) -> None:
    """What each part of the cache weighs on disk, and what removing it would give back (stored outputs that a
    results folder still links free nothing)."""
    from terazi.upkeep.usage import usage_table

    console.print(usage_table(_folder(cache)).rich(f"{cache}"))


@cache_app.command("prune")
@declares(writes=(Place("cache", "cache folder"),))
def prune_cmd(
    cache: Cache = CACHE,
    older_than: Annotated[
        float | None,
        typer.Option(
            metavar="AGE", **reads(parse_age), help="remove entries no run used for this long (30d, 12h, 90m)"
        ),
    ] = None,
    max_size: Annotated[
        int | None,
        typer.Option(
            metavar="SIZE",
            **reads(parse_size),
            help="then remove the least recently used entries until the cache fits (20G, 500M)",
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="list what would be removed; remove nothing")] = False,
    verbose: Verbose = False,
) -> None:
    """Remove stored outputs, frozen candidate sets, vector stores, corpus tables, ONNX exports, the intervals file
    and quarantined items that no run used recently. The score store is never pruned; a warm run afterwards makes
    again exactly what was removed."""
    from terazi.upkeep.usage import prune

    if older_than is None and max_size is None:
        fail("say what to prune: --older-than AGE, --max-size SIZE, or both (add --dry-run to look first)")
    _folder(cache)  # a missing folder: one line
    for line in prune(cache, older_than, max_size, dry_run):
        console.print(line, highlight=False, soft_wrap=True)


@cache_app.command("merge")
@declares(
    reads=(Place("sources", "score cache to merge"),),
    writes=(Place("cache", "cache folder", when=lambda kw: not kw.get("into")), Place("into", "shared score store")),
)
def merge_cmd(
    sources: Annotated[
        list[str],
        typer.Argument(
            help=(
                "cache folders, scores.sqlite files or shared score stores (folders or fsspec URLs such as "
                "s3://bucket/terazi-scores)"
            )
        ),
    ],
    cache: Cache = CACHE,
    into: Annotated[
        str | None, typer.Option(help="merge into this shared score store instead of the cache folder's scores.sqlite")
    ] = None,
    verbose: Verbose = False,
) -> None:
    """Copy the scores of other caches or of a shared store into this cache (or, with --into, into a shared store).
    Pairs already present are kept as they are."""
    from terazi.upkeep.health import merge_all

    for line in merge_all(sources, cache, into):
        console.print(line, highlight=False, soft_wrap=True)
