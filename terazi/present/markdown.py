"""leaderboard.md: the run's tables (tables.json) as one markdown page, with the benchmark's identity, the first
stage and the metric contract."""

from __future__ import annotations

import polars as pl

from terazi.present.labels import condition_label
from terazi.present.setup_tables import conditions_table
from terazi.present.table import Table
from terazi.schemas import BenchmarkIdentity, CandidateSet


def leaderboard_markdown(
    tables: dict, conditions: pl.DataFrame, contract: dict, candidates: list[CandidateSet], identity: BenchmarkIdentity
) -> str:
    """The page: leaderboard, per dataset, where the loss comes from, significant cells, judged variants, cost,
    rerank depth, datasets, systems, conditions with examples, first stage, metric contract."""
    T = Table.from_json
    featured = tables["featured"]
    lines = [
        f"# terazi leaderboard: {tables['headline']}",
        "",
        f"Benchmark `{identity.name}`, fingerprint `{identity.fingerprint}` ("
        + (
            "hash of every dataset's frozen candidates)."
            if candidates
            else "hash of the judgments and the changed queries; the systems are TREC runs made elsewhere)."
        ),
        "",
        T(tables["leaderboard"]).markdown(),
        "",
        "## Rank intervals",
        "",
        T(tables["ranks"]).markdown(),
        "",
        f"## Per dataset ({condition_label('clean', tables['labels'])})",
        "",
        T(tables["per_dataset"]).markdown(),
        "",
        *(
            ["## Without the queries found in training data", "", T(tables["leak_free"]).markdown(), ""]
            if tables.get("leak_free")
            else []
        ),
        "## Where the loss comes from",
        "",
        T(tables["robustness_table"]).markdown(),
        "",
    ]
    lines += [f"- {e}" for e in tables["explanations"]] + ([""] if tables["explanations"] else [])
    lines += [f"## Significant cells: {featured['system']}", ""] + [f"- {x}" for x in featured["lines"]]
    if tables.get("variants"):
        lines += ["", "## Judged variants", ""] + [f"- {x}" for x in tables["variants"]["sentences"]]
        lines += ["", T(tables["variants"]["table"]).markdown()]
    if tables.get("costs"):
        lines += ["", "## Cost", "", T(tables["costs"]).markdown()]
    if tables.get("depths"):
        lines += ["", "## Rerank depth and the ceiling", ""] + [f"- {x}" for x in tables["depths"]["sentences"]]
        lines += ["", T(tables["depths"]["table"]).markdown(), "", T(tables["depths"]["ceiling"]).markdown()]
    lines += [
        "",
        "## Datasets",
        "",
        T(tables["datasets"]).markdown(),
        "",
        "What each dataset can detect:",
        "",
        T(tables["detectable"]).markdown(),
        "",
        "## Systems",
        "",
        T(tables["systems"]).markdown(),
        "",
        "## Conditions",
        "",
        conditions_table(conditions, tables["labels"]).markdown(),
    ]
    lines += ["", "Examples, before and after:", "", T(tables["examples"]).markdown()]
    lines += ["", "## First stage", ""]
    lines += [
        f"- {c.dataset}: candidates `{c.fingerprint}` ({c.encoder}, {c.index.get('type')}, depth {c.depth}); "
        f"recall@{c.depth} " + ", ".join(f"{k} {v:.3f}" for k, v in c.recall.items())
        for c in candidates
    ]
    lines += ["", "## Metric contract", ""] + [f"- {k}: {v}" for k, v in contract.items()]
    return "\n".join(lines) + "\n"
