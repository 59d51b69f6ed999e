"""report.html: one self-contained page (tables and matplotlib plots inlined), readable offline.

Everything a reviewer needs to judge the numbers: the benchmark and its fingerprints, the datasets and their
sizes, the systems with their model identities and depths, before/after examples of every condition, the
leaderboard and the robustness decomposition in one system order, plots with intervals, the contract.
Tables never overflow the page: each sits in its own horizontally scrolling box and names never wrap.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import version

import polars as pl

from terazi.analysis.aggregates import Aggregates
from terazi.analysis.intervals import pairwise_summary
from terazi.base.fingerprint import of_rows
from terazi.present.labels import condition_label, level, word
from terazi.present.setup_tables import COST_NOTE, COST_POINTER, conditions_table
from terazi.present.table import Table
from terazi.present.tables import pairs_summary_table, pairs_table
from terazi.schemas.tables import CLEAN
from terazi.store import derived

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5rem auto;max-width:1140px;padding:0 1rem;color:#222;line-height:1.4}
.table-box{max-width:100%;overflow-x:auto;margin:.5rem 0 1.2rem}
table{border-collapse:collapse;font-size:.9rem}
th,td{border:1px solid #ccc;padding:.25rem .4rem;white-space:nowrap}
th{background:#f3f3f3;vertical-align:bottom;white-space:normal;min-width:3.5em}th .w{white-space:nowrap}
.num{text-align:right}.text{text-align:left}.better{background:#e3f6e3}.worse{background:#fbe3e3}
.notes{color:#555;font-size:.85rem;margin:-.6rem 0 1.5rem}.notes p{margin:.2rem 0}
img{max-width:100%;height:auto}code{overflow-wrap:anywhere}
"""


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _drawn(cache_dir: str | None, plot: Callable[..., str], *args) -> str:
    """`plot(*args)`, drawn once per content: kept in the cache folder under the plot's name, its inputs (each
    table's columns and rows) and matplotlib's version, so that a rerun with the same numbers neither imports
    matplotlib nor draws (its PNG is the same bytes)."""
    parts = [[a.columns, of_rows(a)] if isinstance(a, pl.DataFrame) else a for a in args]
    return derived.text(
        cache_dir, derived.key("plot", plot.__name__, version("matplotlib"), parts, maker=__name__), lambda: plot(*args)
    )


def plot_scores(intervals: pl.DataFrame, headline: str, order: list[str], confidence: float) -> str:
    """Clean headline with its interval per system, top of the leaderboard at the top."""
    plt = _pyplot()
    by = {r["system"]: r for r in intervals.iter_rows(named=True)}
    systems = [s for s in order if s in by][::-1]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(systems) + 1.2))
    mean = [by[s]["mean"] for s in systems]
    ax.errorbar(
        mean,
        range(len(systems)),
        xerr=[
            [m - by[s]["ci_low"] for m, s in zip(mean, systems)],
            [by[s]["ci_high"] - m for m, s in zip(mean, systems)],
        ],
        fmt="o",
        capsize=4,
    )
    ax.set_yticks(range(len(systems)), [f"{s} (group {by[s]['group']})" for s in systems])
    ax.set_xlabel(f"{headline}, clean queries ({level(confidence)} bootstrap interval, balanced by dataset)")
    ax.grid(axis="x", alpha=0.3)
    out = _png(fig)
    plt.close(fig)
    return out


def plot_ranks(ranks: pl.DataFrame, confidence: float) -> str:
    """Each system's rank interval (bar) and rank (point), by Mean (Task) and by Borda count, rank 1 at the left; the
    leaderboard's top system at the top."""
    plt = _pyplot()
    rows = list(ranks.iter_rows(named=True))[::-1]
    n = max([1, *(r["rank_mean_high"] for r in rows), *(r["rank_borda_high"] for r in rows)])
    fig, axes = plt.subplots(1, 2, figsize=(9, 0.45 * len(rows) + 1.3), sharey=True)
    for ax, key, title in ((axes[0], "rank_mean", "by Mean (Task)"), (axes[1], "rank_borda", "by Borda count")):
        for y, r in enumerate(rows):
            ax.plot(
                [r[f"{key}_low"], r[f"{key}_high"]], [y, y], lw=6, alpha=0.35, color="#1f77b4", solid_capstyle="butt"
            )
            ax.plot([r[key]], [y], "o", color="#1f77b4")
        ax.set_xlim(0.5, n + 0.5)
        ax.set_xticks(range(1, n + 1))
        ax.set_title(f"rank {title} ({level(confidence)} range)", fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(rows)), [r["system"] for r in rows])
    fig.tight_layout()
    out = _png(fig)
    plt.close(fig)
    return out


