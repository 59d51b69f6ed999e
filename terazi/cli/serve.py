"""`terazi serve`: the ad-hoc and nightly deployments, served from this process, under a policy."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from terazi import shutdown
from terazi.cli.common import VERBOSE, err, errors_as_lines
from terazi.cli.places import Place, declares
from terazi.schemas.config import Limits

LIMITS = Limits()


@declares(reads=(Place("config", "config file"), Place("data_root", "data root")),
          writes=(Place("results_root", "results root"), Place("cache_root", "cache root")))
def serve(
    config: Optional[Path] = typer.Option(None, "--config", "-c", dir_okay=False,
                                          help="benchmark config for both deployments' defaults (default: the demo)"),
    cron: str = typer.Option("0 2 * * *", help="nightly schedule (cron)"),
    timezone: str = typer.Option("Europe/Istanbul", help="time zone of the schedule"),
    limit: Optional[int] = typer.Option(None, min=1, help="most flow runs at once"),
    allow_remote_code: bool = typer.Option(False, "--allow-remote-code",
                                           help="let form runs set trust_remote_code (runs a model repository's code)"),
    allow_model: list[str] = typer.Option([], "--allow-model", help="model form runs may use besides the config's: "
                                          "a hub id or pattern (BAAI/*) or an absolute folder (repeatable)"),
    data_root: list[str] = typer.Option([], "--data-root", help="folder form runs may read datasets from, besides "
                                        "the config's dataset folders (repeatable)"),
    results_root: Optional[str] = typer.Option(None, help="folder form runs write results in (default: the config's out_dir)"),
    cache_root: Optional[str] = typer.Option(None, help="folder of the cache (default: the config's cache_dir)"),
    max_resamples: int = typer.Option(LIMITS.resamples, min=1, help="most bootstrap_resamples a form run may ask for"),
    max_samples: int = typer.Option(LIMITS.samples, min=1, help="most corruption.samples"),
    max_workers: int = typer.Option(LIMITS.workers, min=1, help="most task_runner_workers"),
    max_depths: int = typer.Option(LIMITS.depths, min=1, help="most rerank_depths (depths in a sweep)"),
    max_pairs: int = typer.Option(LIMITS.pairs, min=1, help="most first-stage pairs (query variants × depth × first "
                                                           "stages)"),
    max_cells: int = typer.Option(LIMITS.cells, min=1, help="most bootstrap cells (resamples × judged queries)"),
    print_policy: bool = typer.Option(False, "--print-policy", help="print the policy as JSON (for a work-pool "
                                      "worker's TERAZI_SERVICE_POLICY) and exit"),
    verbose: bool = VERBOSE,
) -> None:
    """Serve the ad-hoc and nightly deployments from this process (needs PREFECT_API_URL for a lasting server).

    Anyone who reaches the Prefect UI can fill the ad-hoc form; what its runs may do is decided here
    (see docs/service.md, "Security").
    """
    with errors_as_lines():
        from terazi.cli.prefect_api import check_api
        from terazi.deployments.evaluate import load_config, serve_all
        from terazi.paths import disjoint
        from terazi.policy import ServicePolicy

        cfg = load_config(config)
        limits = Limits(resamples=max_resamples, samples=max_samples, workers=max_workers, depths=max_depths,
                        pairs=max_pairs, cells=max_cells)
        policy = ServicePolicy.for_service(cfg, allow_remote_code, allow_model, data_root, results_root, cache_root,
                                           limits)
        disjoint(*policy.places())  # the served runs' outputs never overlap what they may read
        if print_policy:
            print(policy.model_dump_json())
            return
        check_api()
        if not os.environ.get("PREFECT_API_URL"):
            err.print("[yellow]PREFECT_API_URL is not set: serving against a temporary server that ends with this "
                      "process. Start one with `prefect server start` and export PREFECT_API_URL.[/]")
        err.print(f"serving terazi-evaluate/ad-hoc and terazi-nightly/nightly (cron '{cron}', {timezone}); Ctrl-C stops")
        err.print(f"policy: remote code {'allowed' if policy.allow_remote_code else 'refused'}; models: "
                  f"{', '.join(policy.models)}; data roots: {', '.join(policy.data_roots)}; results in "
                  f"{policy.results_root}; cache in {policy.cache_root}; task-runner addresses: "
                  f"{', '.join(policy.task_runner_addresses) or 'none'}; shared score stores: "
                  f"{', '.join(policy.score_stores) or 'none'}; limits: {policy.limits.model_dump()}", highlight=False)
        with shutdown.graceful():  # SIGTERM and Ctrl-C end it within seconds, whether or not its server is alive
            serve_all(cfg, policy, cron, timezone, limit)
