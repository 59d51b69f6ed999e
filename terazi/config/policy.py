"""What a served deployment may be asked to do: decided by whoever serves it, never by the form.

The Prefect server has no login by default, so anything the deployment form can carry, anyone who
reaches the UI can send. `terazi serve` therefore fixes a policy from its own options and the
served benchmark config, and passes it to its flow runs in `TERAZI_SERVICE_POLICY`:

- `trust_remote_code` (running a model repository's own Python) is refused unless the server was
  started with `--allow-remote-code`;
- models must come from the served config, the bundled encoder, an `--allow-model` pattern (hub
  ids such as `BAAI/*`) or an allowed local folder;
- datasets must lie inside a data root (a named one, hf:/mteb:/ir_datasets:, must be one the served config
  names); results and cache folders inside the server's roots;
- a Dask/Ray address and a shared score store must be the server's own;
- a reranker served over HTTP (a rerank API, or a listwise row's chat server) must be one the served config names,
  with the same address and key variable (else the form could send the corpus anywhere, with any of the server's
  environment variables as the "key"); a listwise row's own template file must be one the served config names
  (else the form could have any file of the server read);
- the work a run asks for stays within the server's limits (`terazi serve --max-resamples …`, `Limits`).

A run started from a deployment without any policy in its environment (e.g. a work-pool worker
that was not given one) gets the strictest policy: the bundled demo only.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from terazi.base.errors import PolicyError
from terazi.base.paths import within
from terazi.config.config_files import DEMO_DIR
from terazi.schemas import BUNDLED_ENCODER, EvalConfig, Limits
from terazi.schemas.listwise import LISTWISE_PROMPTS as BUILT_IN
from terazi.schemas.rerankers import served
from terazi.schemas.sources import parse as parse_source

ENV = "TERAZI_SERVICE_POLICY"
NO_LIMITS = "TERAZI_NO_LIMITS"  # `terazi run --no-limits`: a run of one's own, never a served one
_HUB_ID = re.compile(r"^[\w.-]+(/[\w.-]+)?$")


class ServicePolicy(BaseModel):
    """The serving side's rules for runs started from the deployment form."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow_remote_code: bool = Field(False, description="allow trust_remote_code: true from the form")
    models: list[str] = Field(default_factory=list, description="allowed hub ids (fnmatch patterns) and local folders")
    data_roots: list[str] = Field(default_factory=list, description="folders datasets must lie in")
    results_root: str = Field(description="folder results must be written in")
    cache_root: str = Field(description="folder the cache must be in")
    task_runner_addresses: list[str] = Field(default_factory=list, description="Dask/Ray addresses allowed")
    score_stores: list[str] = Field(default_factory=list, description="shared score stores allowed")
    endpoints: list[str] = Field(
        default_factory=list, description="rerank APIs and listwise chat servers allowed: `url key-variable`"
    )
    templates: list[str] = Field(default_factory=list, description="listwise prompt template files allowed")
    limits: Limits = Field(default_factory=Limits, description="the most work a run may ask for")

    @classmethod
    def for_service(
        cls,
        config: EvalConfig,
        allow_remote_code: bool = False,
        models: list[str] = (),
        data_roots: list[str] = (),
        results_root: str | None = None,
        cache_root: str | None = None,
        limits: Limits | None = None,
    ) -> ServicePolicy:
        """The policy of `terazi serve`: what its benchmark config uses, plus what its options allow."""
        here = Path.cwd()
        results = absolute(results_root or config.out_dir, here)
        read = {str(f) for f in (absolute(p, here) for p in read_folders(config)) if not within(f, results)}
        return cls(
            allow_remote_code=allow_remote_code,
            models=sorted({m for _, m, _, _ in config.models()} | set(models)),
            data_roots=sorted(
                {_root(d.path, here) for d in config.datasets} | {str(absolute(r, here)) for r in data_roots} | read
            ),
            results_root=str(results),
            cache_root=str(absolute(cache_root or config.cache_dir, here)),
            task_runner_addresses=[config.task_runner_address] if config.task_runner_address else [],
            score_stores=[config.scale.score_store] if config.scale.score_store else [],
            endpoints=sorted({endpoint(r) for r in config.rerankers if served(r)}),
            templates=sorted({r.prompt for r in config.rerankers if r.kind == "listwise" and r.prompt not in BUILT_IN}),
            limits=limits or Limits(),
        )

    def places(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """(what served runs write, the folders they may read) for `terazi.base.paths.disjoint`."""
        return (
            [("results root", self.results_root), ("cache root", self.cache_root)],
            [("data root", r) for r in self.data_roots if Path(r).is_absolute()],
        )

    def describe(self) -> str:
        """The policy in one line, as `terazi serve` prints it when it starts."""
        return (
            f"remote code {'allowed' if self.allow_remote_code else 'refused'}; models: {', '.join(self.models)}; "
            f"data roots: {', '.join(self.data_roots)}; results in {self.results_root}; cache in "
            f"{self.cache_root}; task-runner addresses: {', '.join(self.task_runner_addresses) or 'none'}; shared "
            f"score stores: {', '.join(self.score_stores) or 'none'}; limits: {self.limits.model_dump()}"
        )

    @classmethod
    def strictest(cls) -> ServicePolicy:
        here = Path.cwd()
        return cls(
            data_roots=[str(DEMO_DIR)], results_root=str(here / "results"), cache_root=str(here / ".terazi-cache")
        )

    @classmethod
    def from_env(cls) -> ServicePolicy:
        raw = os.environ.get(ENV)
        return cls.model_validate_json(raw) if raw else cls.strictest()

    def to_env(self) -> None:
        os.environ[ENV] = self.model_dump_json()

    def apply(self, config: EvalConfig) -> EvalConfig:
        """The config with its paths made absolute, or a PolicyError naming the field and the rule."""
        here = Path.cwd()
        for where, model, _, trust in config.models():
            if trust and not self.allow_remote_code:
                raise PolicyError(
                    f"{where}.trust_remote_code: refused by the service policy (the server was not "
                    "started with --allow-remote-code)"
                )
            if not self._model_allowed(model, here):
                raise PolicyError(
                    f"{where}.model {model!r}: not allowed by the service policy (allowed: the served "
                    "benchmark's models, the bundled encoder, and `terazi serve --allow-model` entries)"
                )
            if model not in self.models and _HUB_ID.match(model) and absolute(model, here).exists():
                raise PolicyError(
                    f"{where}.model {model!r}: a folder of that name exists where the server runs and "
                    "would be loaded instead of the hub model; refused by the service policy"
                )
        datasets = []
        for i, d in enumerate(config.datasets):
            update = {}
            source = parse_source(d.path)
            if source and not source.local:  # a named dataset: only those the served benchmark names
                if d.path not in self.data_roots:
                    raise PolicyError(
                        f"datasets.{i}.path {d.path!r}: a named dataset the served benchmark does not "
                        "use; the service policy allows only those"
                    )
            else:
                if not self._in_data_roots(dataset_folder(d.path, here)):
                    raise PolicyError(
                        f"datasets.{i}.path {d.path!r}: outside the service's data roots "
                        f"({', '.join(self.data_roots)}; add one with `terazi serve --data-root`)"
                    )
                update["path"] = absolute_dataset(d.path, here)
            if d.first_stage_runs:
                runs = absolute(d.first_stage_runs, here)
                if not self._in_data_roots(runs):
                    raise PolicyError(
                        f"datasets.{i}.first_stage_runs {d.first_stage_runs!r}: outside the service's data roots"
                    )
                update["first_stage_runs"] = str(runs)
            datasets.append(d.model_copy(update=update))
        leakage = config.leakage and str(absolute(config.leakage, here))
        if leakage and not (self._in_data_roots(Path(leakage)) or within(Path(leakage), Path(self.results_root))):
            raise PolicyError(f"leakage {config.leakage!r}: outside the service's data roots and results root")
        out, cache = absolute(config.out_dir, here), absolute(config.cache_dir, here)
        if not within(out, Path(self.results_root)):
            raise PolicyError(
                f"out_dir {config.out_dir!r}: outside the service's results root {self.results_root}; "
                "choose a folder inside it"
            )
        if not within(cache, Path(self.cache_root)):
            raise PolicyError(
                f"cache_dir {config.cache_dir!r}: outside the service's cache root {self.cache_root}; "
                "choose a folder inside it"
            )
        if config.task_runner_address and config.task_runner_address not in self.task_runner_addresses:
            raise PolicyError(f"task_runner_address {config.task_runner_address!r}: not the service's own cluster")
        if config.scale.score_store and config.scale.score_store not in self.score_stores:
            raise PolicyError(f"scale.score_store {config.scale.score_store!r}: not the service's own score store")
        for r in config.rerankers:
            if served(r) and endpoint(r) not in self.endpoints:
                raise PolicyError(
                    f"rerankers.{r.name}: {r.url} with key variable {r.api_key_env or '(none)'} is not a "
                    "rerank API of the served benchmark; the service policy allows only those"
                )
            if r.kind == "listwise" and r.prompt not in BUILT_IN and r.prompt not in self.templates:
                raise PolicyError(
                    f"rerankers.{r.name}.prompt {r.prompt!r}: not a template file of the served benchmark; the "
                    f"service policy allows {', '.join(BUILT_IN)} and those"
                )
        return config.model_copy(
            update={"datasets": datasets, "out_dir": str(out), "cache_dir": str(cache), "leakage": leakage or None}
        )

    def _in_data_roots(self, path: Path) -> bool:
        """Inside one of the folder roots (a named dataset's root is its name, never a folder)."""
        return any(within(path, Path(r)) for r in self.data_roots if Path(r).is_absolute())

    def _model_allowed(self, model: str, here: Path) -> bool:
        if model == BUNDLED_ENCODER or model in self.models:
            return True
        local = Path(model).expanduser()
        if local.is_absolute() or model.startswith("."):
            path = absolute(model, here)
            return any(within(path, absolute(m, here)) for m in self.models if Path(m).expanduser().is_absolute())
        if not _HUB_ID.match(model) or ".." in model.split("/"):  # a relative path, which would load a local folder
            return False
        return any(fnmatch.fnmatchcase(model, m) for m in self.models if not Path(m).expanduser().is_absolute())


def read_folders(config: EvalConfig) -> list[str]:
    """The folders besides datasets a config reads (first-stage runs, the leakage folder): the served benchmark's own
    are data roots (an leakage folder inside the results root needs none), so its defaults pass its own policy."""
    runs = [d.first_stage_runs for d in config.datasets if d.first_stage_runs]
    return runs + ([config.leakage] if config.leakage else [])


def endpoint(spec) -> str:
    """A rerank API as the policy names it: its address and the variable its key is read from."""
    return f"{spec.url} {spec.api_key_env or ''}".strip()


def absolute(path: str, here: Path | None = None) -> Path:
    """`path` resolved, relative to `here` (default: the folder terazi runs in) unless absolute."""
    p = Path(path).expanduser()
    return (p if p.is_absolute() else (here or Path.cwd()) / p).resolve()


def dataset_folder(path: str, here: Path | None = None) -> Path | None:
    """The absolute folder a dataset path reads (a BEIR folder, or hf:FOLDER), or None for a named dataset."""
    source = parse_source(path)
    if source and not source.local:
        return None
    return absolute(source.name if source else path, here)


def absolute_dataset(path: str, here: Path | None = None) -> str:
    """A dataset path that reads the same from any folder: its folder made absolute (keeping hf:'s @revision and
    #subset); a named dataset as it is written."""
    source, folder = parse_source(path), dataset_folder(path, here)
    if folder is None:
        return path
    if source is None:
        return str(folder)
    return (
        f"hf:{folder}"
        + (f"@{source.revision}" if source.revision else "")
        + (f"#{source.subset}" if source.subset else "")
    )


def _root(path: str, here: Path) -> str:
    """A data root for a dataset path: its absolute folder, or a named dataset as it is written."""
    folder = dataset_folder(path, here)
    return path if folder is None else str(folder)


def served_deployment() -> str | None:
    """The id of the deployment this flow run was started from; None for a run from the CLI, the Python API or a test
    (and outside a flow). Read from the run's own context where there is one: Prefect's `runtime.deployment.id` asks
    the API for the flow run whenever the run has no deployment (a round trip each call, and a run asks several
    times). PREFECT__RUNTIME__DEPLOYMENT__ID stands in for it, as it does for Prefect's."""
    if mocked := os.environ.get("PREFECT__RUNTIME__DEPLOYMENT__ID"):
        return mocked
    from prefect.context import FlowRunContext

    run = getattr(FlowRunContext.get(), "flow_run", None)
    if run is not None:
        return str(run.deployment_id) if run.deployment_id else None
    from prefect.runtime import deployment

    return deployment.id


def limits_in_force() -> tuple[Limits | None, str]:
    """The limits a run is held to (None: none), and how to allow more (`{flag}`: the limit's `terazi serve` option):
    a served run's are its server's; elsewhere the documented ones, unless `terazi run --no-limits` lifted them."""
    if served_deployment():
        return ServicePolicy.from_env().limits, "ask whoever serves it (set by `terazi serve --max-{flag}`)"
    if os.environ.get(NO_LIMITS) == "1":
        return None, ""
    return Limits(), f"allow more with `terazi run --no-limits` ({NO_LIMITS}=1 for the Python API)"


def enforce_if_served(config: EvalConfig) -> EvalConfig:
    """In a run started from a deployment, apply the serving side's policy; elsewhere the config as it is."""
    if not served_deployment():
        return config
    return ServicePolicy.from_env().apply(config)
