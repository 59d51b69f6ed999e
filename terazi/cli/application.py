"""The typer application: every command, registered in the order `terazi --help` lists them.

Each command is a plain function of its own module (terazi/cli/<command>.py); `terazi score` is parsed by its own
argparse parser (terazi/cli/score.py), which the console entry point reaches without importing typer at all.
"""

from __future__ import annotations

from typing import Annotated

import typer

from terazi.base.paths import Declared, Place
from terazi.cli import analyze, cache, card, compare, convert, corrupt, leaderboard, leakage, run, serve

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Weigh text rerankers and retrievers honestly.",
)


def _version(value: bool) -> None:
    if value:
        from terazi.cli.common import console
        from terazi.version import __version__

        console.print(f"terazi {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """Weigh text rerankers and retrievers honestly."""


def score(ctx: typer.Context) -> None:
    """Score a TREC run against qrels under a named, printed contract (trec_eval-compatible by default).

    terazi score --qrels QRELS --run RUN [-m nDCG@10 ...] [--contract trec|strict] [--format table|json];
    `terazi score --help` lists every option.
    """
    from terazi.cli.score import main

    raise typer.Exit(main(ctx.args))


# parsed by argparse (terazi/cli/score.py), so declared here: it reads its two files and writes nothing
score.declared = Declared(reads=(Place("qrels", "qrels file"), Place("run_file", "run file")))

app.command()(analyze.analyze)
app.command()(card.card)
app.command()(compare.compare)
app.command("convert-squad")(convert.convert_squad)
app.command()(corrupt.corrupt)
app.command()(run.demo)
app.command()(run.run)
app.command("leaderboard")(leaderboard.leaderboard_cmd)
app.command()(leakage.leakage)
app.command(add_help_option=False, context_settings={"ignore_unknown_options": True, "allow_extra_args": True})(score)
app.command()(serve.serve)
app.add_typer(cache.cache_app, name="cache")
