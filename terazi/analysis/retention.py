"""Retention with intervals, per dataset, and where a loss comes from, from the per-query table.

Input: per-query rows (dataset, system, condition, query_id, measure, value, changed) of one measure, as in
terazi.analysis.intervals; a condition's values are paired with the clean ones on the queries it changed. With several
samples of a condition per query (`samples`: their per-sample values), the retention's interval is also drawn from a
two-level bootstrap (terazi.analysis.two_level).
"""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl

from terazi.analysis.intervals import Subset, aligned, by_cell
from terazi.analysis.stats import Aggregation, Interval, balanced_mean, paired_difference, ratio_interval
from terazi.analysis.two_level import two_level_ratio
from terazi.schemas.tables import CLEAN, END_TO_END, ISOLATED, isolated, setting_of
from terazi.store.bootstraps import BootstrapStore

AGGREGATION_LABELS = {
    "macro": "mean over datasets of each dataset's ratio (corrupted / clean over its changed queries), as the "
    "Kalbur card",
    "pooled": "ratio of the dataset-balanced means (mean corrupted / mean clean over the changed queries)",
}


def _changed(pq: pl.DataFrame, condition: str, datasets: list[str]) -> tuple[int, Subset]:
    """How many (dataset, query) pairs `condition` changed, and dataset -> their query ids."""
    rows = (
        pq.filter((pl.col("condition") == condition) & pl.col("changed") & pl.col("dataset").is_in(datasets))
        .select("dataset", "query_id")
        .unique()
    )
    return rows.height, {
        d: part["query_id"] for (d,), part in rows.partition_by("dataset", as_dict=True, include_key=False).items()
    }


def _corrupted(pq: pl.DataFrame, conditions: list[str], datasets: list[str]) -> Iterator[tuple]:
    """Each condition of `conditions` but clean: (condition, its base condition, its setting, `_changed`'s count and
    query ids)."""
    for c in conditions:
        if c != CLEAN:
            yield (c, *setting_of(c), *_changed(pq, c, datasets))


RETENTION_SCHEMA = {
    "system": pl.Utf8,
    "condition": pl.Utf8,
    "setting": pl.Utf8,
    "aggregation": pl.Utf8,
    "datasets": pl.Int64,
    "changed_queries": pl.Int64,
    "share_changed": pl.Float64,
    CLEAN: pl.Float64,
    "corrupted": pl.Float64,
    "retention": pl.Float64,
    "retention_low": pl.Float64,
    "retention_high": pl.Float64,
    "delta": pl.Float64,
    "delta_low": pl.Float64,
    "delta_high": pl.Float64,
}


