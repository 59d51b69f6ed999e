"""Ranking metrics under an explicit contract (`terazi.metrics.contracts`), vectorised over all queries at once.

Judged queries become integer codes and (query, document) pairs 64-bit keys; document strings are only read where
two scores tie. Only judged rows carry gain, so once ranked every measure is one aggregation over the judged rows of
each query: its family's (the names: `terazi.schemas.measures`; the aggregations:
`terazi.metrics.families`). Judgments and runs are read and checked first (`terazi.metrics.frames`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import polars as pl

from terazi.base.errors import MetricError
from terazi.metrics.contracts import CONTRACTS, Policies
from terazi.metrics.families import FAMILY
from terazi.metrics.frames import check_run, qrels_frame, run_frame
from terazi.schemas import Measure, parse_measure

if TYPE_CHECKING:
    import numpy as np


@dataclass
class Evaluation:
    """Per-query values (aligned with `query_ids` per measure), means, and what each policy did."""

    query_ids: dict[str, list[str]]
    values: dict[str, pl.Series]
    policies: Policies
    measures: dict[str, Measure]
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def per_query(self) -> dict[str, np.ndarray]:
        return {m: v.to_numpy() for m, v in self.values.items()}

    @property
    def aggregate(self) -> dict[str, float]:
        return {m: float(v.mean()) if len(v) else 0.0 for m, v in self.values.items()}

    def per_query_dict(self, measure: str) -> dict[str, float]:
        return dict(zip(self.query_ids[measure], self.values[measure].to_list()))

    def contract(self) -> dict[str, object]:
        p = self.policies
        return {
            "contract": p.label,
            "measures": {
                n: {"canonical": m.canonical, "gain": m.gain, "relevance_threshold": m.rel, "cutoff": m.cutoff}
                for n, m in self.measures.items()
            },
            "no_relevant": p.no_relevant,
            "missing_query": p.missing_query,
            "extra_query": p.extra_query,
            "unjudged": p.unjudged,
            "nan_score": "rank last (below every number)" if p.nan_score == "last" else "error",
            "repeated_rank": p.repeated_rank,
            "zero_ideal": "score 0",
            "ties": "score descending, then document id descending (trec_eval)",
        }

    @property
    def queries(self) -> dict[str, object]:
        """What each policy met: queries judged, missing from the run, extra in it; unjudged documents retrieved, NaN
        scores; per measure, the queries evaluated and those without a relevant document."""
        c = self.counts
        return {
            "judged": c["queries_judged"],
            "missing_from_run": c["queries_missing_from_run"],
            "extra_in_run": c["queries_extra_in_run"],
            "unjudged_documents": c["unjudged_retrieved"],
            "nan_scores": c["nan_scores"],
            "evaluated": {m: len(self.query_ids[m]) for m in self.measures},
            "no_relevant": {m: c[f"{m}:no_relevant"] for m in self.measures},
        }

    def sentence(self) -> str:
        """The contract in one sentence, with what each of its policies met (printed under every `terazi score`)."""
        p, q = self.policies, self.queries
        return (
            f"contract {p.label}: {CONTRACTS[p.preset].summary}. Judged queries {q['judged']}; missing from run "
            f"{q['missing_from_run']} ({p.missing_query}); run queries without judgments {q['extra_in_run']} "
            f"({p.extra_query}); unjudged documents retrieved {q['unjudged_documents']} ({p.unjudged}); NaN "
            f"scores {q['nan_scores']} ({'ranked last' if p.nan_score == 'last' else 'error'}); ties: score desc, "
            "then doc id desc; ideal DCG 0 → 0"
        )


def _within(group: str) -> pl.Expr:
    """0-based position of each row within its run of equal `group` values (groups contiguous): `pos`."""
    start = pl.when(pl.col(group).ne_missing(pl.col(group).shift())).then(pl.int_range(pl.len())).forward_fill()
    return (pl.int_range(pl.len()) - start).alias("pos")


_MIX = 0x9E3779B97F4A7C15  # odd: distinct query codes never map one document to one key


def _pair_key(unjudged_queries: bool = False) -> pl.Expr:
    """(query, document) → a 64-bit key: the document's hash plus the query's code `qi` times an odd constant
    (with `unjudged_queries`, a hash of the query id stands in where `qi` is null).

    Equal pairs always share a key; distinct pairs rarely do, and `evaluate` re-checks every case exactly
    (duplicates against the strings, matched judgments by their document ids), so no result depends on luck.
    """
    query = pl.col("qi").cast(pl.UInt64)
    if unjudged_queries:
        query = pl.coalesce(query, pl.col("query_id").hash(seed=2))
    return pl.col("doc_id").hash(seed=0) + query * _MIX


def _duplicate(frame: pl.DataFrame) -> tuple[str, str] | None:
    dup = frame.filter(pl.struct("query_id", "doc_id").is_duplicated())
    return dup.sort("query_id", "doc_id").select("query_id", "doc_id").row(0) if dup.height else None


def _trec_order(rr: pl.DataFrame, doc: Callable[[pl.Series], pl.Series]) -> pl.DataFrame:
    """`rr` ordered by query (`qi`), `score` descending, then document id descending (trec_eval's rule, bytewise);
    a missing `score` (NaN in the run) comes after every number, −∞ included.

    Queries need only be contiguous, not sorted: a run file written in rank order is used as it is and a
    numeric sort on (query, score) handles any other; then only rows tied on both are sorted again with
    their document ids (`doc` gives the ids of given `_row`s), so no other string is touched.
    """
    starts, score, before = pl.col("qi").ne_missing(pl.col("qi").shift()), pl.col("score"), pl.col("score").shift()
    descending = pl.when(before.is_null()).then(score.is_null()).otherwise(score.is_null() | (score <= before))
    ranked, blocks, queries = rr.select(
        (starts | descending).all().alias("a"), starts.sum().alias("b"), pl.col("qi").n_unique().alias("c")
    ).row(0)
    s = rr if ranked and blocks == queries else rr.sort(["qi", "score"], descending=[False, True], nulls_last=True)
    same = ((pl.col("qi") == pl.col("qi").shift(1)) & score.eq_missing(before)).fill_null(False)
    ties = s.select((same | same.shift(-1, fill_value=False)).alias("tied"), (~same).cum_sum().alias("group"))
    if ties["tied"].any():
        at = ties["tied"].arg_true()
        sub = s.filter(ties["tied"]).with_columns(ties["group"].filter(ties["tied"]))
        sub = sub.with_columns(doc(sub["_row"]).alias("_doc")).sort(["group", "_doc"], descending=[False, True])
        s = s.with_columns(s[c].clone().scatter(at, sub[c]) for c in s.columns if c not in ("qi", "score"))
    return s


def evaluate(
    qrels: Mapping[str, Mapping[str, int]] | pl.DataFrame,
    run: Mapping[str, Mapping[str, float]] | pl.DataFrame,
    measures: list[str],
    policies: Policies | None = None,
    order: Literal["score", "rank"] = "score",
) -> Evaluation:
    """Score a run against judgments; returns per-query values for every measure.

    Judged queries become integer codes (a polars Enum; other run queries are set aside) and (query,
    document) pairs 64-bit keys; document strings are only read where two scores tie. Only judged rows
    carry gain, so once ranked every measure is one aggregation over the judged rows of each query.
    """
    policies = policies or Policies()
    parsed = {m.name: m for m in map(parse_measure, measures)}
    q = qrels_frame(qrels)
    r = run_frame(run)
    nan_scores = check_run(r, policies)

    judged = q["query_id"].unique(maintain_order=True)
    nq = judged.len()
    qcode = pl.col("query_id").cast(pl.Enum(judged), strict=False).to_physical().cast(pl.Int64)  # null: not judged
    qk = q.with_columns(qcode.alias("qi")).select(
        "qi",
        _pair_key().alias("k"),
        "grade",
        pl.col("grade").max().over("qi").alias("top"),
        pl.int_range(pl.len()).alias("_qrow"),
    )
    on = ["k"]
    if qk["k"].n_unique() < qk.height:
        if (dup := _duplicate(q)) is not None:
            raise MetricError("duplicate judgment for query {!r}, document {!r}".format(*dup))
        on = ["k", "doc_id"]  # two judged documents share a key: match them exactly
        qk = qk.with_columns(q["doc_id"])
    qi = r.select(qcode).to_series()
    rr = (
        r.lazy()
        .with_columns(qi.alias("qi"))
        .select(
            "qi",
            _pair_key(qi.null_count() > 0).alias("k"),
            pl.col("score").fill_nan(None) + 0.0,
            *(["rank"] if order == "rank" else []),
            pl.int_range(pl.len()).alias("_row"),
        )
        .collect()
    )
    if rr["k"].n_unique() < rr.height and (dup := _duplicate(r)) is not None:
        raise MetricError("document {1!r} appears twice in the ranking of query {0!r}".format(*dup))
    extra = r.filter(qi.is_null())["query_id"].unique().sort() if qi.null_count() else pl.Series([], dtype=pl.Utf8)
    if extra.len():
        if policies.extra_query == "error":
            raise MetricError(
                f"{extra.len()} queries in the run have no judgments, e.g. {extra[0]!r} "
                f"(extra_query=error under contract {policies.label})"
            )
        rr = rr.filter(pl.col("qi").is_not_null())

    # judged rows: a key lookup for every row, then the (few) matches joined and checked against their ids
    rr = rr.with_columns(pl.col("k").is_in(qk["k"].implode()).alias("_j"))
    jr = rr.filter("_j").select("_row", "k")
    if len(on) > 1:
        jr = jr.with_columns(r["doc_id"].gather(jr["_row"]))
    jr = jr.join(qk.select(*on, "grade", "top", "_qrow"), on=on)
    jr = jr.filter(r["doc_id"].gather(jr["_row"]) == q["doc_id"].gather(jr["_qrow"]))  # drop key collisions
    if jr.height < rr["_j"].sum():
        rr = rr.with_columns(pl.col("_row").is_in(jr["_row"].implode()).alias("_j"))
    if policies.unjudged == "error" and not rr["_j"].all():
        query, doc = r.gather(rr.filter(~pl.col("_j"))["_row"]).sort("query_id", "doc_id").row(0)[:2]
        raise MetricError(
            f"unknown document id {doc!r} in the ranking of query {query!r}: it has no judgment for that "
            f"query (unjudged=error under contract {policies.label})"
        )
    rr = rr.select("qi", "score", "_j", "_row", *(["rank"] if order == "rank" else []))
    rr = rr.sort("qi", "rank") if order == "rank" else _trec_order(rr, r["doc_id"].gather)
    rr = rr.select("qi", "_j", "_row", _within("qi"))

    present = rr["qi"].n_unique()
    keep = (
        pl.int_range(nq, eager=True, dtype=pl.Int64) if policies.missing_query == "zero" else rr["qi"].unique().sort()
    )
    qids = judged.gather(keep).to_list()
    whole = any(m.cutoff is None for m in parsed.values())
    depth = max((m.cutoff or 0) for m in parsed.values())
    unjudged = rr.select((~pl.col("_j") & (pl.lit(whole) | (pl.col("pos") < depth))).sum()).item()
    counts = {
        "queries_judged": nq,
        "queries_missing_from_run": nq - present,
        "queries_extra_in_run": extra.len(),
        "unjudged_retrieved": unjudged,
        "nan_scores": nan_scores,
    }

    # one aggregation over judged rows (j) and one over the ideal ordering of the judgments (i)
    j = rr.filter("_j").join(jr.select("_row", "grade", "top"), on="_row", maintain_order="left")  # in rank order
    i = (
        qk.select("qi", "grade", "top")
        .filter(pl.col("grade") > 0)
        .sort(["qi", "grade"], descending=[False, True])
        .with_columns(_within("qi"))
    )
    j_aggs, i_aggs, values_of, rels = [], [], {}, set()
    for n, (name, m) in enumerate(parsed.items()):
        rel = f"rel{m.rel}"
        if rel not in rels:
            rels.add(rel)
            i_aggs.append((pl.col("grade") >= m.rel).sum().alias(rel))
        judged_aggs, ideal_aggs, value = FAMILY[m.family](m, n, rel)
        j_aggs += judged_aggs
        i_aggs += ideal_aggs
        values_of[name] = (value.fill_null(0.0).cast(pl.Float64), pl.col(rel) == 0)
    table = keep.to_frame("qi")
    if j.height:
        table = table.join(j.group_by("qi").agg(j_aggs), on="qi", how="left", maintain_order="left")
    else:
        table = table.with_columns(pl.lit(None, pl.Float64).alias(e.meta.output_name()) for e in j_aggs)
    table = table.join(i.group_by("qi").agg(i_aggs), on="qi", how="left", maintain_order="left")
    if any(m.family == "Judged" for m in parsed.values()):
        table = table.join(rr.group_by("qi").len(), on="qi", how="left", maintain_order="left")
    table = table.with_columns(pl.exclude("qi").fill_null(0))

    values: dict[str, pl.Series] = {}
    ids: dict[str, list[str]] = {}
    for name, (value, no_rel_expr) in values_of.items():
        v, no_rel = table.select(value.alias("v"), no_rel_expr.alias("none")).get_columns()
        counts[f"{name}:no_relevant"] = n_none = int(no_rel.sum())
        if n_none and policies.no_relevant == "error":
            raise MetricError(
                f"{n_none} queries have no relevant document for {name}, e.g. {qids[no_rel.arg_true()[0]]!r}"
            )
        if n_none and policies.no_relevant == "skip":
            values[name] = v.filter(~no_rel)
            ids[name] = [x for x, skip in zip(qids, no_rel.to_list()) if not skip]
        else:
            values[name], ids[name] = v, qids
    return Evaluation(ids, values, policies, parsed, counts)
