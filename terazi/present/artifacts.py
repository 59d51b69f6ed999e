"""What a run publishes as Prefect artifacts, read from its results folder: the leaderboard as the outputs show it
(order, labels, `*` marks), the robustness decomposition, per-dataset scores, costs, judged variants, the depth
sweep, the pairwise counts, and the markdown report saying where report.html is. The flow hands these to Prefect
(flows/lifecycle.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from terazi.analysis.intervals import PAIRS_SCHEMA, pairwise_summary
from terazi.present.table import Table
from terazi.schemas.layout import RunLayout


@dataclass(frozen=True)
class Artifact:
    key: str  # after the run's prefix (the benchmark), e.g. "leaderboard"
    description: str
    table: list[dict] | None = None  # a table artifact's rows
    markdown: str | None = None  # or a markdown artifact's text


def artifacts(run_dir: str | Path) -> list[Artifact]:
    layout = RunLayout(run_dir)
    run = layout.root
    tables = json.loads(layout.tables_json.read_text(encoding="utf-8"))
    # the terminal's compact form (each condition's score and retention in one cell): the wide one does not fit
    # Prefect's table on a 1920-pixel screen
    board = Table.from_json(tables.get("leaderboard_compact") or tables["leaderboard"])
    robust = Table.from_json(tables["robustness_table"])
    per_ds = Table.from_json(tables["per_dataset"])
    ranks = Table.from_json(tables["ranks"])
    out = [
        Artifact("leaderboard", f"terazi leaderboard ({run}). " + " ".join(board.notes), board.dicts()),
        Artifact(
            "retention",
            "retention per system and condition, end to end, reranker only and first-stage recall. "
            + " ".join(robust.notes),
            robust.dicts(),
        ),
        Artifact(
            "ranks",
            "rank of each system by Mean (Task) and by Borda count, with its interval and P(rank 1) "
            "over the same bootstrap resamples as the intervals. " + " ".join(ranks.notes),
            ranks.dicts(),
        ),
        Artifact(
            "per-dataset",
            "headline per system and dataset on clean queries; last row: queries (without a "
            "relevant document). " + " ".join(per_ds.notes),
            per_ds.dicts(),
        ),
    ]
    if tables.get("leak_free"):
        deco = Table.from_json(tables["leak_free"])
        out.append(
            Artifact(
                "leak-free",
                "headline without the queries found in training data. " + " ".join(deco.notes),
                deco.dicts(),
            )
        )
    if tables.get("costs"):
        costs = Table.from_json(tables["costs"])
        out.append(
            Artifact("costs", "size, warm speed and latency per system. " + " ".join(costs.notes), costs.dicts())
        )
    if tables.get("depths"):
        depths, ceiling = Table.from_json(tables["depths"]["table"]), Table.from_json(tables["depths"]["ceiling"])
        out.append(
            Artifact(
                "depths",
                "headline, cost and share of the ceiling per reranker and rerank depth. "
                + " ".join(tables["depths"]["sentences"] + depths.notes),
                depths.dicts(),
            )
        )
        out.append(
            Artifact(
                "ceiling",
                "the first stage's recall@depth and oracle headline per depth. " + " ".join(ceiling.notes),
                ceiling.dicts(),
            )
        )
    if tables.get("variants"):
        judged = Table.from_json(tables["variants"]["table"])
        out.append(Artifact("variants", " ".join(tables["variants"]["sentences"] + judged.notes), judged.dicts()))
    if layout.protocol_md.is_file():
        out.append(
            Artifact(
                "protocol",
                "several first stages: does the rerankers' order hold?",
                markdown=layout.protocol_md.read_text(encoding="utf-8"),
            )
        )
    pairs = pairwise_summary(pl.read_csv(layout.comparisons_csv, schema=PAIRS_SCHEMA))
    out.append(Artifact("comparisons", "pairwise comparisons: cells better / no difference / worse", pairs.to_dicts()))
    report_md = layout.leaderboard_md.read_text(encoding="utf-8") + (
        f"\n## Files\n\n- full report: `{layout.report_html}` (open it in a browser)\n- results folder: `{run}`\n"
    )
    out.append(
        Artifact("report", "leaderboard, conditions, metric contract and where report.html is", markdown=report_md)
    )
    return out
