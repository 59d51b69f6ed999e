"""How a recipe runs its steps: one `Steps` for every task call of flows/evaluate.py and flows/analyze.py, so each
recipe is written once and run two ways. The flows give `PREFECT`: each step a Prefect task run (now, on the flow's
threads, or on the model runner) and the results' artifacts posted on the flow run. A test gives steps that call
each task's own function in its process and post nothing (tests/stages.py), so what it checks is the recipe a run
executes, whole, without a Prefect server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from typing import Any

from terazi.flows.lifecycle import Post, post_artifacts
from terazi.flows.runners import Submit, model_runner
from terazi.schemas import EvalConfig


def _closed(task, **_) -> Any:
    raise RuntimeError(f"{task.name}: a model task runs inside `steps.models(config)`, where the model runner is open")


@dataclass(frozen=True)
class Steps:
    """`run(task, *args)` runs a task now, in the recipe's thread (its result); `spawn(task, *args)` on the flow's
    threads and `model(task, **parameters)` on the model runner (a future each, whose `.result()` is the task's;
    a future passed to another step is passed as its result). `models(config)` opens the model runner the config
    asks for (`model_runner`) for a block. `post(artifacts, prefix)` publishes a finished run's artifacts."""

    run: Callable[..., Any]
    spawn: Callable[..., Any]
    model_runner: Callable[[EvalConfig], AbstractContextManager[Submit]]
    post: Post
    model: Submit = _closed

    @contextmanager
    def models(self, config: EvalConfig) -> Iterator[Steps]:
        """These steps with `model` on the model runner `config` asks for, open for the block."""
        with self.model_runner(config) as submit:
            yield replace(self, model=submit)


PREFECT = Steps(
    run=lambda task, *args, **kwargs: task(*args, **kwargs),
    spawn=lambda task, *args, **kwargs: task.submit(*args, **kwargs),
    model_runner=model_runner,
    post=post_artifacts,
)
