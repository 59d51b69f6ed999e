"""A leakage check as people read it: what `terazi leakage` publishes as Prefect artifacts, read from its output
folder (terazi.schemas.layout LeakageLayout: the table of shares per dataset, and the markdown report saying where
report.html and the id lists are; the flow hands these to Prefect, flows/lifecycle.py), and an evaluation's headline
without the leaked queries (terazi.analysis.leak_free): the table beside the leaderboard, and the metric contract's
line saying what was left out."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from terazi.present.artifacts import Artifact
from terazi.present.labels import ci_label, dataset_label, interval, level, percent, score, signed, word
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
        f"- contaminated queries (leave them out with `leakage: {layout.root}`): {lists}\n"
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


WORDS = {
    "en": {
        "dataset": "Dataset",
        "queries": "Queries",
        "excluded": "Excluded",
        "full": "All queries",
        "without": "Without excluded",
        "delta": "Δ",
    },
    "tr": {
        "dataset": "Veri kümesi",
        "queries": "Sorgu",
        "excluded": "Çıkarılan",
        "full": "Tüm sorgular",
        "without": "Çıkarılanlar olmadan",
        "delta": "Δ",
    },
}
BY = {
    "queries": "the contaminated queries (sharing an n-gram with training text, or repeated: <dataset>/queries.txt)",
    "relevant": "the contaminated queries (queries.txt) and the judged queries whose relevant passage is hit "
    "(relevant_hit.txt)",
}


def leak_free_line(frame: pl.DataFrame, folder: str, by: str) -> str:
    """The contract's line: what was left out, from which check, how many queries of each dataset."""
    first = list(frame.filter(pl.col("system") == frame["system"][0]).iter_rows(named=True))
    total = [
        f"{r['excluded']:,} of {r['queries']:,} queries of the ranked datasets left out"
        for r in first
        if r["dataset"] is None
    ]
    parts = ", ".join(f"{r['dataset']} {r['excluded']:,} of {r['queries']:,}" for r in first if r["dataset"])
    return (
        f"{BY[by]} listed by the leakage check in {folder}: {''.join(total) or 'left out'} ({parts}); every "
        "headline is also shown without them (leak_free.csv), the difference with its interval from the "
        "same paired bootstrap"
    )


def leak_free_table(
    frame: pl.DataFrame, datasets: list, labels: str, confidence: float, resamples: int, seed: int, note: str
) -> Table:
    """Per system: Mean (Task) over the ranked datasets, then each dataset; all queries, without the excluded ones,
    the difference and its interval."""
    w = WORDS[labels]
    in_ranking = {d.name: d.in_ranking for d in datasets}
    cols = [
        word("system", labels),
        w["dataset"],
        w["queries"],
        w["excluded"],
        w["full"],
        w["without"],
        w["delta"],
        ci_label(labels, confidence),
    ]
    rows = [
        [
            r["system"],
            word("mean_task", labels)
            if r["dataset"] is None
            else dataset_label(r["dataset"], in_ranking.get(r["dataset"], True)),
            f"{r['queries']:,}",
            f"{r['excluded']:,}",
            score(r["full"]),
            score(r["leak_free"]),
            "–" if r["delta"] is None else signed(r["delta"]),
            interval(r["delta_low"], r["delta_high"], signed),
        ]
        for r in frame.iter_rows(named=True)
    ]
    notes = [
        f"Excluded: {note}.",
        f"{w['delta']}: without excluded − all queries; its {level(confidence)} interval from the paired "
        f"bootstrap of every interval ({resamples} resamples, seed {seed}: the same draws as the leaderboard's), "
        "datasets "
        "balanced as the headline. –: every query of a dataset was excluded.",
    ]
    return Table(cols, rows, notes, align=["left", "left"] + ["right"] * 6)
