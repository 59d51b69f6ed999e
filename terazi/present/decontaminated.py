"""The headline without the queries a leakage check found in training data (terazi.analysis.decontaminated), as
people read it: the table beside the leaderboard, and the metric contract's line saying what was left out."""

from __future__ import annotations

import polars as pl

from terazi.present.labels import ci_label, dataset_label, interval, level, score, signed, word
from terazi.present.table import Table

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


def exclusion_line(frame: pl.DataFrame, folder: str, by: str) -> str:
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
        "headline is also shown without them (decontaminated.csv), the difference with its interval from the "
        "same paired bootstrap"
    )


def decontaminated_table(
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
            score(r["decontaminated"]),
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
