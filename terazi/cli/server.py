"""`terazi server status|stop`: the Prefect server terazi keeps between runs with TERAZI_KEEP_SERVER=1."""

from __future__ import annotations

import time

import typer

from terazi.cli.common import console, errors_as_lines

server_app = typer.Typer(no_args_is_help=True, help="The Prefect server kept between runs (TERAZI_KEEP_SERVER=1).")


@server_app.command("status")
def status_cmd() -> None:
    """Whether a kept server runs for this Prefect home (PREFECT_HOME): its URL, process and the runs using it."""
    from terazi.cli import kept_server

    with errors_as_lines():
        state = kept_server.status()
    if state is None:
        console.print("no kept Prefect server (runs start a temporary one; TERAZI_KEEP_SERVER=1 keeps it)")
        return
    users = ", ".join(map(str, state["users"])) or "none"
    console.print(f"kept Prefect server: {state['url']} (process {state['pid']}, Prefect {state['version']}, up "
                  f"{(time.time() - state.get('started', time.time())) / 60:.0f} min; runs using it: {users})")


@server_app.command("stop")
def stop_cmd() -> None:
    """Stop the kept server now (it stops by itself once no run has used it for TERAZI_KEEP_SERVER_IDLE seconds)."""
    from terazi.cli import kept_server

    with errors_as_lines():
        pid = kept_server.stop()
    console.print("no kept Prefect server was running" if pid is None else f"stopped the kept Prefect server (process {pid})")
