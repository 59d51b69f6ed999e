"""What a leakage check publishes as Prefect artifacts, read from its output folder (terazi.schemas.layout
LeakageLayout): the table of shares per dataset, and the markdown report saying where report.html and the id lists
are. The flow hands these to Prefect (flows/lifecycle.py)."""

from __future__ import annotations

import json
from pathlib import Path

from terazi.present.artifacts import Artifact
from terazi.present.labels import percent
from terazi.present.table import Table
from terazi.schemas.layout import LeakageLayout


def read_summary(out: str | Path) -> dict:
    """The summary a leakage check wrote into its output folder."""
    return json.loads(LeakageLayout(out).summary_json.read_text(encoding="utf-8"))


def shares_table(summary: dict) -> Table:
    """Per dataset: queries, n-gram hits, repeats, contaminated queries, passages hit, judged queries whose
    relevant passage is hit; each with its share (numbers aligned right on a terminal)."""
    cols = [
        "Dataset",
        "Queries",
        "N-gram hit",
        "Repeated (exact / near)",
        "Contaminated",
        "Passages",
        "Passages hit",
        "Relevant passage hit",
    ]
    rows = []
    for d in summary["datasets"]:
        s = d["shares"]
        rows.append(
            [
                d["name"],
                f"{d['queries']:,}",
                f"{d['query_hits']:,} ({percent(s['queries'])})",
                f"{d['exact_repeats']:,} / {d['near_repeats']:,}",
                f"{d['contaminated_queries']:,} ({percent(s['queries_contaminated'])})",
                f"{d['passages']:,}",
                f"{d['passage_hits']:,} ({percent(s['passages'])})",
                f"{d['relevant_hit_queries']:,} of {d['judged_queries']:,} ({percent(s['relevant_hit'])})",
            ]
        )
    o, n = summary["options"], summary["train_hits"]
    note = (
        f"{o['ngram']}-word sequences shared with training text; {n:,} training record{'' if n == 1 else 's'} to drop."
    )
    return Table(cols, rows, [note], ["left"] + ["right"] * (len(cols) - 1))


def leakage_artifacts(out: str | Path) -> list[Artifact]:
    layout, summary = LeakageLayout(out), read_summary(out)
    table = shares_table(summary)
    lists = ", ".join(f"`{layout.queries(d['folder'])}`" for d in summary["datasets"])
    report = layout.report_md.read_text(encoding="utf-8") + (
        f"\n## Files\n\n- full report: `{layout.report_html}` (open it in a browser)\n"
        f"- contaminated queries (leave them out with `exclude: {layout.root}`): {lists}\n"
        f"- training records to drop: `{layout.train_hits}`\n"
    )
    return [
        Artifact(
            "summary",
            "leakage per dataset: queries and passages sharing an n-gram with training text, "
            "repeated queries. " + " ".join(table.notes),
            table.dicts(),
        ),
        Artifact("report", "the leakage report, with examples, and where its files are", markdown=report),
    ]