def retention_intervals(
    pq: pl.DataFrame,
    datasets: list[str],
    conditions: list[str],
    resamples: int,
    seed: int,
    confidence: float,
    aggregation: Aggregation = "macro",
    *,
    known: BootstrapStore | None = None,
    samples: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Per system × condition, over the queries the condition changed: retention (corrupted / clean) with its
    interval from the dataset-balanced paired bootstrap, and the difference corrupted − clean with its interval.
    With `samples` (per-sample rows of the conditions with several: dataset, system, condition, sample, query_id,
    value), also `SAMPLES_SCHEMA`'s columns: each such condition's two-level interval and the samples' share of its
    variance (terazi.analysis.two_level); null for a condition with one sample, absent without `samples`.

    `aggregation` (see AGGREGATION_LABELS) decides how datasets combine, in the estimate and in every resample
    alike. A pseudo-condition `c~isolated` is the isolated setting of `c` (its clean reference is `clean`).
    `clean`/`corrupted` are dataset-balanced means over the changed queries; `datasets` counts the datasets
    that contribute (those where the condition changed a query and, for macro, the clean mean is not 0).
    """
    systems = pq["system"].unique(maintain_order=True).to_list()
    cells = by_cell(pq, datasets)
    rows = []
    for c, base, setting, n_changed, changed in _corrupted(pq, conditions, datasets):
        n_all = (
            pq.filter((pl.col("condition") == c) & pl.col("dataset").is_in(datasets))
            .select("dataset", "query_id")
            .unique()
            .height
        )
        for s in systems:
            corrupted = aligned(cells, s, c, only=changed)
            if not corrupted:
                rows.append((s, base, setting, aggregation, 0, 0, 0.0, *[None] * 8))
                continue
            clean = aligned(cells, s, CLEAN, only=changed)
            ratio = ratio_interval(corrupted, clean, resamples, seed, confidence, aggregation, known=known)
            ci: Interval = paired_difference(corrupted, clean, resamples, seed, confidence, known=known)
            rows.append(
                (
                    s,
                    base,
                    setting,
                    aggregation,
                    ratio.datasets,
                    n_changed,
                    n_changed / n_all if n_all else 0.0,
                    balanced_mean(clean),
                    balanced_mean(corrupted),
                    ratio.estimate,
                    ratio.low,
                    ratio.high,
                    ci.estimate,
                    ci.low,
                    ci.high,
                )
            )
    out = pl.DataFrame(rows, schema=RETENTION_SCHEMA, orient="row")
    if samples is None or samples.height == 0:
        return out
    by_sample = sample_cells(samples, datasets)
    extra = []
    for r in out.iter_rows(named=True):
        c = r["condition"] if r["setting"] == END_TO_END else isolated(r["condition"])
        matrices = by_sample.get((r["system"], c))
        if matrices is None or r["retention"] is None:
            extra.append((1 if matrices is None else next(iter(matrices.values()))[1].shape[1], None, None, None))
            continue
        _, changed = _changed(pq, c, datasets)
        num = {d: m[ids.is_in(changed[d].implode()).to_numpy()] for d, (ids, m) in matrices.items() if d in changed}
        den = aligned(cells, r["system"], CLEAN, only=changed)
        two = two_level_ratio(num, den, resamples, seed, confidence, aggregation, known=known)
        extra.append((next(iter(num.values())).shape[1], two.low, two.high, two.share))
    return pl.concat([out, pl.DataFrame(extra, schema=SAMPLES_SCHEMA, orient="row")], how="horizontal")


SAMPLES_SCHEMA = {
    "samples": pl.Int64,
    "retention_low_two_level": pl.Float64,
    "retention_high_two_level": pl.Float64,
    "samples_share": pl.Float64,
}


def sample_cells(samples: pl.DataFrame, datasets: list[str]) -> dict[tuple[str, str], dict[str, tuple]]:
    """(system, condition) -> dataset -> (query ids, queries × samples values), sorted by query id as `by_cell`."""
    rows = samples.filter(pl.col("dataset").is_in(datasets)).sort("dataset", "query_id", "sample")
    out: dict[tuple[str, str], dict[str, tuple]] = {}
    for (s, c, d), part in rows.partition_by(
        "system", "condition", "dataset", as_dict=True, include_key=False, maintain_order=True
    ).items():
        ids, k = part["query_id"].unique(maintain_order=True), part["sample"].n_unique()
        if ids.len() * k != part.height:
            raise ValueError(f"{s} on {d} under {c}: not every query has each of the {k} samples")
        out.setdefault((s, c), {})[d] = (ids, part["value"].to_numpy().reshape(ids.len(), k))
    return out


def retention_by_dataset(pq: pl.DataFrame, datasets: list[str], conditions: list[str]) -> pl.DataFrame:
    """Per system × condition × dataset: the card's R_d = mean corrupted / mean clean over the changed queries."""
    cells = by_cell(pq, datasets)
    rows = []
    for c, base, setting, _, changed in _corrupted(pq, conditions, datasets):
        for s in pq["system"].unique(maintain_order=True).to_list():
            corrupted, clean = aligned(cells, s, c, only=changed), aligned(cells, s, CLEAN, only=changed)
            for d in datasets:
                if d in corrupted:
                    m_clean, m_corr = float(clean[d].mean()), float(corrupted[d].mean())
                    rows.append(
                        (
                            s,
                            base,
                            setting,
                            d,
                            corrupted[d].size,
                            m_clean,
                            m_corr,
                            m_corr / m_clean if m_clean > 0 else None,
                        )
                    )
    return pl.DataFrame(
        rows,
        schema={
            "system": pl.Utf8,
            "condition": pl.Utf8,
            "setting": pl.Utf8,
            "dataset": pl.Utf8,
            "changed_queries": pl.Int64,
            CLEAN: pl.Float64,
            "corrupted": pl.Float64,
            "retention": pl.Float64,
        },
        orient="row",
    )


def decomposition(retention: pl.DataFrame, recall: pl.DataFrame | None) -> pl.DataFrame:
    """Where a system's loss under each condition comes from: end-to-end retention (corrupted query through
    first stage and reranker), reranker-only retention (the isolated setting: the clean query's candidates
    reordered with the corrupted text) and the first stage's recall retention (`recall`: a retention table of
    the first stage's recall at the rerank depth, end to end), each with its interval."""
    cols = ["retention", "retention_low", "retention_high"]

    def part(setting: str, prefix: str) -> pl.DataFrame:
        sel = retention.filter(pl.col("setting") == setting).select("system", "condition", *cols)
        return sel.rename({c: c.replace("retention", prefix) for c in cols})

    out = part(END_TO_END, "end_to_end").join(part(ISOLATED, "reranker_only"), on=["system", "condition"], how="left")
    if recall is not None and recall.height:
        r = recall.filter(pl.col("setting") == END_TO_END).select("condition", *cols)
        out = out.join(
            r.rename({c: c.replace("retention", "first_stage_recall") for c in cols}), on="condition", how="left"
        )
    else:
        out = out.with_columns(
            *[pl.lit(None, pl.Float64).alias(c.replace("retention", "first_stage_recall")) for c in cols]
        )
    return out
