"""What every command shares: the consoles, logging set-up, the run's tables on the terminal, and the one-line error
boundary (the options several commands take: terazi/cli/options.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console

from terazi.base.errors import TeraziError
from terazi.base.logs import prefect_defaults, to_terminal

console = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True)


# the declared outputs of the command running (terazi.cli.places): what → (the folder it is written in, its option)
OUTPUTS: ContextVar[dict[str, tuple[Path, str]]] = ContextVar("terazi_outputs")


def setup(verbose: bool) -> None:
    """Prefect's defaults, the verbosity of errors, and terazi's log lines on stderr."""
    prefect_defaults()
    if verbose:
        os.environ["TERAZI_VERBOSE"] = "1"
    to_terminal(err, verbose)


def verbose() -> bool:
    return os.environ.get("TERAZI_VERBOSE") == "1"


def print_leaderboard(run_dir: Path) -> None:
    """The run's tables on the terminal, as every output shows them: `terazi demo`, `run` and `analyze` end with it."""
    from terazi.present.terminal import leaderboard_rich

    console.print(leaderboard_rich(run_dir))


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one `error:` line and exit (SystemExit, so it works inside and outside click alike). The message is text,
    not markup, and may quote a server: its secrets are blotted (`terazi.base.outside`)."""
    from rich.markup import escape

    from terazi.base.outside import blot

    err.print(f"[bold red]error:[/] {escape(blot(message))}", highlight=False, soft_wrap=True)
    raise SystemExit(code)


def explain(exc: BaseException) -> tuple[str, int] | None:
    """A known failure as (one line, exit code); None for a bug (which keeps its traceback)."""
    from terazi.base.paths import disk_full, is_disk_full

    if isinstance(exc, TeraziError):
        return str(exc), 2
    if full := disk_full(exc, OUTPUTS.get({})):  # the command's declared outputs, else the failed file's folder
        return str(full), 2
    if is_disk_full(exc):
        return "disk full (the writer named no file): free space on the disk of the command's outputs", 2
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename or exc}", 2
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        from terazi.base.errors import describe

        return "invalid configuration:\n  " + describe(exc, sep="\n  "), 2
    return None


@contextmanager
def errors_as_lines() -> Iterator[None]:
    """BootstrapStore failures become one `error:` line and exit 2; tracebacks only with --verbose."""
    try:
        yield
    except (typer.Exit, typer.Abort, SystemExit, typer.TyperException):  # usage errors stay typer's
        raise
    except KeyboardInterrupt:
        err.print("[yellow]stopped[/]")
        raise SystemExit(130) from None
    except Exception as e:  # noqa: BLE001 - this is the boundary that turns failures into messages
        known = explain(e)
        if verbose():
            err.print_exception()
        if known:
            fail(*known)
        fail(f"{type(e).__name__}: {e}" + ("" if verbose() else "  (run with --verbose for the traceback)"), 1)
