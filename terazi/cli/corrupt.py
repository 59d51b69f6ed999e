"""`terazi corrupt`: query variants as JSONL, one record per variant."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from terazi.cli import app
from terazi.cli._common import fail
from terazi.errors import describe


@app.command()
def corrupt(
    condition: str = typer.Option(..., help="clean | upper | ascii_full | ascii_partial | typo | colloquial | mobile; "
                                                 "compose with '+', e.g. upper+typo"),
    source: Optional[Path] = typer.Argument(None, exists=True, dir_okay=False,
                                            help="queries JSONL ({\"_id\": …, \"text\": …}); stdin when absent"),
    seed: int = typer.Option(13),
    rate: Optional[float] = typer.Option(None, help="typo: share of words edited; ascii_partial: share of letters stripped"),
    slip_rate: Optional[float] = typer.Option(None, help="mobile: share of words with a neighbour-key slip"),
    samples: int = typer.Option(1, min=1, help="samples per query (stochastic conditions only)"),
) -> None:
    """Corrupt queries the way people type; one JSONL record per variant on stdout."""
    from pydantic import ValidationError

    from schemas import Query
    from terazi.corrupt import CONDITIONS, samples_for
    from terazi.corrupt import corrupt as corrupt_text

    if any(p not in CONDITIONS for p in condition.split("+")):
        fail(f"unknown condition {condition!r}; known: {', '.join(CONDITIONS)} (compose with '+', e.g. upper+typo)")
    params = {k: v for k, v in (("rate", rate), ("slip_rate", slip_rate)) if v is not None}
    k = samples_for(condition, samples, **params)
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
                text = corrupt_text(q.text, condition, seed=seed, query_id=q.id, sample=s, **params)
                print(json.dumps({"_id": q.id, "text": text, "original": q.text, "condition": condition,
                                  "seed": seed, "sample": s, "changed": text != q.text}, ensure_ascii=False))
