"""The protocol table of a run with several first stages: for each pair of first stages, Kendall's τ between the
rerankers' orders (clean headline, ranked datasets) with its bootstrap interval, the pairwise verdicts that flip,
and one sentence (protocol.csv, protocol.md); read from each first stage's results folder, as written. protocol.md
also counts the pairs the first stages share (scored once), from the run's manifest."""

from __future__ import annotations

import math
from itertools import combinations
from pathlib import Path

import numpy as np
import polars as pl

from terazi.analysis.intervals import PAIRS_SCHEMA
from terazi.analysis.protocol import flips, tau_interval
from terazi.analysis.summary import ranked_datasets
from terazi.present.labels import interval, score
from terazi.present.table import Table
from terazi.schemas import FIRST_STAGE, DatasetManifest, EvalConfig, SharedPairs
from terazi.schemas.layout import RunLayout
from terazi.schemas.tables import CLEAN


def _matrices(per_query: pl.DataFrame, systems: list[str], datasets: list[str]) -> dict[str, np.ndarray]:
    """{dataset: systems × queries} of the clean headline, queries in id order."""
    if not systems:
        return {}
    return {
        d: np.vstack(
            [
                per_query.filter((pl.col("dataset") == d) & (pl.col("system") == s))
                .sort("query_id")["value"]
                .to_numpy()
                for s in systems
            ]
        )
        for d in datasets
    }


def shared_table(shared: list[SharedPairs], stages: list[str]) -> Table:
    """Per dataset and model row: the pairs of each first stage, those they share and the pairs scored in all."""
    return Table(
        ["Dataset", "System", *[f"Pairs: {n}" for n in stages], "Shared", "Scored in all"],
        [[r.dataset, r.system, *[f"{r.pairs[n]:,}" for n in stages], f"{r.shared:,}", f"{r.unique:,}"] for r in shared],
        [
            "Distinct (query text, document) pairs each model row rescores on each first stage's candidates; "
            "Shared: held by two or more first stages, scored once (the score store is keyed by the pair); "
            "Scored in all: the union, what the row's scores cost."
        ],
    )


def retention_part(roots: dict[str, str]) -> list[str]:
    """protocol.md's retention section: each first stage's decomposition (robustness.csv: end to end, reranker
    only, first-stage recall) side by side, and per condition one sentence on how the first stages' recall held."""
    parts = [
        pl.read_csv(RunLayout(r).robustness_csv, infer_schema_length=None).with_columns(first_stage=pl.lit(n))
        for n, r in roots.items()
        if RunLayout(r).robustness_csv.is_file()
    ]
    if len(parts) < 2:
        return []
    frame = pl.concat(parts, how="diagonal_relaxed")

    def cell(r: dict, col: str) -> str:
        return (
            f"{score(r[col], 3)} {interval(r[f'{col}_low'], r[f'{col}_high'], lambda v: score(v, 3))}"
            if r[col] is not None
            else "–"
        )

    table = Table(
        ["First stage", "System", "Condition", "End to end", "Reranker only", "First-stage recall"],
        [
            [
                r["first_stage"],
                r["system"],
                r["condition"],
                cell(r, "end_to_end"),
                cell(r, "reranker_only"),
                cell(r, "first_stage_recall"),
            ]
            for r in frame.iter_rows(named=True)
        ],
        [
            "Each first stage's robustness.csv: corrupted over clean, end to end (the whole pipeline), "
            "reranker only (the same candidates) and the first stage's recall, with their intervals."
        ],
    )
    lines = []
    for (cond,), part in frame.group_by("condition", maintain_order=True):
        recall = part.group_by("first_stage", maintain_order=True).agg(pl.col("first_stage_recall").first())
        ends = (
            part.filter(pl.col("system") != FIRST_STAGE)
            .group_by("first_stage", maintain_order=True)
            .agg(pl.col("end_to_end").min().alias("low"), pl.col("end_to_end").max().alias("high"))
        )
        lines.append(
            f"{cond}: the first stages keep "
            + ", ".join(f"{score(v, 3)} ({n})" for n, v in recall.iter_rows())
            + " of their clean recall; end to end the "
            "rerankers keep "
            + ", ".join(f"{score(lo, 3)}–{score(hi, 3)} ({n})" for n, lo, hi in ends.iter_rows())
            + "."
        )
    return ["## Retention per first stage", "", *[f"- {x}" for x in lines], "", table.markdown(), ""]


