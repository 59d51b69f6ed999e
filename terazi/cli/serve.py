"""`terazi serve`: the ad-hoc and nightly deployments, served from this process, under a policy."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from terazi.base import shutdown
from terazi.base.amounts import Range
from terazi.base.paths import Place
from terazi.cli.common import err
from terazi.cli.options import Verbose, amount, sets
from terazi.cli.places import declares
from terazi.config.config_files import given
from terazi.schemas.scale import Limits

CONFIG = "benchmark config for both deployments' defaults (default: the demo)"
REMOTE_CODE = "let form runs set trust_remote_code (runs a model repository's code)"
MODELS = "models form runs may use besides the config's: hub ids, patterns (BAAI/*), absolute folders (repeatable)"
DATA_ROOTS = "folder form runs may read datasets from, besides the config's dataset folders (repeatable)"
RESULTS_ROOT = "folder form runs write results in (default: the config's out_dir)"
CACHE_ROOT = "folder of the cache (default: the config's cache_dir)"
PRINT_POLICY = "print the policy as JSON (for a work-pool worker's TERAZI_SERVICE_POLICY) and exit"


@declares(
    reads=(Place("config", "config file"), Place("data_root", "data root")),
    writes=(Place("results_root", "results root"), Place("cache_root", "cache root")),
)
def serve(
    config: Annotated[Path | None, typer.Option("--config", "-c", dir_okay=False, help=CONFIG)] = None,
    cron: Annotated[str, typer.Option(help="nightly schedule (cron)")] = "0 2 * * *",
    timezone: Annotated[str, typer.Option(help="time zone of the schedule")] = "Europe/Istanbul",
    limit: Annotated[int | None, amount(Range(whole=True, ge=1), help="most flow runs at once")] = None,
    allow_remote_code: Annotated[bool, typer.Option("--allow-remote-code", help=REMOTE_CODE)] = False,
    allow_model: Annotated[list[str] | None, typer.Option(help=MODELS)] = None,
    data_root: Annotated[list[str] | None, typer.Option(help=DATA_ROOTS)] = None,
    results_root: Annotated[str | None, typer.Option(help=RESULTS_ROOT)] = None,
    cache_root: Annotated[str | None, typer.Option(help=CACHE_ROOT)] = None,
    max_resamples: Annotated[int | None, sets(Limits, "resamples", min=1)] = None,
    max_samples: Annotated[int | None, sets(Limits, "samples", min=1)] = None,
    max_workers: Annotated[int | None, sets(Limits, "workers", min=1)] = None,
    max_depths: Annotated[int | None, sets(Limits, "depths", min=1)] = None,
    max_pairs: Annotated[int | None, sets(Limits, "pairs", min=1)] = None,
    max_cells: Annotated[int | None, sets(Limits, "cells", min=1)] = None,
    print_policy: Annotated[bool, typer.Option("--print-policy", help=PRINT_POLICY)] = False,
    verbose: Verbose = False,
) -> None:
    """Serve the ad-hoc and nightly deployments from this process (needs PREFECT_API_URL for a lasting server).

    Anyone who reaches the Prefect UI can fill the ad-hoc form; what its runs may do is decided here
    (see docs/service.md, "Security").
    """
    limits = Limits(**given(Limits, {name.removeprefix("max_"): value for name, value in locals().items()}))
    from terazi.base.paths import disjoint
    from terazi.cli.prefect_api import check_api
    from terazi.config.policy import ServicePolicy
    from terazi.deployments.evaluate import load_config, serve_all

    cfg = load_config(config)
    policy = ServicePolicy.for_service(
        cfg, allow_remote_code, allow_model or [], data_root or [], results_root, cache_root, limits
    )
    disjoint(*policy.places())  # the served runs' outputs never overlap what they may read
    if print_policy:
        print(policy.model_dump_json())
        return
    check_api()
    if not os.environ.get("PREFECT_API_URL"):
        err.print(
            "[yellow]PREFECT_API_URL is not set: serving against a temporary server that ends with this "
            "process. Start one with `prefect server start` and export PREFECT_API_URL.[/]"
        )
    err.print(f"serving terazi-evaluate/ad-hoc and terazi-nightly/nightly (cron '{cron}', {timezone}); Ctrl-C stops")
    err.print(f"policy: {policy.describe()}", highlight=False)
    with shutdown.graceful():  # SIGTERM and Ctrl-C end it within seconds, whether or not its server is alive
        serve_all(cfg, policy, cron, timezone, limit)
