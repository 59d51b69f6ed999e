"""The results folder's life, written once for every flow: held by this run alone, started and marked incomplete,
marked stopped (with the signal or the error) whichever way the run ends early, the manifest written last, then the
artifacts published.

Publishing comes after the results are complete, so a failed upload fails the run without making its (usable)
results folder look stopped; and it happens in the flow itself, so the artifacts belong to the run the user opens.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from prefect.artifacts import create_markdown_artifact, create_table_artifact
from pydantic import BaseModel

from terazi.base import shutdown
from terazi.base.paths import disk_full
from terazi.flows.runtime import current_flow_run_id
from terazi.present.artifacts import Artifact, artifacts
from terazi.present.card import build_card
from terazi.results import run_folder
from terazi.schemas import RunManifest
from terazi.schemas.layout import RunLayout
from terazi.store.bootstraps import BootstrapStore, opened
from terazi.version import __version__

Post = Callable[[list[Artifact], str], None]


def post_artifacts(items: list[Artifact], prefix: str) -> None:
    """Artifacts on this flow run, keys starting with `prefix` (a run's, a leakage check's)."""
    for a in items:
        if a.markdown is not None:
            create_markdown_artifact(markdown=a.markdown, key=f"{prefix}-{a.key}", description=a.description)
        else:
            create_table_artifact(table=a.table, key=f"{prefix}-{a.key}", description=a.description)


@dataclass
class OpenRun:
    """A run whose folder is open: where it writes, and the manifest it ends with."""

    path: Path
    kind: str
    started: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    clock: float = field(default_factory=time.perf_counter)
    manifest: RunManifest | None = None

    def finish(self, config: BaseModel, **parts) -> RunManifest:
        """The manifest of the completed run (what it measured: `parts`), written when the `with` block ends."""
        self.manifest = RunManifest(
            terazi_version=__version__,
            run_dir=str(self.path),
            kind=self.kind,
            flow_run_id=current_flow_run_id(),
            started=self.started,
            seconds=round(time.perf_counter() - self.clock, 2),
            config=json.loads(config.model_dump_json()),
            **parts,
        )
        return self.manifest


@contextmanager
def results_folder(
    out_dir: str,
    run_name: str | None,
    kind: str,
    artifact_prefix: str,
    cache_dir: str | None = None,
    post: Post = post_artifacts,
) -> Iterator[OpenRun]:
    """The run's folder, held for the block, its artifacts then given to `post`; a full disk under it or under
    `cache_dir` ends the run with the `DiskFullError` that names which (a TeraziError: one line, never retried, never
    a Prefect state)."""
    with run_folder.held(out_dir, run_name, kind, current_flow_run_id()) as path:  # one run per folder
        run = OpenRun(path, kind)
        try:
            with shutdown.relayed():  # SIGTERM stops the stages' worker threads too, not only Prefect's main thread
                yield run
            if run.manifest is None:
                raise RuntimeError("the run ended without its manifest")
            run_folder.finish(run.path, run.manifest.model_dump_json(indent=2))
        except BaseException as e:
            full = disk_full(
                e,
                {
                    "results folder": (run.path, "--out"),
                    **({"cache folder": (Path(cache_dir), "--cache")} if cache_dir else {}),
                },
            )
            error = str(full or f"{type(e).__name__}: {e}".removesuffix(": "))
            signum = getattr(e, "signal", None) or shutdown.stopped_by()  # Prefect's TerminationSignal names it
            if not signum:
                reason = error
            elif hasattr(e, "signal") or isinstance(e, KeyboardInterrupt):
                reason = f"stopped by signal {signum}"
            else:  # the stop surfaced as whatever the signal interrupted (seen: Prefect's "Task run is not set")
                reason = f"stopped by signal {signum} ({error})"
            run_folder.mark_stopped(run.path, reason)
            if full:
                raise full from e
            raise
    with opened(cache_dir) as known:  # the card's intervals are the statistics' own: found, not drawn again
        publish(run.path, artifact_prefix, known, post)


def publish(run_dir: Path, prefix: str, known: BootstrapStore | None = None, post: Post = post_artifacts) -> None:
    """The results folder's artifacts (terazi.present.artifacts), keys starting with `prefix`, and the model card of
    the featured system (`terazi card`), in the run's labels (its intervals found in `known` when computed before,
    terazi.store.bootstraps), given to `post` (by default, on this flow run)."""
    items = artifacts(run_dir)
    layout = RunLayout(run_dir)
    if layout.is_complete():  # the card reads the manifest
        featured = json.loads(layout.tables_json.read_text(encoding="utf-8"))["featured"]["system"]
        card = build_card(run_dir, featured, known=known)
        items.append(
            Artifact(
                "card",
                f"model card evaluation section of {featured} (terazi card), with its Hugging Face model-index",
                markdown=card.markdown() + "\n```yaml\n" + card.model_index_yaml() + "\n```\n",
            )
        )
    post(items, prefix)
