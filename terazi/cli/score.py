"""`terazi score`: a TREC run against qrels under a printed contract."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from terazi.cli import app
from terazi.cli._common import console, fail
from terazi.errors import DatasetError


@app.command()
def score(
    qrels: Path = typer.Option(..., exists=True, dir_okay=False, help="TREC qrels (qid 0 docid grade) or BEIR tsv"),
    run_file: Path = typer.Option(..., "--run", exists=True, dir_okay=False, help="TREC run (qid Q0 docid rank score tag)"),
    metric: list[str] = typer.Option(["nDCG@10", "RR@10"], "--metric", "-m", help="e.g. nDCG@10, RR(rel=2)@10, AP"),
    no_relevant: str = typer.Option("zero", help="queries with no relevant document: zero | skip | error"),
    missing_query: str = typer.Option("zero", help="judged queries the run did not return: zero | skip"),
    extra_query: str = typer.Option("ignore", help="run queries without judgments: ignore | error"),
    unjudged: str = typer.Option("irrelevant", help="retrieved documents without a judgment: irrelevant | error"),
    per_query: bool = typer.Option(False, "--per-query", help="include per-query values"),
    fmt: str = typer.Option("table", "--format", help="table | json"),
) -> None:
    """Score a TREC run against qrels under an explicit, printed contract (trec_eval-compatible)."""
    from terazi.metrics import MetricError, Policies, evaluate
    from terazi.trec import read_qrels, read_run

    choices = {"no_relevant": ("zero", "skip", "error"), "missing_query": ("zero", "skip"),
               "extra_query": ("ignore", "error"), "unjudged": ("irrelevant", "error"), "format": ("table", "json")}
    given = {"no_relevant": no_relevant, "missing_query": missing_query, "extra_query": extra_query,
             "unjudged": unjudged, "format": fmt}
    for key, value in given.items():
        if value not in choices[key]:
            fail(f"--{key.replace('_', '-')} must be one of {', '.join(choices[key])}, got {value!r}")
    try:
        ev = evaluate(read_qrels(qrels), read_run(run_file), metric,
                      Policies(no_relevant, missing_query, extra_query, unjudged))  # type: ignore[arg-type]
    except (DatasetError, MetricError) as e:
        fail(str(e))
    queries = {"judged": ev.counts["queries_judged"], "missing_from_run": ev.counts["queries_missing_from_run"],
               "extra_in_run": ev.counts["queries_extra_in_run"], "unjudged_documents": ev.counts["unjudged_retrieved"],
               "evaluated": {m: len(ev.query_ids[m]) for m in ev.measures},
               "no_relevant": {m: ev.counts[f"{m}:no_relevant"] for m in ev.measures}}
    if fmt == "json":
        out = {"aggregate": ev.aggregate, "queries": queries, "contract": ev.contract()}
        if per_query:
            out["per_query"] = {m: ev.per_query_dict(m) for m in ev.measures}
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return
    table = Table(title=f"{run_file.name} vs {qrels.name}")
    for c in ("measure", "value", "queries", "gain", "rel ≥", "no relevant"):
        table.add_column(c, justify="left" if c == "measure" else "right")
    for name, m in ev.measures.items():
        table.add_row(name, f"{ev.aggregate[name]:.4f}", str(len(ev.query_ids[name])),
                      m.gain if m.family == "nDCG" else "–", "–" if m.family in ("nDCG", "Judged") else str(m.rel),
                      f"{queries['no_relevant'][name]} ({no_relevant})")
    console.print(table)
    console.print(f"judged queries {queries['judged']}; missing from run {queries['missing_from_run']} ({missing_query}); "
                  f"run queries without judgments {queries['extra_in_run']} ({extra_query}); unjudged documents "
                  f"retrieved {queries['unjudged_documents']} ({unjudged}); ties: score desc, then doc id desc; "
                  f"ideal DCG 0 → 0", highlight=False)
    if per_query:
        pq = Table("query", *ev.measures)
        ids = sorted({q for m in ev.measures for q in ev.query_ids[m]})
        vals = {m: ev.per_query_dict(m) for m in ev.measures}
        for q in ids:
            pq.add_row(q, *(f"{vals[m][q]:.4f}" if q in vals[m] else "–" for m in ev.measures))
        console.print(pq)
