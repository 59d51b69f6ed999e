"""Where the model tasks run: one thread of the flow process, or a Dask or Ray cluster, with the worker resources
the config asks for. Plans, searches, rankings and everything else run on the flow's own threads."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext

from terazi.schemas import EvalConfig

Submit = Callable[..., object]


def make_task_runner(config: EvalConfig):
    """A Dask or Ray task runner for the model tasks, as the config asks."""
    if config.task_runner == "dask":
        from prefect_dask import DaskTaskRunner

        if config.task_runner_address:
            return DaskTaskRunner(address=config.task_runner_address)
        return DaskTaskRunner(
            cluster_kwargs={
                "n_workers": config.task_runner_workers,
                "threads_per_worker": 1,
                "processes": True,
                "resources": config.scale.worker_resources or None,
            }
        )
    from prefect_ray import RayTaskRunner

    return RayTaskRunner(address=config.task_runner_address) if config.task_runner_address else RayTaskRunner()


def ray_options(resources: dict[str, float]) -> dict:
    """Worker resources as Ray remote options: GPU and CPU counts, any other name a custom resource."""
    extra = {k: v for k, v in resources.items() if k not in ("GPU", "CPU")}
    return {
        **({"num_gpus": resources["GPU"]} if "GPU" in resources else {}),
        **({"num_cpus": resources["CPU"]} if "CPU" in resources else {}),
        **({"resources": extra} if extra else {}),
    }


def resource_context(kind: str, resources: dict[str, float]):
    """Where model tasks may run: Dask worker resources (`dask worker --resources GPU=1`) or Ray remote options."""
    if not resources:
        return nullcontext()
    if kind == "dask":
        import dask

        return dask.annotate(resources=resources)
    from prefect_ray.context import remote_options

    return remote_options(**ray_options(resources))


@contextmanager
def model_runner(config: EvalConfig) -> Iterator[Submit]:
    """`submit(task, **parameters)` for model tasks: one thread of the flow process, or a Dask/Ray cluster (on
    workers that have `config.scale.worker_resources`). On one machine the model tasks take turns on a single
    thread, as on a one-thread worker: the models use every core anyway, and the process holds one shard or
    chunk at a time instead of one per thread."""
    if config.task_runner == "thread":
        from prefect.task_runners import ThreadPoolTaskRunner

        with ThreadPoolTaskRunner(max_workers=1) as one:
            yield lambda task, **params: one.submit(task, parameters=params)
        return

    def submit(task, **params):
        with resource_context(config.task_runner, config.scale.worker_resources):
            return runner.submit(task, parameters=params)

    with make_task_runner(config) as runner:
        yield submit
