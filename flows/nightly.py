"""The nightly flow: tonight's evaluation, compared with the previous completed nightly of the same benchmark.

The ad-hoc deployment serves `terazi.flows.evaluate.evaluate` itself. Both run the evaluation inside their own flow
run, so its tasks, logs and artifacts are on the run the user opens.
"""

from __future__ import annotations

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from terazi.config.policy import enforce_if_served
from terazi.flows.evaluate import evaluation
from terazi.flows.runtime import artifact_prefix, refusals_as_failed
from terazi.present.changes import since_last_nightly
from terazi.schemas import EvalConfig
from terazi.schemas.layout import RunLayout


@flow(name="terazi-nightly", validate_parameters=True)
def nightly(config: EvalConfig) -> str:
    """Tonight's evaluation in a new time-stamped folder, and what changed since the last nightly."""
    return refusals_as_failed(lambda: tonight(config))


def tonight(config: EvalConfig) -> str:
    """The nightly's work: the served policy applied, the evaluation, what changed (published as an artifact)."""
    config = enforce_if_served(config).model_copy(update={"run_name": None})
    manifest = evaluation(config, "nightly")
    text = since_last_nightly(manifest, config)
    RunLayout(manifest.run_dir).changes_md.write_text(text)
    create_markdown_artifact(
        markdown=text,
        key=f"{artifact_prefix(config, 'nightly')}-changes",
        description="what changed since the previous nightly of this benchmark",
    )
    return text
