"""tables.json: every table of a run's outputs as text, built once in the leaderboard's order and the configured
labels; the terminal, leaderboard.md, report.html and the Prefect artifacts all show these."""

from __future__ import annotations

import polars as pl

from terazi.analysis.aggregates import Aggregates
from terazi.analysis.intervals import featured_cells, uninformative_cells
from terazi.analysis.retention import AGGREGATION_LABELS
from terazi.analysis.summary import ranked_datasets
from terazi.present.depth_tables import depth_tables
from terazi.present.labels import level
from terazi.present.leakage import leak_free_table
from terazi.present.notes import explain, featured_lines, variant_sentence
from terazi.present.setup_tables import (
    COST_NOTE,
    costs_table,
    datasets_table,
    examples,
    out_of_ranking_notes,
    system_kinds,
    systems_table,
    unusable_notes,
)
from terazi.present.tables import (
    SAMPLES_NOTE,
    detectable_table,
    leaderboard,
    per_dataset,
    ranks_table,
    robustness,
    samples_table,
    variants_table,
)
from terazi.schemas import FIRST_STAGE, CandidateSet, DatasetManifest, EvalConfig, RerankResult
from terazi.schemas.tables import CLEAN


def featured_system(config: EvalConfig, order: list[str]) -> str:
    return config.featured if config.featured in order else order[0]


def display_tables(
    agg: Aggregates,
    datasets: list[DatasetManifest],
    variants: pl.DataFrame,
    candidates: list[CandidateSet],
    reranks: list[RerankResult],
    config: EvalConfig,
) -> dict:
    """Every table of the outputs, as text in the leaderboard's order and the configured labels (tables.json);
    `variants`: the query variants with their texts (the examples), `candidates`: the frozen first stage (none for
    runs made elsewhere)."""
    board, decomp, order, costs, judgements = agg.board, agg.decomposition, agg.order, agg.costs, agg.judgements
    labels, conds = config.labels, [c for c in config.conditions if c != CLEAN]
    n_types = len({d.task_type for d in datasets if d.name in ranked_datasets(datasets)})
    featured = featured_system(config, order)
    cells = featured_cells(agg.pairs, featured)
    legend = [
        "Rows: significance group (1 = top; a system shares its upper neighbour's group unless their paired bootstrap "
        f"difference on clean queries excludes 0), then Mean (Task). Mean (Task): {config.headline} on clean queries, "
        f"mean over ranked datasets, with its {level(config.confidence)} interval "
        "(paired bootstrap balanced by dataset). "
        "Borda rank and votes: "
        "per ranked dataset, points = N − rank; ranked by total points."
        + ("" if n_types > 1 else " Mean (TaskType) is not shown: with one task type it equals Mean (Task)."),
        "Condition columns: dataset-balanced means over ranked datasets. Retention: over the queries each condition "
        "changed, end to end ("
        + (
            "corrupted query through first stage and reranker"
            if candidates
            else "each condition's run files against the clean ones"
        )
        + f"); {config.retention}: "
        + AGGREGATION_LABELS[config.retention]
        + ".",
        *out_of_ranking_notes(datasets),
    ]
    shown = costs if costs and any(costs.values()) else None  # runs analysed from files carry no costs
    legend += [COST_NOTE, *unusable_notes(shown, order)] if shown else []
    confidence = config.confidence
    board_t = leaderboard(board, config.conditions, labels, task_types=n_types, costs=shown, confidence=confidence)
    board_t.notes = legend
    compact = leaderboard(
        board, config.conditions, labels, compact=True, task_types=n_types, costs=shown, confidence=confidence
    )
    compact.notes = legend
    robust = robustness(decomp, order, conds, config.rerank_depth, labels, confidence)
    # said of what was measured: runs made elsewhere (`terazi analyze`, no candidates) have no reranker-only
    # setting and no first stage of terazi's
    has_iso, has_recall = (decomp[c].is_not_null().any() for c in ("reranker_only", "first_stage_recall"))
    robust.notes = [
        (
            "End to end: the corrupted query goes through the first stage and the reranker (the card's setting). "
            if candidates
            else "End to end: each condition's run files against the clean ones. "
        )
        + (
            "Reranker only: the reranker reorders the clean query's frozen candidates using the corrupted text. "
            if has_iso
            else "Reranker only: not run (robustness: end-to-end). "
            if candidates
            else ""
        )
        + (
            f"First-stage recall@{config.rerank_depth}: retention of the share of relevant documents among the "
            "candidates every reranker reorders. "
            if has_recall
            else ""
        )
        + f"Each over the queries the condition changed, aggregated {config.retention} "
        f"({AGGREGATION_LABELS[config.retention]})."
    ]
    if (two_level := samples_table(agg.retention, order, labels, confidence)) is not None:
        two_level.notes = [SAMPLES_NOTE]
    tables = {
        "headline": config.headline,
        "order": order,
        "labels": labels,
        "retention": config.retention,
        "robustness": "both" if has_iso else "end-to-end",
        "first_stage": bool(candidates),
        "leaderboard": board_t.to_json(),
        "leaderboard_compact": compact.to_json(),
        "ranks": ranks_table(agg.ranks, labels, confidence).to_json(),
        "per_dataset": per_dataset(agg.clean_means, order, datasets, labels).to_json(),
        "robustness_table": robust.to_json(),
        **({} if two_level is None else {"samples_table": two_level.to_json()}),
        "explanations": explain(decomp, order, conds, config.rerank_depth, FIRST_STAGE),
        "featured": {
            "system": featured,
            "lines": featured_lines(
                cells,
                featured,
                config.conditions,
                [d.name for d in datasets],
                labels,
                [s for s in order if s != featured],
            ),
        },
        "datasets": datasets_table(datasets, candidates).to_json(),
        "systems": systems_table(config, candidates, reranks).to_json(),
        "examples": examples(variants, config.conditions).to_json(),
        "costs": costs_table(shown, system_kinds(config), order, labels).to_json() if shown else None,
        "variants": {
            "sentences": [variant_sentence(j, labels, confidence) for j in judgements],
            "table": variants_table(judgements, labels, confidence).to_json(),
        }
        if judgements
        else None,
        "detectable": detectable_table(
            agg.detectable, uninformative_cells(agg.pairs, agg.detectable), datasets, config.alpha
        ).to_json(),
    }
    if agg.depths is not None:  # only with `rerank_depths`: a run without it shows the same tables
        tables["depths"] = depth_tables(agg.depths, agg.ceiling, config.headline, labels, confidence)
    if agg.leak_free is not None:  # only with `leakage`: a run without it shows the same tables
        tables["leak_free"] = leak_free_table(
            agg.leak_free,
            datasets,
            labels,
            confidence,
            config.bootstrap_resamples,
            config.seed,
            agg.contract["excluded"],
        ).to_json()
    return tables
