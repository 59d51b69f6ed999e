"""Compare two results folders (or two systems of one) cell by cell: per dataset × condition, the paired difference
of a measure over the same queries, its bootstrap interval and a verdict. `terazi compare` prints it; the nightly's
changes.md is written from it.

Pairing needs the same queries on both sides: values are joined on (dataset, condition, query_id), and a cell holds
the queries both sides have (`queries`). The overall line of a system is its clean headline, balanced by dataset,
over the datasets both sides have.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from terazi.analysis.hypotheses import adjust_families, effect_size, randomization, significant
from terazi.analysis.stats import Interval, balanced_mean, differences, paired_difference
from terazi.base.errors import TeraziError
from terazi.schemas.results_folder import ResultsFolder
from terazi.schemas.statistics import Statistics
from terazi.schemas.tables import CLEAN

CELL = ["dataset", "condition", "query_id"]
COLUMNS = {
    "system": pl.Utf8,
    "versus": pl.Utf8,
    "dataset": pl.Utf8,
    "condition": pl.Utf8,
    "queries": pl.Int64,
    "before": pl.Float64,
    "after": pl.Float64,
    "delta": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "p_value": pl.Float64,
    "verdict": pl.Utf8,
    "p_randomization": pl.Float64,
    "p_adjusted": pl.Float64,
    "effect_size": pl.Float64,
}
SIGNIFICANT = ("better", "worse")


@dataclass(frozen=True)
class Comparison:
    """`cells`: one row per (system, dataset, condition); `overall`: one row per system (dataset = '*').

    For two folders, `before`/`after` are the two runs' means and `delta` = after − before; for two systems of one
    folder, `before` is the second system (`versus`), `after` the first, and `delta` = first − second. A verdict is
    better / worse, or else equivalent within δ (`statistics.equivalence_margin`) / not shown equivalent."""

    title: str
    measure: str
    cells: pl.DataFrame
    overall: pl.DataFrame
    added: list[str]
    removed: list[str]
    statistics: Statistics
    depths: pl.DataFrame | None = None  # two folders that both swept rerank depths: `compare_depths`

    def changed(self) -> pl.DataFrame:
        """Cells where anything moved: a significant verdict or a non-zero delta."""
        return self.cells.filter(pl.col("verdict").is_in(SIGNIFICANT) | (pl.col("delta").abs() > 1e-12))

    def significant(self) -> pl.DataFrame:
        return self.cells.filter(pl.col("verdict").is_in(SIGNIFICANT))

    def unchanged_systems(self) -> list[str]:
        moved = set(self.changed()["system"])
        return [s for s in self.overall["system"].to_list() if s not in moved]

    def to_json(self) -> str:
        return json.dumps(
            {
                "title": self.title,
                "measure": self.measure,
                "confidence": self.statistics.confidence,
                "correction": self.statistics.correction,
                "correction_scope": self.statistics.correction_scope,
                "verdict": self.statistics.verdict,
                "equivalence_margin": self.statistics.equivalence_margin,
                "added": self.added,
                "removed": self.removed,
                "overall": self.overall.to_dicts(),
                "cells": self.cells.to_dicts(),
                **({"depths": self.depths.to_dicts()} if self.depths is not None else {}),
            },
            indent=2,
            ensure_ascii=False,
        )


def _paired(after: pl.DataFrame, before: pl.DataFrame, datasets: list[str] | None = None) -> tuple[dict, dict, int]:
    """Per dataset, the values of both sides on their common queries, aligned by query id."""
    joined = after.join(before, on=CELL, how="inner", suffix="_b")
    if datasets is not None:
        joined = joined.filter(pl.col("dataset").is_in(datasets))
    joined = joined.sort("dataset", "query_id")
    a, b = {}, {}
    for (d,), part in joined.group_by("dataset", maintain_order=True):
        a[d], b[d] = part["value"].to_numpy(), part["value_b"].to_numpy()
    return a, b, joined.height


def compare_tables(
    after: pl.DataFrame,
    before: pl.DataFrame,
    pairs: list[tuple[str, str | None, str]],
    measure: str,
    statistics: Statistics,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The core: for each (after-system, versus, before-system) pair, every dataset × condition cell and the overall
    clean line. `after`/`before` are per-query tables (dataset, system, condition, query_id, measure, value).
    The cells are the configured conditions: the isolated robustness setting (`<condition>~isolated`) is left out.
    The cells' randomization p-values are adjusted across every cell (`correction_scope: table`) or each system's;
    the overall lines are one test each."""
    sel = (pl.col("measure") == measure) & ~pl.col("condition").str.contains("~", literal=True)
    after, before = after.filter(sel), before.filter(sel)
    cells, overall = [], []
    for system, versus, other in pairs:
        a_sys = after.filter(pl.col("system") == system).select(*CELL, "value")
        b_sys = before.filter(pl.col("system") == other).select(*CELL, "value")
        keys = (
            a_sys.select("dataset", "condition")
            .unique()
            .join(b_sys.select("dataset", "condition").unique(), on=["dataset", "condition"])
            .sort("dataset", "condition")
        )
        for d, c in keys.iter_rows():
            a, b, n = _paired(a_sys.filter(pl.col("condition") == c), b_sys.filter(pl.col("condition") == c), [d])
            if n:
                cells.append(_row(system, versus, d, c, n, a, b, statistics))
        a, b, n = _paired(a_sys.filter(pl.col("condition") == CLEAN), b_sys.filter(pl.col("condition") == CLEAN))
        if n:
            overall.append(_row(system, versus, "*", CLEAN, n, a, b, statistics))
    pairs = [(r[0], r[1]) for r, _ in cells]
    families = pairs if statistics.correction_scope == "pair" else [None] * len(cells)
    adjusted = adjust_families([r[-2] for r, _ in cells], families, statistics.correction)

    def frame(rows: list, adjusted, flags) -> pl.DataFrame:
        out = [
            [*row[:11], ci.judged(statistics.equivalence_margin, flag), row[11], float(q), row[12]]
            for (row, ci), q, flag in zip(rows, adjusted, flags)
        ]
        return pl.DataFrame(out, schema=COLUMNS, orient="row")

    unadjusted = [r[-2] for r, _ in overall]  # one test per system: its own interval, or its p
    one_each = statistics.model_copy(update={"holm": False})
    return (
        frame(cells, adjusted, significant([ci.p_value for _, ci in cells], adjusted, pairs, statistics)),
        frame(overall, unadjusted, significant([], unadjusted, [], one_each)),
    )


