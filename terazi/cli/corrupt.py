"""`terazi corrupt`: query variants as JSONL, one record per variant."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from terazi.cli.common import VERBOSE, fail
from terazi.cli.places import Place, declares
from terazi.errors import describe


@declares(reads=(Place("source", "queries file"),))
def corrupt(
    condition: str = typer.Option(..., help="clean | upper | ascii_full | ascii_partial | typo | colloquial | mobile; "
                                                 "compose with '+', e.g. upper+typo"),
    source: Optional[Path] = typer.Argument(None, exists=True, dir_okay=False,
                                            help="queries JSONL ({\"_id\": …, \"text\": …}); stdin when absent"),
    seed: int = typer.Option(13),
    rate: Optional[float] = typer.Option(None, help="typo: expected edits per letter (default 0.05); "
                                                    "ascii_partial: share of Turkish letters stripped (default 0.5)"),
    min_edits: int = typer.Option(0, min=0, help="typo: resample until a variant has at least this many edits"),
    slip_rate: Optional[float] = typer.Option(None, help="mobile: probability of a neighbour-key slip per word "
                                                         "(same as --mobile slip=P)"),
    mobile: list[str] = typer.Option([], "--mobile", metavar="RULE=P",
                                     help="mobile: probability of one rule, e.g. --mobile ne_zaman=0.5 (repeatable; "
                                          "rules in docs/corruptions.md)"),
    samples: int = typer.Option(1, min=1, help="samples per query (stochastic conditions only)"),
    verbose: bool = VERBOSE,
) -> None:
    """Corrupt queries the way people type; one JSONL record per variant on stdout."""
    from pydantic import ValidationError

    from terazi.corrupt.conditions import RULES, changed, samples_for
    from terazi.corrupt.conditions import corrupt as corrupt_text
    from terazi.schemas import CorruptionSpec, MobileSpec, Query

    if any(p not in RULES for p in condition.split("+")):
        fail(f"unknown condition {condition!r}; known: {', '.join(RULES)} (compose with '+', e.g. upper+typo)")
    rules = {}
    for item in mobile:
        name, eq, value = item.partition("=")
        if not eq:
            fail(f"--mobile {item!r}: expected RULE=PROBABILITY, e.g. ne_zaman=0.5")
        if name.strip() not in MobileSpec.model_fields:
            fail(f"--mobile {item!r}: unknown rule {name.strip()!r}; rules: {', '.join(MobileSpec.model_fields)}")
        rules[name.strip()] = value.strip()
    if slip_rate is not None:
        rules.setdefault("slip", slip_rate)
    raw = {"typo_min_edits": min_edits, "mobile": rules} | ({"typo_rate": rate, "ascii_partial_rate": rate} if rate is not None else {})
    try:
        spec = CorruptionSpec.model_validate(raw)
    except ValidationError as e:
        fail("invalid corruption settings: " + describe(e))
    k = samples_for(condition, samples, spec)
    stream = open(source, encoding="utf-8-sig") if source else sys.stdin
    where = str(source) if source else "stdin"
    with stream:
        for n, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                q = Query.model_validate_json(line)
            except ValidationError as e:
                fail(f"{where}, line {n}: {describe(e)}")
            for s in range(k):
                text = corrupt_text(q.text, condition, seed=seed, query_id=q.id, sample=s, spec=spec)
                print(json.dumps({"_id": q.id, "text": text, "original": q.text, "condition": condition,
                                  "seed": seed, "sample": s, "changed": changed(q.text, text)}, ensure_ascii=False))
