"""report.html: one self-contained page (tables and matplotlib plots inlined), readable offline."""

from __future__ import annotations

import base64
import html
import io
from datetime import datetime, timezone

import polars as pl

CSS = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}th,td{border:1px solid #ccc;padding:.25rem .6rem;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}.better{background:#e3f6e3}.worse{background:#fbe3e3}
caption{caption-side:bottom;color:#666;font-size:.85rem;text-align:left}img{max-width:100%}
"""


def fmt(v) -> str:
    """A table cell as text: – for missing, four decimals for floats."""
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.4f}"
    return str(v)


def _cell(v) -> str:
    return html.escape(fmt(v))


def table(df: pl.DataFrame, caption: str = "", table_id: str = "") -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns)
    body = []
    for row in df.iter_rows(named=True):
        cls = row.get("verdict") if row.get("verdict") in ("better", "worse") else ""
        body.append(f'<tr class="{cls}">' + "".join(f"<td>{_cell(row[c])}</td>" for c in df.columns) + "</tr>")
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody>{cap}</table>'


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def plot_scores(intervals: pl.DataFrame, headline: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = intervals.sort("mean")
    fig, ax = plt.subplots(figsize=(7, 0.5 * df.height + 1.2))
    y = range(df.height)
    ax.errorbar(df["mean"], list(y), xerr=[df["mean"] - df["ci_low"], df["ci_high"] - df["mean"]], fmt="o", capsize=4)
    ax.set_yticks(list(y), [f"{s} (group {g})" for s, g in zip(df["system"], df["group"])])
    ax.set_xlabel(f"{headline}, clean queries (95% bootstrap interval, balanced by dataset)")
    ax.grid(axis="x", alpha=.3)
    out = _png(fig)
    plt.close(fig)
    return out


def plot_retention(retention: pl.DataFrame) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = retention["system"].unique(maintain_order=True).to_list()
    conditions = retention["condition"].unique(maintain_order=True).to_list()
    fig, ax = plt.subplots(figsize=(8, 3.5))
    width = 0.8 / max(1, len(systems))
    for i, s in enumerate(systems):
        part = retention.filter(pl.col("system") == s)
        vals = [part.filter(pl.col("condition") == c)["retention"].fill_null(float("nan"))[0] * 100 for c in conditions]
        ax.bar([k + i * width for k in range(len(conditions))], vals, width, label=s)
    ax.axhline(100, color="#444", lw=.8)
    ax.set_xticks([k + width * (len(systems) - 1) / 2 for k in range(len(conditions))], conditions)
    ax.set_ylabel("retention % (corrupted / clean, changed queries)")
    ax.legend(fontsize=8)
    out = _png(fig)
    plt.close(fig)
    return out


def render(*, title: str, headline: str, identity, board: pl.DataFrame, intervals: pl.DataFrame, per_dataset: pl.DataFrame,
           retention: pl.DataFrame, pair_summary: pl.DataFrame, pairs: pl.DataFrame, conditions: pl.DataFrame,
           contract: dict, correction: str) -> str:
    """The whole page as a string."""
    sections = [
        f"<h1>{html.escape(title)}</h1>",
        f"<p>Generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}. Headline: <b>{html.escape(headline)}</b> on "
        "clean queries, datasets weighted equally. Groups: sorted by the headline, a system joins its upper "
        "neighbour's group unless their paired bootstrap interval excludes 0.</p>",
        f"<p id='benchmark'>Benchmark <b>{html.escape(identity.name)}</b>, fingerprint <code>{identity.fingerprint}</code> "
        "(hash of every dataset's frozen first-stage candidates).</p>",
        "<h2>Leaderboard</h2>", table(board, "Borda count (MTEB semantics) and means over datasets in the ranking.", "leaderboard"),
        f'<img id="plot-scores" alt="scores with intervals" src="{plot_scores(intervals, headline)}">',
        "<h2>Clean and corrupted, per dataset</h2>", table(per_dataset, f"Mean {headline} per system, dataset and condition.", "per-dataset"),
        "<h2>Retention under corruption</h2>",
        table(retention, "Over the queries each condition changed: retention = corrupted / clean; interval on corrupted − clean.", "retention"),
        f'<img id="plot-retention" alt="retention per condition" src="{plot_retention(retention)}">' if retention.height else "",
        "<h2>Pairwise comparisons</h2>", table(pair_summary, f"Cells (dataset × condition) where the first system is better, "
                                                             f"not different, worse. Correction: {correction}.", "pairwise-summary"),
        table(pairs, "Every cell of every pair: delta = first − second, with its interval.", "pairwise"),
        "<h2>Conditions</h2>", table(conditions, "Share of queries each condition changed.", "conditions"),
        "<h2>Metric contract</h2><ul>" + "".join(f"<li>{html.escape(str(k))}: {html.escape(str(v))}</li>" for k, v in contract.items()) + "</ul>",
    ]
    return f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>{CSS}</style></head><body>{''.join(sections)}</body></html>"