def _row(system, versus, dataset, condition, n, a, b, statistics: Statistics) -> tuple[list, Interval]:
    """One line of a comparison: its numbers (the verdict and the adjusted p-value come after) and its interval."""
    s = statistics
    ci = paired_difference(a, b, s.bootstrap_resamples, s.seed, s.confidence)
    diffs = differences(a, b)
    p = randomization(diffs, s.randomization_resamples, s.seed).p_value
    es = effect_size(np.concatenate(list(diffs.values())))
    means = (
        (float(b[dataset].mean()), float(a[dataset].mean())) if dataset != "*" else (balanced_mean(b), balanced_mean(a))
    )
    return [system, versus, dataset, condition, n, *means, ci.estimate, ci.low, ci.high, ci.p_value, p, es], ci


def compare_runs(
    before: Path, after: Path, measure: str | None = None, statistics: Statistics | None = None
) -> Comparison:
    """Every system the two folders share, cell by cell (after − before); systems only on one side are listed."""
    statistics = statistics or Statistics()
    old, new = ResultsFolder(before).per_query(), ResultsFolder(after).per_query()
    measure = measure or ResultsFolder(after).headline()
    for side, pq in (("before", old), ("after", new)):
        if measure not in set(pq["measure"].unique()):
            raise TeraziError(
                f"{side} folder has no {measure} values (has: {', '.join(sorted(pq['measure'].unique()))})"
            )
    old_s, new_s = (
        old["system"].unique(maintain_order=True).to_list(),
        new["system"].unique(maintain_order=True).to_list(),
    )
    shared = [s for s in new_s if s in old_s]
    cells, overall = compare_tables(new, old, [(s, None, s) for s in shared], measure, statistics)
    return Comparison(
        f"{Path(before).name} → {Path(after).name}",
        measure,
        cells,
        overall,
        [s for s in new_s if s not in old_s],
        [s for s in old_s if s not in new_s],
        statistics,
        compare_depths(before, after),
    )


def compare_depths(before: Path, after: Path) -> pl.DataFrame | None:
    """When both folders swept rerank depths (depths.csv): per reranker and depth both have, each run's headline,
    after − before, and whether the depth is each run's enough depth; None otherwise."""
    swept = [ResultsFolder(p).depths for p in (before, after)]
    if any(d is None for d in swept):
        return None
    old, new = (d.select("system", "depth", "mean", "enough") for d in swept)
    return old.join(new, on=["system", "depth"], how="inner", suffix="_after", maintain_order="right").select(
        "system",
        "depth",
        pl.col("mean").alias("before"),
        pl.col("mean_after").alias("after"),
        (pl.col("mean_after") - pl.col("mean")).alias("delta"),
        pl.col("enough").alias("enough_before"),
        "enough_after",
    )


def compare_systems(
    run: Path, a: str, b: str, measure: str | None = None, statistics: Statistics | None = None
) -> Comparison:
    """Two systems of one folder, cell by cell (a − b)."""
    statistics = statistics or Statistics()
    folder = ResultsFolder(run)
    pq, measure = folder.per_query(), measure or folder.headline()
    known = pq["system"].unique(maintain_order=True).to_list()
    missing = [s for s in (a, b) if s not in known]
    if missing:
        raise TeraziError(f"{run}: no system(s) {missing}; systems: {', '.join(known)}")
    cells, overall = compare_tables(pq, pq, [(a, b, b)], measure, statistics)
    return Comparison(f"{a} vs {b} in {Path(run).name}", measure, cells, overall, [], [], statistics)
