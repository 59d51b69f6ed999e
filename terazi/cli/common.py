"""What every command shares: the consoles, logging set-up, and the one-line error boundary."""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import sys
from contextlib import contextmanager
from typing import Iterator, NoReturn

import typer
from rich.console import Console
from rich.logging import RichHandler

from terazi.errors import TeraziError
from terazi.logs import prefect_defaults

console = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True)

VERBOSE = typer.Option(False, "--verbose", "-v", help="debug logging and full tracebacks")


def setup(verbose: bool) -> None:
    """terazi's log lines on stderr (rich), Prefect's defaults, and the verbosity of errors."""
    prefect_defaults()
    if verbose:
        os.environ["TERAZI_VERBOSE"] = "1"
    from terazi.progress import HideProgressLines

    handler = RichHandler(console=err, show_path=False, show_time=False, markup=False)
    if sys.stderr.isatty():
        handler.addFilter(HideProgressLines())  # the bar shows it
    log = logging.getLogger("terazi")
    log.handlers[:] = [h for h in log.handlers if not isinstance(h, RichHandler)] + [handler]
    log.setLevel(logging.DEBUG if verbose else logging.INFO)
    log.propagate = False


def verbose() -> bool:
    return os.environ.get("TERAZI_VERBOSE") == "1"


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one `error:` line and exit (SystemExit, so it works inside and outside click alike)."""
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise SystemExit(code)


def explain(exc: BaseException) -> tuple[str, int] | None:
    """A known failure as (one line, exit code); None for a bug (which keeps its traceback)."""
    if isinstance(exc, TeraziError):
        return str(exc), 2
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        where = f" writing {exc.filename}" if exc.filename else ""
        return f"disk full{where}: free some space or point --out/--cache at another disk", 2
    if isinstance(exc, sqlite3.OperationalError) and "disk is full" in str(exc):
        return "disk full while writing the score cache: free some space or use another --cache folder", 2
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename or exc}", 2
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        from terazi.errors import describe

        return "invalid configuration:\n  " + describe(exc, sep="\n  "), 2
    return None


@contextmanager
def errors_as_lines() -> Iterator[None]:
    """Known failures become one `error:` line and exit 2; tracebacks only with --verbose."""
    try:
        yield
    except (typer.Exit, typer.Abort, SystemExit):
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
