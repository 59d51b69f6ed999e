"""The depth sweep as people read it: a table per reranker and depth (headline and interval, Δ to the deepest
depth, pairs and model seconds per query, % of the ceiling, the enough depth), the first stage's ceiling, one
sentence per reranker (the report plots them: terazi.present.report.plot_depths). Built from `Aggregates.depths`
and `.ceiling` (terazi.analysis.depths)."""

from __future__ import annotations

import polars as pl

from terazi.present.labels import ci_label, interval, percent, score, signed
from terazi.present.table import Table


def seconds_text(v: float | None) -> str:
    return "–" if v is None else f"{v * 1000:.3g} ms"


def depth_display(depths: pl.DataFrame, headline: str, labels: str, confidence: float) -> Table:
    """Per reranker and depth, every figure of depths.csv; the enough depth in bold."""
    ci = ci_label(labels, confidence)
    rows, bold = [], set()
    for i, r in enumerate(depths.iter_rows(named=True)):
        rows.append(
            [
                r["system"],
                str(r["depth"]),
                score(r["mean"]),
                interval(r["ci_low"], r["ci_high"]),
                signed(r["delta_deepest"]),
                interval(r["delta_low"], r["delta_high"], signed),
                r["verdict"],
                f"{r['pairs_per_query']:.1f}",
                seconds_text(r["seconds_per_query"]),
                percent(r["share_of_ceiling"], labels),
                "✓" if r["enough"] else "",
            ]
        )
        if r["enough"]:
            bold.add((i, 1))
    return Table(
        [
            "System",
            "Depth",
            headline,
            ci,
            "Δ deepest",
            f"Δ {ci}",
            "vs deepest",
            "Pairs/query",
            "Model s/query",
            "% of ceiling",
            "Enough",
        ],
        rows,
        [
            f"Each depth d: the top d first-stage candidates of the clean queries rescored, the rest kept in "
            f"first-stage order, all from the scores of the deepest depth (scored once). Δ deepest: paired "
            f"difference to the deepest depth ({ci}, paired bootstrap balanced by dataset). Enough: the "
            "smallest depth not significantly below the deepest. Model s/query: pairs per query over the "
            "row's warm pairs per second (measured). % of ceiling: the headline over the oracle's at that "
            "depth (the top d candidates in their ideal order, the rest in first-stage order)."
        ],
        align=["left", *["right"] * 6, "left", "right", "right", "right", "left"],
        bold=bold,
    )


def ceiling_display(ceiling: pl.DataFrame, headline: str, labels: str, confidence: float) -> Table:
    ci = ci_label(labels, confidence)
    rows = [
        [
            r["first_stage"],
            str(r["depth"]),
            score(r["recall"]),
            interval(r["recall_low"], r["recall_high"]),
            score(r["oracle"]),
            interval(r["oracle_low"], r["oracle_high"]),
        ]
        for r in ceiling.iter_rows(named=True)
    ]
    return Table(
        ["First stage", "Depth", "Recall@depth", ci, f"Oracle {headline}", ci],
        rows,
        [
            f"Clean queries, dataset-balanced. Recall@depth: share of the relevant documents among the top-depth "
            f"candidates. Oracle {headline}: those candidates in their ideal order (grade descending), the rest in "
            "first-stage order: the most a reranker at that depth can reach."
        ],
        align=["left", *["right"] * 5],
    )


def enough_sentences(depths: pl.DataFrame, headline: str) -> list[str]:
    """One line per reranker: its enough depth, what it keeps of the deepest depth's headline, at what share of the
    pairs."""
    out = []
    for (system,), part in depths.group_by("system", maintain_order=True):
        deepest, enough = part.row(-1, named=True), part.filter(pl.col("enough")).row(0, named=True)
        if enough["depth"] == deepest["depth"]:
            out.append(
                f"{system}: every shallower depth is significantly below depth {deepest['depth']} "
                f"({headline} {score(deepest['mean'])}, {percent(deepest['share_of_ceiling'])} of its ceiling)."
            )
            continue
        share = enough["pairs_per_query"] / deepest["pairs_per_query"] if deepest["pairs_per_query"] else None
        out.append(
            f"{system}: depth {enough['depth']} is enough: {headline} {score(enough['mean'])} vs "
            f"{score(deepest['mean'])} at depth {deepest['depth']} (Δ {signed(enough['delta_deepest'])} "
            f"{interval(enough['delta_low'], enough['delta_high'], signed)}, not significantly below) with "
            f"{percent(share)} of the pairs; {percent(enough['share_of_ceiling'])} of its ceiling."
        )
    return out


def depth_tables(
    depths: pl.DataFrame | None, ceiling: pl.DataFrame | None, headline: str, labels: str, confidence: float
) -> dict | None:
    """tables.json's `depths` entry (None without a sweep)."""
    if depths is None or ceiling is None:
        return None
    return {
        "table": depth_display(depths, headline, labels, confidence).to_json(),
        "ceiling": ceiling_display(ceiling, headline, labels, confidence).to_json(),
        "sentences": enough_sentences(depths, headline),
    }
