"""The results folder of one run, every file named once: what the stages write and every reader (the CLI, the
report, `terazi compare`, the nightly, the card) reads.

    manifest.json            written last: its presence (and no `.terazi-incomplete`) means the run completed
    leaderboard.csv/.md      the leaderboard (full precision / as people read it), tables.json (every display table)
    per_query.parquet        one row per (dataset, system, condition, query, measure)
    scores.csv conditions.csv retention.csv retention_datasets.csv robustness.csv comparisons.csv datasets.csv
    ranks.csv costs.csv variants.csv report.html changes.md (nightly)
    depths.csv ceiling.csv                      with `rerank_depths`: the depth sweep and the first stage's ceiling
    first-stages/<name>/                        with several `first_stages`: each but the first one's results folder
    protocol.csv protocol.md                    …and whether the rerankers' order holds across them
    variants/<dataset>/<condition>.parquet      the query variants
    isolated/<dataset>/…                        the isolated setting's candidates and variants
    rankings/<dataset>/<system>.parquet         every system's rankings, all conditions
    per_query/<dataset>/<system>.parquet        their per-query values
    per_sample/<dataset>/<system>.parquet       each sample's values, where a condition has several samples
    sweep/<dataset>/<system>.parquet            a depth sweep's scores: the clean candidates a reranker rescored
    depths/<dataset>/<system>.parquet           its per-query headline at each depth
    ceiling/<dataset>.parquet                   the first stage's per-query recall@depth and oracle at each depth
    candidates/<dataset>/*.trec                 the frozen first stage (linked from the cache)
    runs/ qrels/ changed/ datasets.yaml         the results as a runs folder (terazi.data.runfolder)
    mteb/results/<system>/<revision>/<dataset>.json   the clean results as MTEB result files (terazi.results.as_mteb)

Every path is inside the folder (`terazi.base.paths.inside`): names come from configs and forms.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from terazi.base.errors import IncompleteRunError
from terazi.base.paths import inside


def _alive(marker: dict) -> bool:
    """Whether the process a marker names still runs (on another machine: assumed so)."""
    pid = marker.get("pid")
    if marker.get("host") != socket.gethostname():
        return True
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        pass
    return True


class RunLayout:
    """The files of the results folder `root` (which need not exist yet)."""

    MARKER = ".terazi-incomplete"
    MANIFEST = "manifest.json"

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def is_complete(self) -> bool:
        """The run finished: its manifest is written and its incomplete-marker gone."""
        return (self.root / self.MANIFEST).is_file() and not (self.root / self.MARKER).exists()

    def marker_body(self) -> dict:
        """What the incomplete-marker says (status, reason, pid, host, started); {} without a readable one."""
        try:
            body = json.loads((self.root / self.MARKER).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return body if isinstance(body, dict) else {}

    def refuse_unfinished(self) -> None:
        """Every reader's check: a folder still marked incomplete is not a result, whatever older files it holds (a
        rerun that stopped keeps the previous run's tables); the error says whether its run stopped and why, or is
        still writing it."""
        if not (self.root / self.MARKER).exists():
            return
        body, todo = self.marker_body(), "run it again to complete it"
        status = body.get("status")
        if status == "stopped":
            why = f"its run stopped ({body.get('reason') or 'no reason recorded'})"
        elif status == "running" and _alive(body):
            who = f"pid {body.get('pid')} on {body.get('host')}, started {body.get('started')}"
            why = f"a run is still writing it ({who})"
            todo = "wait for it to finish"
        elif status == "running":
            why = f"its run was interrupted (its process, pid {body.get('pid')}, is gone)"
        else:
            why = f"it is marked incomplete ({self.MARKER})"
        raise IncompleteRunError(f"{self.root}: not a complete result: {why}; {todo}")

    def file(self, name: str) -> Path:
        return inside(self.root, name)

    # the run's own files
    @property
    def manifest(self) -> Path:
        return self.file(self.MANIFEST)

    @property
    def marker(self) -> Path:
        return self.file(self.MARKER)

    @property
    def leaderboard_csv(self) -> Path:
        return self.file("leaderboard.csv")

    @property
    def leaderboard_md(self) -> Path:
        return self.file("leaderboard.md")

    @property
    def tables_json(self) -> Path:
        return self.file("tables.json")

    @property
    def per_query(self) -> Path:
        return self.file("per_query.parquet")

    @property
    def scores_csv(self) -> Path:
        return self.file("scores.csv")

    @property
    def conditions_csv(self) -> Path:
        return self.file("conditions.csv")

    @property
    def retention_csv(self) -> Path:
        return self.file("retention.csv")

    @property
    def retention_datasets_csv(self) -> Path:
        return self.file("retention_datasets.csv")

    @property
    def robustness_csv(self) -> Path:
        return self.file("robustness.csv")

    @property
    def comparisons_csv(self) -> Path:
        return self.file("comparisons.csv")

    @property
    def datasets_csv(self) -> Path:
        """Per dataset: queries, those with no relevant document, the minimum detectable effect."""
        return self.file("datasets.csv")

    @property
    def ranks_csv(self) -> Path:
        return self.file("ranks.csv")

    @property
    def costs_csv(self) -> Path:
        return self.file("costs.csv")

    @property
    def variants_csv(self) -> Path:
        return self.file("variants.csv")

    @property
    def leak_free_csv(self) -> Path:
        """Only with `leakage`: every headline without the queries a leakage check lists, beside the full one."""
        return self.file("leak_free.csv")

    @property
    def depths_csv(self) -> Path:
        """Only with `rerank_depths`: each reranker's headline, cost and share of the ceiling at each depth."""
        return self.file("depths.csv")

    @property
    def ceiling_csv(self) -> Path:
        """Only with `rerank_depths`: the first stage's recall@depth and oracle headline at each depth."""
        return self.file("ceiling.csv")

    @property
    def report_html(self) -> Path:
        return self.file("report.html")

    @property
    def changes_md(self) -> Path:
        return self.file("changes.md")

    @property
    def datasets_yaml(self) -> Path:
        return self.file("datasets.yaml")

    # per dataset
    def variants(self, dataset: str, condition: str) -> Path:
        return inside(self.root, "variants", dataset, f"{condition}.parquet")

    def isolated_candidates(self, dataset: str) -> Path:
        return inside(self.root, "isolated", dataset, "candidates.parquet")

    def isolated_variants(self, dataset: str, condition: str) -> Path:
        return inside(self.root, "isolated", dataset, f"{condition}.parquet")

    def ranking(self, dataset: str, system: str) -> Path:
        return inside(self.root, "rankings", dataset, f"{system}.parquet")

    def per_query_part(self, dataset: str, system: str) -> Path:
        return inside(self.root, "per_query", dataset, f"{system}.parquet")

    def per_sample_part(self, dataset: str, system: str) -> Path:
        return inside(self.root, "per_sample", dataset, f"{system}.parquet")

    def sweep_scores(self, dataset: str, system: str) -> Path:
        return inside(self.root, "sweep", dataset, f"{system}.parquet")

    def depths_part(self, dataset: str, system: str) -> Path:
        return inside(self.root, "depths", dataset, f"{system}.parquet")

    def ceiling_part(self, dataset: str) -> Path:
        return inside(self.root, "ceiling", f"{dataset}.parquet")

    def first_stage_roots(self, names: list[str]) -> dict[str, Path]:
        """Where each first stage's results go: the first one's in this folder, each other's in first-stages/<name>/
        (a results folder of its own)."""
        return {n: self.root if i == 0 else inside(self.root, "first-stages", n) for i, n in enumerate(names)}

    @property
    def protocol_csv(self) -> Path:
        """With several first stages: Kendall's τ between the rerankers' orders per pair of first stages."""
        return self.file("protocol.csv")

    @property
    def protocol_md(self) -> Path:
        return self.file("protocol.md")

    def candidates(self, dataset: str) -> Path:
        return inside(self.root, "candidates", dataset)

    def qrels(self, dataset: str) -> Path:
        return inside(self.root, "qrels", f"{dataset}.tsv")

    def changed(self, dataset: str, condition: str) -> Path:
        return inside(self.root, "changed", dataset, f"{condition}.txt")

    def run_file(self, dataset: str, condition: str, system: str, sample: int, samples: int) -> Path:
        """One system's ranking of one (condition, sample) as a TREC file; a sample folder only when several."""
        parts = [dataset, condition] + ([f"sample-{sample}"] if samples > 1 else []) + [f"{system}.trec"]
        return inside(self.root, "runs", *parts)

    @property
    def runs(self) -> Path:
        return self.file("runs")

    def mteb_result(self, system: str, revision: str, task: str) -> Path:
        """One system's result on one dataset as MTEB writes it, in a folder that `mteb.ResultCache` opens as its
        cache: `mteb/results/<model>/<revision>/<task>.json`."""
        return inside(self.root, "mteb", "results", system, revision, f"{task}.json")


