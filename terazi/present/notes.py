"""Sentences read off the results: where a retention above 100% comes from, the featured system's significant
cells, a judged variant's verdict as the card writes it."""

from __future__ import annotations

import polars as pl

from terazi.present.labels import (
    WORDS,
    ci_label,
    condition_label,
    interval,
    percent,
    rate,
    ratio_text,
    signed,
    size_text,
    word,
)
from terazi.schemas.statistics import DEFAULTS


def variant_sentence(j, labels: str = "en", confidence: float = DEFAULTS.confidence) -> str:
    """The card's sentence: `int8 sürüm: benchmark alt kümesinde (1000 sorgu) nDCG@10 farkı +0.0000 (%95 GA
    [-0.0035, +0.0035]), δ = 0.01 içinde eşdeğer`, then the speed and size ratios."""
    text = (
        f"{j.label}: {word('subset', labels, n=j.queries)} {word('difference', labels, measure=j.measure)} "
        f"{signed(j.delta)} ({ci_label(labels, confidence)} {interval(j.low, j.high, signed)})"
    )
    if j.verdict in WORDS[labels]:  # a folder written before the equivalence test says "no difference": no verdict
        text += ", " + word(j.verdict, labels, margin=j.margin)
    b, v = j.base_cost, j.variant_cost
    if j.speed_ratio is not None:
        text += f"; {word('speed_word', labels)} " + ratio_text(
            b.per_second, v.per_second, rate, " " + word(b.unit + "/s", labels)
        )
    if j.size_ratio is not None:
        text += f"; {word('size_word', labels)} " + ratio_text(b.size_bytes, v.size_bytes, size_text)
    return text + "."


def explain(decomp: pl.DataFrame, order: list[str], conditions: list[str], k: int, first_stage: str) -> list[str]:
    """Sentences read off the decomposition: where a retention above 100% comes from, and where a loss is the
    candidate pool's alone (the reranker keeps 100% on the clean candidates)."""
    by = {(r["system"], r["condition"]): r for r in decomp.iter_rows(named=True)}
    out = []
    for s in order:
        for c in conditions:
            r = by.get((s, c))
            if r is None:
                continue
            iso, rec = r["reranker_only"], r["first_stage_recall"]
            if r["end_to_end"] is not None and r["end_to_end"] < 1 and iso is not None and iso >= 1:
                pool = f" (first-stage recall@{k} retention {percent(rec)})" if rec is not None else ""
                out.append(
                    f"{s}, {c}: {percent(r['end_to_end'])} end to end but {percent(iso)} reranker only. The "
                    f"reranker loses nothing with the corrupted text on the clean candidates: the loss comes "
                    f"from the candidate pool{pool}."
                )
            for key, label in (("end_to_end", "end to end"), ("reranker_only", "reranker only")):
                v, lo, hi = r[key], r[f"{key}_low"], r[f"{key}_high"]
                if v is None or v <= 1:
                    continue
                why = []
                if key == "reranker_only":
                    why.append("on the same clean candidates the reranker ranks better with the corrupted text")
                elif s == first_stage:
                    why.append(
                        "this row is the first stage's own ranking: the encoder matches the corrupted text at "
                        "least as well as the clean text"
                    )
                elif iso is not None and iso <= 1:
                    why.append(
                        f"reranker only {percent(iso)}: the gain comes from the candidate pool, not the reranker"
                    )
                elif iso is not None:
                    why.append(
                        f"reranker only {percent(iso)}: the reranker itself ranks better with the corrupted text"
                    )
                if key == "end_to_end" and rec is not None and rec > 1:
                    why.append(
                        f"first-stage recall@{k} retention {percent(rec)}: the corrupted queries' candidates hold "
                        "more relevant documents"
                    )
                if lo is not None and lo <= 1 <= hi:
                    why.append(f"interval {interval(lo, hi, percent)} includes 100%: not a significant gain")
                text = "; ".join(why or ["no cause found in the decomposition"])
                out.append(f"{s}, {c}: {percent(v)} {label}. {text[0].upper()}{text[1:]}.")
    return out


def featured_lines(
    cells: pl.DataFrame,
    featured: str,
    conditions_order: list[str],
    datasets_order: list[str],
    labels: str,
    others: list[str],
) -> list[str]:
    """The card's list: for each other system, the significantly better and worse cells with their deltas,
    e.g. `vs seroe: significantly better: msmarco-tr/Mobil (+0.012), …`."""
    lines = []
    rank = {(d, c): i for i, (d, c) in enumerate((d, c) for d in datasets_order for c in conditions_order)}
    for other in others:
        part = cells.filter(pl.col("versus") == other)
        if not part.height:
            continue
        texts = {}
        for verdict in ("better", "worse"):
            sig = sorted(
                (r for r in part.iter_rows(named=True) if r["verdict"] == verdict),
                key=lambda r: rank.get((r["dataset"], r["condition"]), 1 << 30),
            )
            texts[verdict] = ", ".join(
                f"{r['dataset']}/{condition_label(r['condition'], labels)} ({r['delta']:+.3f})" for r in sig
            ) or word("none", labels)
        same = part.filter(pl.col("verdict") == "no difference").height
        lines.append(
            f"{featured} vs {other}: {word('better', labels)}: {texts['better']}; "
            f"{word('worse', labels)}: {texts['worse']}; {word('same', labels, n=same, total=part.height)}."
        )
    return lines


def dropped_line(datasets) -> str | None:
    """The contract's line on the documents every first stage left out of a query's ranking (BEIR's and MTEB's
    ignore_identical_ids, BRIGHT's excluded_ids), per dataset that left any out; None when none did."""
    parts = [
        f"{d.name}: {d.n_dropped} (query, document) pairs ("
        + (
            "a document whose id is the query's, ignore_identical_ids as BEIR and MTEB; "
            if d.ignore_identical_ids
            else ""
        )
        + "the queries' excluded_ids)"
        for d in datasets
        if d.ignore_identical_ids or d.n_dropped
    ]
    return "; ".join(parts) or None