def protocol_table(
    roots: dict[str, str], datasets: list[DatasetManifest], config: EvalConfig, out_dir: str, shared: list[SharedPairs]
) -> str:
    """protocol.csv and protocol.md from the first stages' results folders (`roots`: name → folder) and the pairs
    they share; returns the page's text."""
    ranked = ranked_datasets(datasets)
    clean = {
        n: pl.read_parquet(RunLayout(r).per_query).filter(
            (pl.col("measure") == config.headline)
            & (pl.col("condition") == CLEAN)
            & pl.col("dataset").is_in(ranked)
            & (pl.col("system") != FIRST_STAGE)
        )
        for n, r in roots.items()
    }
    verdicts = {
        n: pl.read_csv(RunLayout(r).comparisons_csv, schema=PAIRS_SCHEMA).filter(
            (pl.col("condition") == CLEAN) & (pl.col("system") != FIRST_STAGE) & (pl.col("versus") != FIRST_STAGE)
        )
        for n, r in roots.items()
    }
    rows, lines = [], []
    for a, b in combinations(roots, 2):
        systems = sorted(set(clean[a]["system"]) & set(clean[b]["system"]))
        ma, mb = _matrices(clean[a], systems, ranked), _matrices(clean[b], systems, ranked)
        tau, low, high = (
            tau_interval(ma, mb, config.bootstrap_resamples, config.seed, config.confidence)
            if len(systems) > 1
            else (None, None, None)
        )  # no order to compare
        tau = None if tau is None or math.isnan(tau) else tau  # every reranker tied on one first stage
        flipped = flips(verdicts[a], verdicts[b])
        means = {
            n: np.mean([m[d].mean(axis=1) for d in ranked], axis=0) if systems else np.empty(0)
            for n, m in ((a, ma), (b, mb))
        }
        order = {n: [systems[i] for i in np.argsort(-means[n], kind="stable")] for n in (a, b)}
        holds = order[a] == order[b] and not flipped.height
        what = (
            "holds"
            if holds
            else "changes: "
            + "; ".join(
                [f"order {' > '.join(order[a])} on {a}, {' > '.join(order[b])} on {b}"] * (order[a] != order[b])
                + [
                    f"{r['system']} vs {r['versus']} on {r['dataset']}: "
                    f"{r['verdict']} on {a}, {r['verdict_other']} on {b}"
                    for r in flipped.iter_rows(named=True)
                ]
            )
        )
        lines.append(
            f"{a} vs {b}: the order of {len(systems)} rerankers {what} ("
            + (
                f"Kendall's τ {score(tau, 2)} {interval(low, high, lambda v: score(v, 2))})."
                if tau is not None
                else "Kendall's τ undefined: the rerankers tie on one of them)."
            )
        )
        rows.append(
            {
                "first_stage": a,
                "versus": b,
                "rerankers": len(systems),
                "tau": tau,
                "tau_low": low,
                "tau_high": high,
                "order": " > ".join(order[a]),
                "order_versus": " > ".join(order[b]),
                "verdict_flips": flipped.height,
                "holds": holds,
                "sentence": lines[-1],
            }
        )
    layout = RunLayout(out_dir)
    frame = pl.DataFrame(rows)
    frame.write_csv(layout.protocol_csv)
    table = Table(
        ["First stage", "Versus", "Rerankers", "Kendall's τ", "Interval", "Verdict flips", "Order holds"],
        [
            [
                r["first_stage"],
                r["versus"],
                str(r["rerankers"]),
                score(r["tau"], 2),
                interval(r["tau_low"], r["tau_high"], lambda v: score(v, 2)),
                str(r["verdict_flips"]),
                "yes" if r["holds"] else "no",
            ]
            for r in rows
        ],
        [
            f"Kendall's τ-b between the rerankers' clean {config.headline} (mean over ranked datasets) on two "
            "first stages, with its percentile interval over paired bootstrap resamples of the queries. "
            "Verdict flips: pairwise verdicts (better / no difference / worse, clean queries, per dataset) "
            "that differ."
        ],
    )
    text = (
        "\n".join(
            [
                "# Does the rerankers' order hold across first stages?",
                "",
                *[f"- {x}" for x in lines],
                "",
                table.markdown(),
                "",
                *(
                    ["## Pairs shared between first stages", "", shared_table(shared, list(roots)).markdown(), ""]
                    if shared
                    else []
                ),
                *retention_part(roots),
                "Each first stage's own results: "
                + ", ".join(
                    f"{n}: `{Path(r).relative_to(layout.root) if r != out_dir else '.'}`" for n, r in roots.items()
                )
                + ".",
            ]
        )
        + "\n"
    )
    layout.protocol_md.write_text(text, encoding="utf-8")
    return text
