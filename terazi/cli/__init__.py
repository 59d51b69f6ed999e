"""`terazi` command line: run evaluations, and the building blocks on their own.

One module per command group, registered on the typer `app` (terazi/cli/application.py). This package itself
stays light: `terazi score` goes straight to its own parser (terazi/cli/score.py) without importing typer,
because it is run in loops over many run files.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Console entry point (`terazi`, `python -m terazi.cli`): every known failure is one line."""
    if sys.argv[1:2] == ["score"]:
        from terazi.cli.score import main as score_main

        sys.exit(score_main(sys.argv[2:]))
    from terazi.cli.application import app
    from terazi.cli.common import errors_as_lines

    with errors_as_lines():
        app()


def __getattr__(name: str):
    if name == "app":  # `from terazi.cli import app` (tests, embedding) loads the typer application on first use
        from terazi.cli.application import app

        return app
    raise AttributeError(f"module 'terazi.cli' has no attribute {name!r}")
