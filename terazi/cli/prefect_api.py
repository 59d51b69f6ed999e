"""The CLI's side of Prefect: is the API reachable, and a flow started as every command starts one (Prefect's console
lines only with --verbose: `terazi.base.logs.quiet_console`)."""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from terazi.base.errors import TeraziError
from terazi.base.logs import quiet_console
from terazi.cli.common import err, verbose


def check_api() -> None:
    """With PREFECT_API_URL set, fail in one line (and say how to fix it) when nothing answers there."""
    url = os.environ.get("PREFECT_API_URL")
    if not url:
        return
    import httpx

    try:
        httpx.get(url.rstrip("/") + "/health", timeout=5.0).raise_for_status()
    except httpx.HTTPError as e:
        raise TeraziError(
            f"cannot reach the Prefect API at {url} ({type(e).__name__}): start it with `prefect server "
            "start`, or unset PREFECT_API_URL to run on a temporary local server"
        ) from None


HEARTBEAT = "PREFECT_FLOWS_HEARTBEAT_FREQUENCY"


@contextmanager
def no_heartbeats() -> Iterator[None]:
    """A flow started by a command sends no Prefect heartbeats unless PREFECT_FLOWS_HEARTBEAT_FREQUENCY is set.
    Prefect's heartbeat thread sleeps in 1 s steps and the flow's end joins it: up to a second added to every run,
    most of a warm rerun's flow. What heartbeats are for, telling a crashed run from a running one, terazi does
    itself: a run whose process died is marked crashed by the next run on its results folder (docs/reliability.md);
    deployments served by `terazi serve` keep Prefect's setting."""
    if os.environ.get(HEARTBEAT):
        yield
        return
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    with temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


def run_flow(flow: str, config: Any) -> tuple[Any, float]:
    """The flow `flow` ("module:function") run on `config`, once everything that can be checked before it was:
    Prefect announced before it is imported (a moment's wait), its console quiet, no heartbeats. Returns the flow's
    manifest and the seconds the run took."""
    err.print("[dim]starting Prefect (a temporary local server unless PREFECT_API_URL is set)…[/]")
    quiet_console(verbose())
    module, _, name = flow.partition(":")
    run = getattr(importlib.import_module(module), name)
    started = time.perf_counter()
    with no_heartbeats():
        manifest = run(config)
    return manifest, time.perf_counter() - started
