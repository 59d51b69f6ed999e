"""`terazi corrupt`: query variants as JSONL, one record per variant."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated

import typer

from terazi.base.amounts import SEED, Range
from terazi.base.paths import Place
from terazi.cli.options import Verbose, about, amount, sets
from terazi.cli.places import declares
from terazi.config.config_files import key_values
from terazi.schemas import CONDITIONS, CorruptionSpec, MobileSpec

SOURCE = 'queries JSONL ({"_id": …, "text": …}); stdin when absent'
MOBILE = "mobile: probability of one rule, e.g. --mobile ne_zaman=0.5 (repeatable; rules in docs/corruptions.md)"


@declares(reads=(Place("source", "queries file"),))
def corrupt(
    condition: Annotated[str, typer.Option(help=f"{' | '.join(CONDITIONS)}; compose with '+', e.g. upper+typo")],
    source: Annotated[Path | None, typer.Argument(exists=True, dir_okay=False, help=SOURCE)] = None,
    seed: Annotated[int, amount(SEED, help="seed of the corruptions")] = 13,
    rate: Annotated[
        float | None,
        amount(
            Range.of(CorruptionSpec, "typo_rate"),
            help=f"{about(CorruptionSpec, 'typo_rate')}; {about(CorruptionSpec, 'ascii_partial_rate')}",
        ),
    ] = None,
    min_edits: Annotated[int | None, sets(CorruptionSpec, "typo_min_edits")] = None,
    slip_rate: Annotated[
        float | None,
        amount(
            Range.of(MobileSpec, "slip"),
            help="mobile: probability of a neighbour-key slip per word (same as --mobile slip=P)",
        ),
    ] = None,
    mobile: Annotated[list[str] | None, typer.Option(metavar="RULE=P", help=MOBILE)] = None,
    samples: Annotated[int | None, sets(CorruptionSpec, "samples")] = None,
    verbose: Verbose = False,
) -> None:
    """Corrupt queries the way people type; one JSONL record per variant on stdout."""
    from terazi.corrupt.jsonl import spec_of, variant_lines

    rules = key_values(mobile, "--mobile", "RULE=PROBABILITY, e.g. ne_zaman=0.5")
    spec = spec_of(rate, slip_rate, rules, typo_min_edits=min_edits, samples=samples)
    with open(source, encoding="utf-8-sig") if source else nullcontext(sys.stdin) as stream:
        for line in variant_lines(stream, str(source) if source else "stdin", condition, seed, spec):
            print(line)