def plot_retention(retention: pl.DataFrame, order: list[str], conditions: list[str], labels: str) -> str:
    """Retention with its interval per condition and system (systems in the leaderboard's order), one panel per
    setting; the y-range spans the intervals (not from 0) so that differences of a few points show."""
    plt = _pyplot()
    settings = [s for s in ("end-to-end", "isolated") if retention.filter(pl.col("setting") == s).height]
    conds = [c for c in conditions if c != CLEAN]
    systems = [s for s in order if s in set(retention["system"])]
    fig, axes = plt.subplots(1, len(settings), figsize=(5.2 * len(settings), 3.8), sharey=True, squeeze=False)
    vals = retention.filter(pl.col("retention").is_not_null())
    lo = min([*vals["retention_low"].drop_nulls().to_list(), *vals["retention"].to_list(), 1.0])
    hi = max([*vals["retention_high"].drop_nulls().to_list(), *vals["retention"].to_list(), 1.0])
    pad = max(0.01, 0.08 * (hi - lo))
    width = 0.8 / max(1, len(systems))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, setting in zip(axes[0], settings):
        part = {
            (r["system"], r["condition"]): r
            for r in retention.filter(pl.col("setting") == setting).iter_rows(named=True)
        }
        for i, s in enumerate(systems):
            xs, ys, el, eh = [], [], [], []
            for k, c in enumerate(conds):
                r = part.get((s, c))
                if r is None or r["retention"] is None:
                    continue
                xs.append(k - 0.4 + width * (i + 0.5))
                ys.append(100 * r["retention"])
                low, high = r["retention_low"], r["retention_high"]  # a percentile interval can miss the estimate
                el.append(max(0.0, 100 * (r["retention"] - (low if low is not None else r["retention"]))))
                eh.append(max(0.0, 100 * ((high if high is not None else r["retention"]) - r["retention"])))
            if xs:
                ax.errorbar(xs, ys, yerr=[el, eh], fmt="o", capsize=3, color=colors[i % len(colors)], label=s)
        ax.axhline(100, color="#444", lw=0.8, ls="--")
        ax.set_xticks(range(len(conds)), [condition_label(c, labels) for c in conds], fontsize=8)
        ax.set_title("end to end" if setting == "end-to-end" else "reranker only (clean candidates)", fontsize=10)
        ax.set_ylim(100 * (lo - pad), 100 * (hi + pad))
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("retention % (corrupted / clean, changed queries)")
    axes[0][0].legend(fontsize=8, loc="best")
    fig.tight_layout()
    out = _png(fig)
    plt.close(fig)
    return out


