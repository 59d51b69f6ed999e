"""The tables of a run's results people read, built once and shown everywhere (terminal, leaderboard.md, report.html,
Prefect artifacts): the leaderboard, per dataset, robustness, ranks, pairwise comparisons and variants; the tables of
what the run was made of (datasets, systems and their costs, conditions) are terazi.present.setup_tables. Human
column names, one system order, out-of-ranking datasets marked `*` with their reason, English or Turkish display
labels (terazi.present.labels). Each is a `Table` (terazi.present.table) of text cells.
"""

from __future__ import annotations

import polars as pl

from terazi.present.labels import (
    ci_label,
    condition_label,
    dataset_label,
    interval,
    level,
    params_text,
    percent,
    rate,
    ratio_text,
    score,
    signed,
    size_text,
    speed_text,
    votes,
    word,
)
from terazi.present.setup_tables import out_of_ranking_notes
from terazi.present.table import Table
from terazi.schemas.statistics import DEFAULTS
from terazi.schemas.tables import CLEAN


def leaderboard(
    board: pl.DataFrame,
    conditions: list[str],
    labels: str,
    compact: bool = False,
    task_types: int = 2,
    costs: dict | None = None,
    confidence: float = DEFAULTS.confidence,
) -> Table:
    """The card's table: group, system, its parameters (with `costs`), Borda rank and votes, Mean (Task) with its
    interval, Mean (TaskType) (only with more than one task type: otherwise it repeats Mean (Task)), the headline
    under each condition, then retention per condition, then size and warm pairs/s (with `costs`: system ->
    ModelCost or None). `compact` (terminal): each condition's score and retention in one cell."""
    corrupted = [c for c in conditions if c != CLEAN and c in board.columns]
    by_type = task_types > 1
    cols = (
        [word("group", labels), word("system", labels)]
        + ([word("params", labels)] if costs is not None else [])
        + [
            word("borda_rank", labels),
            word("borda_votes", labels),
            word("mean_task", labels),
            ci_label(labels, confidence),
        ]
        + ([word("mean_task_type", labels)] if by_type else [])
    )
    ret = word("retention", labels)
    if compact:
        cols += [f"{condition_label(c, labels)} ({ret})" for c in corrupted]
    else:
        cols += [condition_label(c, labels) for c in corrupted] + [
            f"{ret}: {condition_label(c, labels)}" for c in corrupted
        ]
    if costs is not None:
        cols += [word("size", labels), word("speed", labels)]
    rows = []
    for r in board.iter_rows(named=True):
        cost = (costs or {}).get(r["system"])
        row = (
            [str(r["group"]), r["system"]]
            + ([params_text(cost and cost.params)] if costs is not None else [])
            + [
                str(r["borda_rank"]),
                votes(r["borda_votes"]),
                score(r["mean_task"]),
                interval(r["ci_low"], r["ci_high"], lambda v: score(v, 3)),
            ]
            + ([score(r["mean_task_type"])] if by_type else [])
        )
        if compact:
            row += [f"{score(r[c])} ({percent(r.get(f'{c} retention'), labels)})" for c in corrupted]
        else:
            row += [score(r[c]) for c in corrupted] + [percent(r.get(f"{c} retention"), labels) for c in corrupted]
        if costs is not None:
            row += [size_text(cost and cost.size_bytes), speed_text(cost, labels, short=compact)]
        rows.append(row)
    return Table(cols, rows)


def variants_table(judgements: list, labels: str, confidence: float = DEFAULTS.confidence) -> Table:
    ci = ci_label(labels, confidence)
    rows = []
    for j in judgements:
        b, v = j.base_cost, j.variant_cost
        rows.append(
            [
                j.variant,
                j.base,
                str(j.queries),
                signed(j.delta),
                interval(j.low, j.high, signed),
                j.verdict,
                ratio_text(b and b.per_second, v and v.per_second, rate) if j.speed_ratio is not None else "–",
                ratio_text(b and b.size_bytes, v and v.size_bytes, size_text) if j.size_ratio is not None else "–",
            ]
        )
    measure = judgements[0].measure if judgements else "headline"
    return Table(
        [
            word("variant", labels),
            word("base", labels),
            word("queries_n", labels),
            f"Δ {measure}",
            ci,
            word("verdict", labels),
            f"{word('speed', labels)} (×)",
            f"{word('size', labels)} (×)",
        ],
        rows,
        [
            "Δ: variant − base on a seeded subset of the clean queries of the ranked datasets, with its paired "
            "bootstrap interval over those queries; no difference when the interval includes 0. Speed and size: "
            "base → variant, warm throughput and files on disk as in the cost table."
        ],
    )


