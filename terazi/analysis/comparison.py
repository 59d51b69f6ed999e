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

import polars as pl

from terazi.analysis.stats import balanced_mean, holm_reject, paired_difference
from terazi.base.errors import TeraziError
from terazi.schemas.results_folder import ResultsFolder
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
}


@dataclass(frozen=True)
class Comparison:
    """`cells`: one row per (system, dataset, condition); `overall`: one row per system (dataset = '*').

    For two folders, `before`/`after` are the two runs' means and `delta` = after − before; for two systems of one
    folder, `before` is the second system (`versus`), `after` the first, and `delta` = first − second."""

    title: str
    measure: str
    cells: pl.DataFrame
    overall: pl.DataFrame
    added: list[str]
    removed: list[str]
    confidence: float
    correction: str
    depths: pl.DataFrame | None = None  # two folders that both swept rerank depths: `compare_depths`

    def changed(self) -> pl.DataFrame:
        """Cells where anything moved: a significant verdict or a non-zero delta."""
        return self.cells.filter((pl.col("verdict") != "no difference") | (pl.col("delta").abs() > 1e-12))

    def significant(self) -> pl.DataFrame:
        return self.cells.filter(pl.col("verdict") != "no difference")

    def unchanged_systems(self) -> list[str]:
        moved = set(self.changed()["system"])
        return [s for s in self.overall["system"].to_list() if s not in moved]

    def to_json(self) -> str:
        return json.dumps(
            {
                "title": self.title,
                "measure": self.measure,
                "confidence": self.confidence,
                "correction": self.correction,
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
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    holm: bool = False,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The core: for each (after-system, versus, before-system) pair, every dataset × condition cell and the overall
    clean line. `after`/`before` are per-query tables (dataset, system, condition, query_id, measure, value).
    The cells are the configured conditions: the isolated robustness setting (`<condition>~isolated`) is left out."""
    sel = (pl.col("measure") == measure) & ~pl.col("condition").str.contains("~", literal=True)
    after, before = after.filter(sel), before.filter(sel)
    cells, overall = [], []
    for system, versus, other in pairs:
        a_sys = after.filter(pl.col("system") == system).select(*CELL, "value")
        b_sys = before.filter(pl.col("system") == other).select(*CELL, "value")
        rows = []
        keys = (
            a_sys.select("dataset", "condition")
            .unique()
            .join(b_sys.select("dataset", "condition").unique(), on=["dataset", "condition"])
            .sort("dataset", "condition")
        )
        for d, c in keys.iter_rows():
            a, b, n = _paired(a_sys.filter(pl.col("condition") == c), b_sys.filter(pl.col("condition") == c), [d])
            if not n:
                continue
            ci = paired_difference(a, b, resamples, seed, confidence)
            rows.append(
                (
                    [
                        system,
                        versus,
                        d,
                        c,
                        n,
                        float(b[d].mean()),
                        float(a[d].mean()),
                        ci.estimate,
                        ci.low,
                        ci.high,
                        ci.p_value,
                    ],
                    ci,
                )
            )
        flags = (
            holm_reject([ci.p_value for _, ci in rows], 1 - confidence) if holm else [ci.significant for _, ci in rows]
        )
        cells += [r + [ci.verdict(f)] for (r, ci), f in zip(rows, flags)]
        a, b, n = _paired(a_sys.filter(pl.col("condition") == CLEAN), b_sys.filter(pl.col("condition") == CLEAN))
        if n:
            ci = paired_difference(a, b, resamples, seed, confidence)
            overall.append(
                [
                    system,
                    versus,
                    "*",
                    CLEAN,
                    n,
                    balanced_mean(b),
                    balanced_mean(a),
                    ci.estimate,
                    ci.low,
                    ci.high,
                    ci.p_value,
                    ci.verdict(),
                ]
            )
    frame = lambda rows: pl.DataFrame(rows, schema=COLUMNS, orient="row")  # noqa: E731
    return frame(cells), frame(overall)


def compare_runs(
    before: Path,
    after: Path,
    measure: str | None = None,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    holm: bool = False,
) -> Comparison:
    """Every system the two folders share, cell by cell (after − before); systems only on one side are listed."""
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
    cells, overall = compare_tables(
        new, old, [(s, None, s) for s in shared], measure, resamples, seed, confidence, holm
    )
    return Comparison(
        f"{Path(before).name} → {Path(after).name}",
        measure,
        cells,
        overall,
        [s for s in new_s if s not in old_s],
        [s for s in old_s if s not in new_s],
        confidence,
        "Holm across each system's cells" if holm else "none",
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
    run: Path,
    a: str,
    b: str,
    measure: str | None = None,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    holm: bool = False,
) -> Comparison:
    """Two systems of one folder, cell by cell (a − b)."""
    folder = ResultsFolder(run)
    pq, measure = folder.per_query(), measure or folder.headline()
    known = pq["system"].unique(maintain_order=True).to_list()
    missing = [s for s in (a, b) if s not in known]
    if missing:
        raise TeraziError(f"{run}: no system(s) {missing}; systems: {', '.join(known)}")
    cells, overall = compare_tables(pq, pq, [(a, b, b)], measure, resamples, seed, confidence, holm)
    return Comparison(
        f"{a} vs {b} in {Path(run).name}",
        measure,
        cells,
        overall,
        [],
        [],
        confidence,
        "Holm across the cells" if holm else "none",
    )
