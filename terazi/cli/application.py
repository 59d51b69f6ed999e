"""The typer application; each command module registers its commands on `app`."""

from __future__ import annotations

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Weigh text rerankers and retrievers honestly.")


def _version(value: bool) -> None:
    if value:
        from terazi import __version__
        from terazi.cli._common import console

        console.print(f"terazi {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version.")) -> None:
    """Weigh text rerankers and retrievers honestly."""


from terazi.cli import (  # noqa: E402,F401  (each module registers its commands)
    analyze, cache, compare, convert, corrupt, evaluate, leaderboard, score, serve)
