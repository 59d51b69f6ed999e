"""`terazi score`: one TREC run against qrels under a named, printed contract.

`terazi score` is the command people run in loops over many run files, so start-up is a large part of each call: its
options are parsed here with argparse, not by typer (typer's import, and its coercion of every option through a
pydantic TypeAdapter, would be paid on every call), and it imports only polars and this package's metric code (rich
only for the text report). benchmarks/bench_metrics.py times it, start-up included, against a plain pytrec_eval
script.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from terazi.metrics.contracts import CONTRACTS, POLICY_CASES, POLICY_CHOICES


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="terazi score",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Score a TREC run against qrels under a named, printed contract (default trec: trec_eval -c).",
        epilog="contracts:\n"
        + "\n".join(f"  {c.name}: {c.summary}" for c in CONTRACTS.values())
        + "\n\nEach policy option overrides the contract's value; the output names the contract and every "
        "policy.",
    )
    p.add_argument("--qrels", type=Path, required=True, help="TREC qrels (qid 0 docid grade) or BEIR tsv; - for stdin")
    p.add_argument(
        "--run",
        dest="run_file",
        type=Path,
        required=True,
        help="TREC run (qid Q0 docid rank score tag); - for stdin (a pipe or <(…) works too)",
    )
    p.add_argument(
        "-m",
        "--metric",
        action="append",
        help="repeatable; default nDCG@10 and RR@10. e.g. nDCG@10, RR(rel=2)@10, AP; ranx (mrr@10, map@100) "
        "and trec_eval (ndcg_cut_10, ndcg, recip_rank, P_5) names are aliases",
    )
    p.add_argument("--contract", choices=list(CONTRACTS), default="trec", help="named policy preset (default trec)")
    for name, choices in POLICY_CHOICES.items():
        p.add_argument(
            f"--{name.replace('_', '-')}",
            dest=name,
            choices=choices,
            help=f"{POLICY_CASES[name]}: {' | '.join(choices)} (default: the contract's)",
        )
    p.add_argument("--per-query", action="store_true", help="include per-query values")
    p.add_argument("--format", dest="fmt", choices=["table", "json"], default="table")
    p.add_argument("-v", "--verbose", action="store_true", help="full tracebacks")
    return p


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, width=None if sys.stdout.isatty() else 160)


def main(argv: list[str]) -> int:
    """Run `terazi score` with these arguments; returns the exit status (2 for bad input, as typer does)."""
    from terazi.base.errors import DatasetError, MetricError
    from terazi.data.trec import read_qrels, read_run
    from terazi.metrics.contracts import Policies
    from terazi.metrics.engine import evaluate
    from terazi.present.score_report import as_json, as_text
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
        ev = evaluate(
            read_qrels(args.qrels), read_run(args.run_file, rank=policies.repeated_rank == "error"), measures, policies
        )
    except (DatasetError, MetricError) as e:
        _console(stderr=True).print(f"[bold red]error:[/] {e}", highlight=False)
        return 2
    except OSError as e:  # an unreadable file (permissions, a folder): one line, as every command says it
        if args.verbose:
            raise
        _console(stderr=True).print(f"[bold red]error:[/] {e.filename or ''}: {e.strerror or e}", highlight=False)
        return 2
    aliases = {m: c for m, c in canonical.items() if m.strip() != c}
    if args.fmt == "json":
        print(as_json(ev, aliases, args.per_query))
        return 0
    console = _console()
    for part in as_text(ev, policies, aliases, f"{args.run_file.name} vs {args.qrels.name}", args.per_query):
        console.print(part, highlight=False)
    return 0
