"""`terazi score`: a TREC run against qrels under a named, printed contract.

The options are parsed by `terazi.scoring` (argparse), which the console entry point reaches without
importing typer at all; this typer command hands its arguments to the same code, so both routes agree.
"""

from __future__ import annotations

import typer

from terazi.cli.application import app


@app.command(add_help_option=False, context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
def score(ctx: typer.Context) -> None:
    """Score a TREC run against qrels under a named, printed contract (trec_eval-compatible by default).

    terazi score --qrels QRELS --run RUN [-m nDCG@10 ...] [--contract trec|strict] [--format table|json];
    `terazi score --help` lists every option.
    """
    from terazi.cli.score_command import main

    raise typer.Exit(main(ctx.args))
