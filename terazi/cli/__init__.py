"""`terazi` command line: run evaluations, and the building blocks on their own.

One module per command group, registered on the typer `app` (terazi/cli/application.py). This package itself
stays light: `terazi score` goes straight to its own parser (terazi/cli/score.py) without importing typer,
because it is run in loops over many run files.
"""

from __future__ import annotations

import gc
import sys

# Allocations between two young collections of the garbage collector (CPython's default: 700). A command imports
# Prefect, polars and pydantic models (~300,000 objects that live as long as the process) before any work: at 700 the
# collector ran ~400 times over them, a tenth of the start-up of a warm `terazi demo`. terazi/cli/spare_server.py
# sets the same number for the temporary server's process.
GC_THRESHOLD = 50_000


def main() -> None:
    """Console entry point (`terazi`, `python -m terazi.cli`): every known failure is one line."""
    gc.set_threshold(GC_THRESHOLD)
    if sys.argv[1:2] in (["run"], ["demo"]) and "--help" not in sys.argv:
        from terazi.cli.prefect_api import start_early

        start_early()  # a temporary Prefect server's process, which the run waits for: started before anything else
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
