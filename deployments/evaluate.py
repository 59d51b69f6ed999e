"""Deployments of terazi's flows: ad-hoc (parameters from the UI or CLI) and nightly (cron).

`terazi serve` serves both from one process, without any work pool or infrastructure;
`prefect.yaml` at the repository root declares the same for `prefect deploy` with a process pool.
"""

from __future__ import annotations

from pathlib import Path

from prefect import serve
from prefect.schedules import Cron

from flows.service import nightly, run
from schemas import EvalConfig
from terazi.configs import demo_config, read_config_file


def load_config(path: str | Path | None) -> EvalConfig:
    """A config file (YAML, JSON or TOML), or the bundled demo benchmark."""
    raw = read_config_file(Path(path)) if path else demo_config()
    return EvalConfig.model_validate(raw)


def deployments(config: EvalConfig, cron: str = "0 2 * * *", timezone: str = "Europe/Istanbul",
                name_prefix: str = "") -> list:
    """The ad-hoc deployment (defaults: `config`) and the nightly one (on `cron` in `timezone`)."""
    params = {"config": config.model_dump(mode="json")}
    return [
        run.to_deployment(name=f"{name_prefix}ad-hoc", parameters=params, tags=["terazi"],
                          description="Evaluate with any EvalConfig; the form shows every parameter with its default."),
        nightly.to_deployment(name=f"{name_prefix}nightly", parameters=params, tags=["terazi", "nightly"],
                              schedule=Cron(cron, timezone=timezone),
                              description="Nightly benchmark; publishes what changed since the previous run."),
    ]


def serve_all(config: EvalConfig, cron: str, timezone: str, limit: int | None = None) -> None:
    """Serve both deployments from this process until interrupted."""
    serve(*deployments(config, cron, timezone), limit=limit)
