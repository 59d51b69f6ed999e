"""What `terazi score` prints: one run's measures under its metric contract, as a table (with the sentence that names
the contract's policies) or as JSON, per query on request. Imports only the table, so the command stays quick."""

from __future__ import annotations

import json
from typing import Any

from terazi.present.table import Table


def as_json(ev: Any, aliases: dict[str, str], per_query: bool) -> str:
    """The evaluation (`terazi.metrics.engine.Evaluation`) as JSON: means, query counts, contract, measure aliases."""
    out = {"aggregate": ev.aggregate, "queries": ev.queries, "contract": ev.contract(), "aliases": aliases}
    if per_query:
        out["per_query"] = {m: ev.per_query_dict(m) for m in ev.measures}
    return json.dumps(out, indent=2, ensure_ascii=False)


def as_text(ev: Any, policies: Any, aliases: dict[str, str], title: str, per_query: bool) -> list[Any]:
    """What the terminal shows, in order: the measures' table (gain, relevance threshold and the queries without a
    relevant document under the contract's policy), the aliases read, the contract's sentence, the per-query table."""
    no_relevant = ev.queries["no_relevant"]
    rows = [
        [
            name,
            f"{ev.aggregate[name]:.4f}",
            str(len(ev.query_ids[name])),
            m.gain if m.family == "nDCG" else "–",
            "–" if m.family in ("nDCG", "Judged") else str(m.rel),
            f"{no_relevant[name]} ({policies.no_relevant})",
        ]
        for name, m in ev.measures.items()
    ]
    table = Table(["measure", "value", "queries", "gain", "rel ≥", "no relevant"], rows, align=["left"] + ["right"] * 5)
    parts = [table.rich(f"{title} — contract {policies.label}")]
    if aliases:
        parts.append("aliases: " + ", ".join(f"{a} → {c}" for a, c in aliases.items()))
    parts.append(ev.sentence())
    if per_query:
        ids = sorted({q for m in ev.measures for q in ev.query_ids[m]})
        vals = {m: ev.per_query_dict(m) for m in ev.measures}
        per_query_rows = [[q, *(f"{vals[m][q]:.4f}" if q in vals[m] else "–" for m in ev.measures)] for q in ids]
        parts.append(Table(["query", *ev.measures], per_query_rows).rich())
    return parts
