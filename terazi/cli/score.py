"""`terazi score`: one TREC run against qrels under a named, printed contract.

Its options are parsed here with argparse, not by typer: typer coerces every option through a
pydantic TypeAdapter, which costs about 0.15 s per call, and `terazi score` is the command people
run in loops over many run files. Only polars and this package's metric code are imported (rich
only for the table), so a call on 10,000 queries × 100 documents takes about half the time of a
plain pytrec_eval script, start-up included (benchmarks/bench_metrics.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from terazi.metrics.contracts import CONTRACTS, POLICY_CHOICES

POLICY_HELP = {
    "no_relevant": "queries with no relevant document",
    "missing_query": "judged queries the run did not return",
    "extra_query": "run queries without judgments",
    "unjudged": "retrieved documents without a judgment for that query",
    "nan_score": "NaN run scores",
    "repeated_rank": "two documents with one rank in a query (reads the rank column)",
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="terazi score", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Score a TREC run against qrels under a named, printed contract (default trec: trec_eval -c).",
        epilog="contracts:\n" + "\n".join(f"  {c.name}: {c.summary}" for c in CONTRACTS.values())
               + "\n\nEach policy option overrides the contract's value; the output names the contract and every policy.")
    p.add_argument("--qrels", type=Path, required=True, help="TREC qrels (qid 0 docid grade) or BEIR tsv; - for stdin")
    p.add_argument("--run", dest="run_file", type=Path, required=True,
                   help="TREC run (qid Q0 docid rank score tag); - for stdin (a pipe or <(…) works too)")
    p.add_argument("-m", "--metric", action="append",
                   help="repeatable; default nDCG@10 and RR@10. e.g. nDCG@10, RR(rel=2)@10, AP; ranx (mrr@10, map@100) "
                        "and trec_eval (ndcg_cut_10, ndcg, recip_rank, P_5) names are aliases")
    p.add_argument("--contract", choices=list(CONTRACTS), default="trec", help="named policy preset (default trec)")
    for name, choices in POLICY_CHOICES.items():
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, choices=choices,
                       help=f"{POLICY_HELP[name]}: {' | '.join(choices)} (default: the contract's)")
    p.add_argument("--per-query", action="store_true", help="include per-query values")
    p.add_argument("--format", dest="fmt", choices=["table", "json"], default="table")
    p.add_argument("-v", "--verbose", action="store_true", help="full tracebacks")
    return p


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, width=None if sys.stdout.isatty() else 160)


def main(argv: list[str]) -> int:
    """Run `terazi score` with these arguments; returns the exit status (2 for bad input, as typer does)."""
    from terazi.data.trec import read_qrels, read_run
    from terazi.errors import DatasetError, MetricError
    from terazi.metrics.contracts import Policies
    from terazi.metrics.engine import evaluate
    from terazi.schemas.measures import parse_measure

    args = parser().parse_args(argv)
    policies = Policies.of(args.contract, **{name: getattr(args, name) for name in POLICY_CHOICES})
    try:
        for path in (args.qrels, args.run_file):  # a pipe is read like a file: `-` (stdin), /dev/stdin, <(…)
            if str(path) != "-" and (not path.exists() or path.is_dir()):
                raise DatasetError(path, None, "no such file")
        if str(args.qrels) == str(args.run_file) == "-":
            raise DatasetError("-", None, "stdin can hold the run or the qrels, not both")
        canonical = {m: parse_measure(m).canonical for m in args.metric or ["nDCG@10", "RR@10"]}
        measures = list(dict.fromkeys(canonical.values()))
        ev = evaluate(read_qrels(args.qrels), read_run(args.run_file, rank=policies.repeated_rank == "error"),
                      measures, policies)
    except (DatasetError, MetricError) as e:
        _console(stderr=True).print(f"[bold red]error:[/] {e}", highlight=False)
        return 2
    except OSError as e:  # an unreadable file (permissions, a folder): one line, as every command says it
        if args.verbose:
            raise
        _console(stderr=True).print(f"[bold red]error:[/] {e.filename or ''}: {e.strerror or e}", highlight=False)
        return 2
    aliases = {m: c for m, c in canonical.items() if m.strip() != c}
    counts = ev.counts
    queries = {"judged": counts["queries_judged"], "missing_from_run": counts["queries_missing_from_run"],
               "extra_in_run": counts["queries_extra_in_run"], "unjudged_documents": counts["unjudged_retrieved"],
               "nan_scores": counts["nan_scores"], "evaluated": {m: len(ev.query_ids[m]) for m in ev.measures},
               "no_relevant": {m: counts[f"{m}:no_relevant"] for m in ev.measures}}
    if args.fmt == "json":
        out = {"aggregate": ev.aggregate, "queries": queries, "contract": ev.contract(), "aliases": aliases}
        if args.per_query:
            out["per_query"] = {m: ev.per_query_dict(m) for m in ev.measures}
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    from terazi.present.table import Table

    p, console = policies, _console()
    rows = [[name, f"{ev.aggregate[name]:.4f}", str(len(ev.query_ids[name])), m.gain if m.family == "nDCG" else "–",
             "–" if m.family in ("nDCG", "Judged") else str(m.rel), f"{queries['no_relevant'][name]} ({p.no_relevant})"]
            for name, m in ev.measures.items()]
    columns = ["measure", "value", "queries", "gain", "rel ≥", "no relevant"]
    table = Table(columns, rows, align=["left"] + ["right"] * 5)
    console.print(table.rich(f"{args.run_file.name} vs {args.qrels.name} — contract {p.label}"))
    if aliases:
        console.print("aliases: " + ", ".join(f"{a} → {c}" for a, c in aliases.items()), highlight=False)
    console.print(f"contract {p.label}: {CONTRACTS[p.preset].summary}. Judged queries {queries['judged']}; missing from "
                  f"run {queries['missing_from_run']} ({p.missing_query}); run queries without judgments "
                  f"{queries['extra_in_run']} ({p.extra_query}); unjudged documents retrieved "
                  f"{queries['unjudged_documents']} ({p.unjudged}); NaN scores {queries['nan_scores']} "
                  f"({'ranked last' if p.nan_score == 'last' else 'error'}); ties: score desc, then doc id desc; "
                  f"ideal DCG 0 → 0", highlight=False)
    if args.per_query:
        ids = sorted({q for m in ev.measures for q in ev.query_ids[m]})
        vals = {m: ev.per_query_dict(m) for m in ev.measures}
        per_query = [[q, *(f"{vals[m][q]:.4f}" if q in vals[m] else "–" for m in ev.measures)] for q in ids]
        console.print(Table(["query", *ev.measures], per_query).rich())
    return 0
