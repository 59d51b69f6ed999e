"""The nightly flow: tonight's evaluation, compared with the previous completed nightly of the same benchmark.

The ad-hoc deployment serves `flows.evaluate.evaluate` itself. Both run the evaluation inside their
own flow run, so its tasks, logs and artifacts are on the run the user opens.
"""

from __future__ import annotations

import logging
from pathlib import Path

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from terazi.flows.evaluate import artifact_prefix, evaluation
from terazi.schemas import EvalConfig
from terazi.analysis.changes import compare_runs, previous_nightly
from terazi.policy import enforce_if_served

log = logging.getLogger("terazi.nightly")


@flow(name="terazi-nightly", validate_parameters=True)
def nightly(config: EvalConfig) -> str:
    """Tonight's evaluation in a new time-stamped folder, and what changed since the last nightly."""
    config = enforce_if_served(config).model_copy(update={"run_name": None})
    manifest = evaluation(config, "nightly")
    current = Path(manifest.run_dir)
    before = previous_nightly(current.parent, manifest)
    if before is None:
        text = (f"# terazi: first nightly run of benchmark `{config.benchmark}`\n\n"
                f"No earlier completed nightly of this benchmark under {current.parent} to compare with.\n")
    else:
        log.info("comparing with the previous nightly %s", before)
        text = compare_runs(before, current, config.headline, config.bootstrap_resamples, config.seed,
                            config.confidence, config.holm)
    (current / "changes.md").write_text(text)
    create_markdown_artifact(markdown=text, key=f"{artifact_prefix(config, 'nightly')}-changes",
                             description="what changed since the previous nightly of this benchmark")
    return text
