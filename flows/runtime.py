"""What a flow asks Prefect about its own run (which run, started by whom), what it tells Prefect about runs
whose process died, and how a served run that terazi refuses ends (a Failed state with one line)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar
from typing import TypeVar

from prefect.client.schemas.objects import State
from prefect.states import Failed

from terazi.base.errors import TeraziError
from terazi.base.outside import blot
from terazi.config.policy import served_deployment
from terazi.results import run_folder as results
from terazi.schemas import EvalConfig

log = logging.getLogger("terazi.flow")
CALLER: ContextVar[str] = ContextVar("terazi_caller", default="cli")  # the Python API sets "python"
T = TypeVar("T")


def run_kind() -> str:
    """'ad-hoc' for a deployment's run, else who called: 'cli' or 'python'."""
    return "ad-hoc" if served_deployment() else CALLER.get()


def current_flow_run_id() -> str | None:
    from prefect.runtime import flow_run

    return flow_run.id


def crash_stale_runs(out_dir: str) -> None:
    """Runs under `out_dir` whose process died without a word (kill -9, power loss): say so in their folder
    and mark their Prefect flow runs crashed instead of leaving them "Running" for good."""
    from prefect.client.orchestration import get_client
    from prefect.states import Crashed

    for folder, flow_run_id in results.stale_runs(out_dir):
        log.warning("run %s was interrupted earlier (its process is gone): marked incomplete", folder)
        if not flow_run_id:
            continue
        try:
            with get_client(sync_client=True) as client:
                if client.read_flow_run(flow_run_id).state.is_running():
                    client.set_flow_run_state(
                        flow_run_id, Crashed(message=f"process gone; results {folder} incomplete"), force=True
                    )
        except Exception as e:  # another server's run, or no longer known: the folder marker is what matters
            log.debug("could not mark flow run %s crashed: %s", flow_run_id, e)


def refusals_as_failed(run: Callable[[], T]) -> T | State:
    """`run()`; in a served run, terazi's own refusal (a `TeraziError`: the service policy, a bad input) ends the flow
    run as Failed with the one line that says what to change, as the CLI prints it, instead of a Python traceback in
    the UI. Elsewhere (the CLI, the Python API) it is raised for the caller, who prints or handles it."""
    try:
        return run()
    except TeraziError as e:
        if not served_deployment():
            raise
        log.error("%s", e)
        return Failed(message=blot(str(e)))


def artifact_prefix(config: EvalConfig, kind: str) -> str:
    """Artifact keys name the benchmark, so each key's history is one benchmark's (nightly runs apart)."""
    return f"{config.benchmark}-nightly" if kind == "nightly" else config.benchmark