def per_dataset(clean: pl.DataFrame, order: list[str], datasets: list, labels: str) -> Table:
    """Headline per system and dataset on clean queries (`clean`: system, dataset, mean), out-of-ranking datasets
    marked `*`; the last row gives each dataset's queries and how many have no relevant document."""
    means = {(r["system"], r["dataset"]): r["mean"] for r in clean.iter_rows(named=True)}
    cols = [word("system", labels)] + [dataset_label(d.name, d.in_ranking) for d in datasets]
    rows = [[s] + [score(means.get((s, d.name))) for d in datasets] for s in order]
    rows.append([word("queries", labels)] + [f"{d.n_queries} ({d.n_queries_without_relevant})" for d in datasets])
    return Table(cols, rows, out_of_ranking_notes(datasets))


def robustness(
    decomp: pl.DataFrame, order: list[str], conditions: list[str], k: int, labels: str, confidence: float
) -> Table:
    """Per system and condition: end-to-end, reranker-only and first-stage recall@k retention with intervals."""
    has_iso, has_recall = decomp["reranker_only"].is_not_null().any(), decomp["first_stage_recall"].is_not_null().any()
    ci = ci_label(labels, confidence)
    cols = [word("system", labels), word("condition", labels), word("end_to_end", labels), ci]
    cols += [word("reranker_only", labels), ci] if has_iso else []
    cols += [word("recall", labels, k=k), ci] if has_recall else []
    by = {(r["system"], r["condition"]): r for r in decomp.iter_rows(named=True)}
    rows = []
    for s in order:
        for c in conditions:
            r = by.get((s, c))
            if r is None:
                continue
            pc = lambda v: percent(v, labels)  # noqa: E731
            row = [
                s,
                condition_label(c, labels),
                pc(r["end_to_end"]),
                interval(r["end_to_end_low"], r["end_to_end_high"], pc),
            ]
            if has_iso:
                row += [pc(r["reranker_only"]), interval(r["reranker_only_low"], r["reranker_only_high"], pc)]
            if has_recall:
                row += [
                    pc(r["first_stage_recall"]),
                    interval(r["first_stage_recall_low"], r["first_stage_recall_high"], pc),
                ]
            rows.append(row)
    return Table(cols, rows)


SAMPLES_NOTE = (
    "Conditions with several samples per query (the stochastic ones): the queries' interval resamples queries, each "
    "query's samples averaged; the two-level one resamples the queries, then each drawn query's samples. Samples' "
    "share: the part of the two-level bootstrap's variance that resampling the samples adds (law of total variance): "
    "near 0, the sampler's luck does not matter; near 1, it is most of the uncertainty."
)


def samples_table(retention: pl.DataFrame, order: list[str], labels: str, confidence: float) -> Table | None:
    """Per system and condition with several samples per query: retention with its interval over the queries (each
    query's samples averaged) and its two-level interval (queries, then samples), and the samples' share of the
    two-level variance (terazi.analysis.two_level); None when no condition has several samples."""
    if "samples_share" not in retention.columns:
        return None
    rows = retention.filter(pl.col("samples") > 1)
    at = {s: i for i, s in enumerate(order)}
    rows = rows.sort(pl.col("system").replace_strict(at, default=len(at), return_dtype=pl.Int64), maintain_order=True)
    lv = level(confidence, labels)
    pc = lambda v: percent(v, labels)  # noqa: E731
    setting = {"end-to-end": word("end_to_end", labels), "isolated": word("reranker_only", labels)}
    cols = [word("system", labels), word("condition", labels), word("setting", labels), word("samples", labels)]
    cols += [word("retention", labels), word("ci_queries", labels, level=lv), word("ci_two_level", labels, level=lv)]
    cols += [word("samples_share", labels)]
    return Table(
        cols,
        [
            [
                r["system"],
                condition_label(r["condition"], labels),
                setting.get(r["setting"], r["setting"]),
                str(r["samples"]),
                pc(r["retention"]),
                interval(r["retention_low"], r["retention_high"], pc),
                interval(r["retention_low_two_level"], r["retention_high_two_level"], pc),
                pc(r["samples_share"]),
            ]
            for r in rows.iter_rows(named=True)
        ],
    )


