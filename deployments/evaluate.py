"""Deployments of terazi's flows: ad-hoc (parameters from the UI or CLI) and nightly (cron).

`terazi serve` serves both from one process, without any work pool or infrastructure, as
`terazi-evaluate/ad-hoc` and `terazi-nightly/nightly`. `prefect.yaml` at the repository root declares
work-pool deployments under other names (`ad-hoc-pool`, `nightly-pool`), so neither route can
overwrite the other's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from prefect.runner import Runner
from prefect.schedules import Cron

from terazi.base import shutdown
from terazi.base.paths import within
from terazi.config.config_files import demo_config, read_config_file
from terazi.config.policy import ServicePolicy, absolute, absolute_dataset
from terazi.flows.evaluate import evaluate
from terazi.flows.nightly import nightly
from terazi.schemas import EvalConfig


def load_config(path: str | Path | None) -> EvalConfig:
    """A config file (YAML, JSON or TOML), or the bundled demo benchmark."""
    raw = read_config_file(Path(path)) if path else demo_config()
    return EvalConfig.model_validate(raw)


def form_defaults(config: EvalConfig, policy: ServicePolicy | None = None) -> dict:
    """The config as the form's defaults, with its folders made absolute (relative paths would depend on where a run
    happens to start) and always inside the policy's roots: a results or cache folder the config puts elsewhere
    (`terazi serve --results-root R`) becomes the root itself, so pressing Run with the defaults is never refused."""
    body = config.model_dump(mode="json")
    out, cache = absolute(config.out_dir), absolute(config.cache_dir)
    if policy is not None:
        out = out if within(out, policy.results_root) else Path(policy.results_root)
        cache = cache if within(cache, policy.cache_root) else Path(policy.cache_root)
    body["out_dir"], body["cache_dir"] = str(out), str(cache)
    for d in body["datasets"]:
        d["path"] = absolute_dataset(d["path"])
    return {"config": body}


def deployments(
    config: EvalConfig, policy: ServicePolicy, cron: str = "0 2 * * *", timezone: str = "Europe/Istanbul"
) -> list:
    """The ad-hoc deployment (defaults: `config` within `policy`) and the nightly one (on `cron` in `timezone`)."""
    params = form_defaults(config, policy)
    return [
        evaluate.to_deployment(
            name="ad-hoc",
            parameters=params,
            tags=["terazi"],
            description="Evaluate with any EvalConfig: Run › Custom run shows every parameter with "
            "its default and description.",
        ),
        nightly.to_deployment(
            name="nightly",
            parameters=params,
            tags=["terazi", "nightly"],
            schedule=Cron(cron, timezone=timezone),
            description="Nightly benchmark: publishes what changed since the previous nightly of the same benchmark.",
        ),
    ]


def serve_all(config: EvalConfig, policy: ServicePolicy, cron: str, timezone: str, limit: int | None = None) -> None:
    """Serve both deployments from this process until interrupted; runs inherit the policy.

    What `prefect.serve` does, with the runner's own SIGTERM handler relayed (terazi.base.shutdown): a stop request also
    arms the watchdog, since a runner whose Prefect server has gone keeps retrying the server and never ends."""
    policy.to_env()
    runner = Runner(limit=limit)
    for d in deployments(config, policy, cron, timezone):
        runner.add_deployment(d)
    runner.handle_sigterm = shutdown.relaying(runner.handle_sigterm)  # the runner installs it when it starts
    asyncio.run(runner.start())