def pareto(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats on both cost (lower) and quality (higher), by cost."""
    front, best = [], float("-inf")
    for cost, quality in sorted(points, key=lambda p: (p[0], -p[1])):
        if quality > best:
            front.append((cost, quality))
            best = quality
    return front


def plot_depths(depths: pl.DataFrame, ceiling: pl.DataFrame, headline: str, confidence: float) -> str:
    """Three panels: quality vs depth per reranker (interval band; the oracle dashed), quality vs cost per query with
    the Pareto front, and the ceiling (recall@depth and the oracle) vs depth."""
    plt = _pyplot()
    fig, (q_ax, c_ax, ceil_ax) = plt.subplots(1, 3, figsize=(15, 4.2))
    timed = depths["seconds_per_query"].is_not_null().all()
    cost, cost_label = (
        (pl.col("seconds_per_query") * 1000, "model ms per query (warm)")
        if timed
        else (pl.col("pairs_per_query"), "pairs scored per query")
    )
    depths = depths.with_columns(cost.alias("cost"))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    points = []
    for i, ((system,), part) in enumerate(depths.group_by("system", maintain_order=True)):
        c = colors[i % len(colors)]
        q_ax.plot(part["depth"], part["mean"], "o-", color=c, label=system)
        q_ax.fill_between(part["depth"], part["ci_low"], part["ci_high"], color=c, alpha=0.15)
        enough = part.filter(pl.col("enough"))
        q_ax.plot(enough["depth"], enough["mean"], "*", ms=14, color=c)
        c_ax.plot(part["cost"], part["mean"], "o", color=c, label=system)
        for r in part.iter_rows(named=True):
            c_ax.annotate(
                str(r["depth"]), (r["cost"], r["mean"]), fontsize=7, xytext=(3, 3), textcoords="offset points"
            )
        points += list(zip(part["cost"].to_list(), part["mean"].to_list()))
    front = pareto(points)
    c_ax.plot([p[0] for p in front], [p[1] for p in front], "--", color="#444", lw=1, label="Pareto front")
    oracle = ceiling.sort("depth")
    q_ax.plot(oracle["depth"], oracle["oracle"], "k--", lw=1, label="oracle (ceiling)")
    ceil_ax.plot(oracle["depth"], oracle["recall"], "o-", label="recall@depth")
    ceil_ax.fill_between(oracle["depth"], oracle["recall_low"], oracle["recall_high"], alpha=0.15)
    ceil_ax.plot(oracle["depth"], oracle["oracle"], "s-", label=f"oracle {headline}")
    ceil_ax.fill_between(oracle["depth"], oracle["oracle_low"], oracle["oracle_high"], alpha=0.15)
    for ax, x, title in (
        (q_ax, "rerank depth", f"{headline} vs depth (★ enough depth)"),
        (c_ax, cost_label, f"{headline} vs cost per query"),
        (ceil_ax, "depth", "the first stage's ceiling"),
    ):
        ax.set_xlabel(x)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    q_ax.set_ylabel(f"{headline}, clean queries ({level(confidence)} interval)")
    fig.tight_layout()
    out = _png(fig)
    plt.close(fig)
    return out


def render(*, title: str, identity, tables: dict, agg: Aggregates, config, cache_dir: str | None = None) -> str:
    """The whole page as a string; its plots drawn once per content when a cache folder is given."""
    intervals, retention, pairs, conditions, contract = (
        agg.intervals,
        agg.retention,
        agg.pairs,
        agg.conditions,
        agg.contract,
    )
    pair_summary = pairwise_summary(pairs)
    correction = config.adjustment if config.verdict == "p" or config.holm else "none"  # what corrected the verdicts
    T = Table.from_json
    headline, labels = config.headline, config.labels
    order = tables["order"]
    featured = tables["featured"]
    iso = (
        "; the reranker-only panel reorders the clean query's candidates with the corrupted text"
        if tables.get("robustness", config.robustness) == "both"
        else ""
    )
    ours = tables.get("first_stage", True)  # False: TREC runs made elsewhere (terazi analyze)
    fingerprint = (
        "hash of every dataset's frozen first-stage candidates"
        if ours
        else "hash of the judgments and the changed queries"
    )
    first_stage = (
        f" First stage: top {config.depth} candidates per query; each reranker rescores the top {config.rerank_depth}."
        if ours
        else " The systems are TREC runs made elsewhere."
    )
    # each condition's score and retention in one cell, size and speed in the Cost section: the card's columns fit
    board = T(tables.get("leaderboard_compact") or tables["leaderboard"])
    if tables.get("costs"):
        board = board.without(word("size", labels), word("speed", labels))
        board.notes = [COST_POINTER if n == COST_NOTE else n for n in board.notes]
    sections = [
        f"<h1>{html.escape(title)}</h1>",
        f"<p>Generated {datetime.now(UTC):%Y-%m-%d %H:%M UTC}. Headline: <b>{html.escape(headline)}</b> on "
        "clean queries, datasets in the ranking weighted equally. Every table and plot lists the systems in the "
        "leaderboard's order: significance group, then headline.</p>",
        f"<p id='benchmark'>Benchmark <b>{html.escape(identity.name)}</b>, "
        f"fingerprint <code>{identity.fingerprint}</code> "
        f"({fingerprint}).{first_stage}</p>",
        "<h2>Leaderboard</h2>",
        board.html("leaderboard"),
        '<img id="plot-scores" alt="scores with intervals" '
        f'src="{_drawn(cache_dir, plot_scores, intervals, headline, order, config.confidence)}">',
        "<h2>Rank intervals</h2>",
        T(tables["ranks"]).html("ranks"),
        '<img id="plot-ranks" alt="rank intervals" '
        f'src="{_drawn(cache_dir, plot_ranks, agg.ranks, config.confidence)}">',
        f"<h2>Per dataset ({html.escape(condition_label(CLEAN, labels))})</h2>",
        T(tables["per_dataset"]).html("per-dataset"),
        *(
            ["<h2>Without the queries found in training data</h2>", T(tables["leak_free"]).html("leak_free")]
            if tables.get("leak_free")
            else []
        ),
        "<h2>Where the loss comes from</h2>",
        T(tables["robustness_table"]).html("robustness"),
        *(
            ["<h3>Several samples per query</h3>", T(tables["samples_table"]).html("retention-samples")]
            if tables.get("samples_table")
            else []
        ),
    ]
    if tables["explanations"]:
        sections.append(
            "<ul id='explanations'>" + "".join(f"<li>{html.escape(e)}</li>" for e in tables["explanations"]) + "</ul>"
        )
    if retention.height:
        sections.append(
            f'<img id="plot-retention" alt="retention with intervals per condition" '
            f'src="{_drawn(cache_dir, plot_retention, retention, order, config.conditions, labels)}">'
            f"<p class='notes'>Points: retention; bars: {level(config.confidence)} interval; "
            f"dashed line: 100%{iso}.</p>"
        )
    sections += [
        f"<h2>Significant cells: {html.escape(featured['system'])}</h2>",
        "<ul id='featured'>" + "".join(f"<li>{html.escape(x)}</li>" for x in featured["lines"]) + "</ul>",
    ]
    if tables.get("variants"):
        sections += [
            "<h2>Judged variants</h2>",
            "<ul id='variants'>"
            + "".join(f"<li>{html.escape(x)}</li>" for x in tables["variants"]["sentences"])
            + "</ul>",
            T(tables["variants"]["table"]).html("variants-table"),
        ]
    if tables.get("costs"):
        sections += ["<h2>Cost</h2>", T(tables["costs"]).html("costs")]
    if tables.get("depths"):  # only with rerank_depths
        sections += [
            "<h2>Rerank depth and the ceiling</h2>",
            "<ul id='enough-depth'>"
            + "".join(f"<li>{html.escape(x)}</li>" for x in tables["depths"]["sentences"])
            + "</ul>",
            T(tables["depths"]["table"]).html("depths"),
            f'<img id="plot-depths" alt="quality vs depth, quality vs cost (Pareto front), the ceiling" '
            f'src="{plot_depths(agg.depths, agg.ceiling, headline, config.confidence)}">',
            T(tables["depths"]["ceiling"]).html("ceiling"),
        ]
    sections += [
        "<h2>Datasets</h2>",
        T(tables["datasets"]).html("datasets"),
        "<h3>What each dataset can detect</h3>",
        T(tables["detectable"]).html("detectable"),
        "<h2>Systems</h2>",
        T(tables["systems"]).html("systems"),
        "<h2>Conditions</h2>",
        conditions_table(conditions, labels).html("conditions"),
        "<h3>Examples: before and after</h3>",
        T(tables["examples"]).html("examples"),
        "<h2>Pairwise comparisons</h2>",
        pairs_summary_table(pair_summary, correction, config.confidence).html("pairwise-summary"),
        pairs_table(pairs, labels, config.confidence).html("pairwise"),
        "<h2>Metric contract</h2><ul>"
        + "".join(f"<li>{html.escape(str(k))}: {html.escape(str(v))}</li>" for k, v in contract.items())
        + "</ul>",
    ]
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width'>"
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>{''.join(sections)}</body></html>"
    )