def pairs_summary_table(summary: pl.DataFrame, correction: str, confidence: float) -> Table:
    rows = [
        [
            r["system"],
            r["versus"],
            str(r["better"]),
            str(r["no_difference"]),
            str(r["worse"]),
            "–" if r["mean_significant_delta"] is None else signed(r["mean_significant_delta"]),
        ]
        for r in summary.iter_rows(named=True)
    ]
    return Table(
        ["System", "Versus", "Better", "No difference", "Worse", "Mean significant delta"],
        rows,
        [
            f"Cells (dataset × condition) where the first system is significantly better, not different, worse "
            f"(paired bootstrap, {level(confidence)}). Correction: {correction}."
        ],
    )


def pairs_table(pairs: pl.DataFrame, labels: str, confidence: float) -> Table:
    rows = [
        [
            r["system"],
            r["versus"],
            r["dataset"],
            condition_label(r["condition"], labels),
            signed(r["delta"]),
            interval(r["ci_low"], r["ci_high"], signed),
            f"{r['p_value']:.3f}",
            r["verdict"],
            f"{r['p_randomization']:.3g}",
            f"{r['p_adjusted']:.3g}",
            "–" if r["effect_size"] is None else f"{r['effect_size']:+.2f}",
        ]
        for r in pairs.iter_rows(named=True)
    ]
    return Table(
        [
            "System",
            "Versus",
            "Dataset",
            word("condition", labels),
            "Delta",
            ci_label("en", confidence),
            "p",
            "Verdict",
            "p (randomization)",
            "p adjusted",
            "Effect size",
        ],
        rows,
        [
            "Every cell of every pair: delta = first − second on the same queries, with its paired interval.",
            "p: the bootstrap's; p (randomization): the paired randomization test's, adjusted as the contract says; "
            "effect size: delta ÷ the standard deviation of the per-query differences.",
        ],
    )


def detectable_table(detectable: pl.DataFrame, uninformative: pl.DataFrame, datasets: list, alpha: float) -> Table:
    """Per dataset: queries, those with no relevant document, and the smallest difference it can detect; a note for
    each dataset whose "no difference" cells are narrower than that (`uninformative_cells`)."""
    ranked = {d.name: d.in_ranking for d in datasets}

    def mde(v: float | None) -> str:
        return "–" if v is None else f"{v:.4f}"

    rows = [
        [dataset_label(r["dataset"], ranked.get(r["dataset"], True)), str(r["queries"]), str(r["no_relevant"])]
        + [mde(r["mde"]), mde(r["mde_median"])]
        for r in detectable.iter_rows(named=True)
    ]
    notes = [
        "MDE: the smallest true difference of the headline a two-sided paired t-test at α = "
        f"{alpha:g} detects with 80% power, from the clean per-query differences of the top two systems "
        "(median: of every pair of systems)."
    ]
    notes += [
        f'{r["dataset"]}: in {r["cells"]} of its {r["of"]} "no difference" cells the dataset\'s MDE '
        f"({r['mde']:.4f}) exceeds the interval's width: a difference below the MDE is likely to go undetected, so "
        '"no difference" there is no evidence that the systems are equal.'
        for r in uninformative.iter_rows(named=True)
        if r["cells"]
    ]
    return Table(["Dataset", "Queries", "No relevant doc.", "MDE (top two)", "MDE (median pair)"], rows, notes)


def ranks_table(ranks: pl.DataFrame, labels: str, confidence: float) -> Table:
    """Each system's rank by Mean (Task) and by Borda count, with its interval and P(rank 1) over the same paired
    bootstrap resamples as every interval (terazi.analysis.ranks), in the leaderboard's order."""
    rng = word("rank_range", labels, level=level(confidence, labels))
    span = lambda lo, hi: f"[{lo}, {hi}]"  # noqa: E731
    rows = [
        [
            r["system"],
            str(r["rank_mean"]),
            span(r["rank_mean_low"], r["rank_mean_high"]),
            percent(r["p_rank1_mean"], labels),
            str(r["rank_borda"]),
            span(r["rank_borda_low"], r["rank_borda_high"]),
            percent(r["p_rank1_borda"], labels),
        ]
        for r in ranks.iter_rows(named=True)
    ]
    return Table(
        [
            word("system", labels),
            word("rank_mean", labels),
            rng,
            word("p_rank1", labels),
            word("rank_borda", labels),
            rng,
            word("p_rank1", labels),
        ],
        rows,
        [
            f"In each of the paired bootstrap resamples behind the intervals, the systems ranked by Mean (Task) and by "
            f"Borda count (tied systems share the better rank); the range is the central {level(confidence)} of a "
            "system's ranks, P(rank 1) the share of resamples it ranked first. Groups say whether neighbours "
            "differ; these say where a system stands."
        ],
    )