class LeakageLayout:
    """The output folder of `terazi leakage` (terazi.leakage.output writes it; an evaluation's `leakage` reads
    it):

    summary.json report.md report.html train_hits.txt
    <dataset>/queries.txt passages.txt relevant_hit.txt train_hits.txt repeats.tsv
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)

    @property
    def summary_json(self) -> Path:
        return inside(self.root, "summary.json")

    @property
    def report_md(self) -> Path:
        return inside(self.root, "report.md")

    @property
    def report_html(self) -> Path:
        return inside(self.root, "report.html")

    @property
    def train_hits(self) -> Path:
        return inside(self.root, "train_hits.txt")

    def dataset(self, folder: str) -> Path:
        return inside(self.root, folder)

    def queries(self, folder: str) -> Path:
        """Contaminated queries: n-gram hits and repeats."""
        return inside(self.root, folder, "queries.txt")

    def passages(self, folder: str) -> Path:
        return inside(self.root, folder, "passages.txt")

    def relevant_hit(self, folder: str) -> Path:
        """Judged queries with a relevant passage among the passages hit."""
        return inside(self.root, folder, "relevant_hit.txt")

    def dataset_train_hits(self, folder: str) -> Path:
        return inside(self.root, folder, "train_hits.txt")

    def repeats(self, folder: str) -> Path:
        return inside(self.root, folder, "repeats.tsv")
