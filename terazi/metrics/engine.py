"""Ranking metrics under an explicit contract (`terazi.metrics.contracts`), vectorised over all queries at once.

Judged queries become integer codes and (query, document) pairs 64-bit keys; document strings are only read where
two scores tie. Only judged rows carry gain, so once ranked every measure is one aggregation over the judged rows of
each query (the measure families: `terazi.schemas.measures`).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import polars as pl

from terazi.errors import MetricError
from terazi.metrics.contracts import CONTRACTS, Policies
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
            "measures": {n: {"canonical": m.canonical, "gain": m.gain, "relevance_threshold": m.rel, "cutoff": m.cutoff}
                         for n, m in self.measures.items()},
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
        return {"judged": c["queries_judged"], "missing_from_run": c["queries_missing_from_run"],
                "extra_in_run": c["queries_extra_in_run"], "unjudged_documents": c["unjudged_retrieved"],
                "nan_scores": c["nan_scores"], "evaluated": {m: len(self.query_ids[m]) for m in self.measures},
                "no_relevant": {m: c[f"{m}:no_relevant"] for m in self.measures}}

    def sentence(self) -> str:
        """The contract in one sentence, with what each of its policies met (printed under every `terazi score`)."""
        p, q = self.policies, self.queries
        return (f"contract {p.label}: {CONTRACTS[p.preset].summary}. Judged queries {q['judged']}; missing from run "
                f"{q['missing_from_run']} ({p.missing_query}); run queries without judgments {q['extra_in_run']} "
                f"({p.extra_query}); unjudged documents retrieved {q['unjudged_documents']} ({p.unjudged}); NaN "
                f"scores {q['nan_scores']} ({'ranked last' if p.nan_score == 'last' else 'error'}); ties: score desc, "
                "then doc id desc; ideal DCG 0 → 0")


def _is_int(x: object) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def qrels_frame(qrels: Mapping[str, Mapping[str, int]] | pl.DataFrame) -> pl.DataFrame:
    """Judgments as (query_id, doc_id, grade), validated: integer grades ≥ 0 (duplicates are checked in `evaluate`)."""
    if isinstance(qrels, pl.DataFrame):
        df = qrels.select(pl.col("query_id").cast(pl.Utf8), pl.col("doc_id").cast(pl.Utf8), "grade")
    else:
        rows = [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
        bad = [(q, d, g) for q, d, g in rows if not _is_int(g)]
        if bad:
            q, d, g = bad[0]
            what = "missing" if g is None else f"not an integer ({g!r})"
            raise MetricError(f"grade of query {q!r}, document {d!r} is {what}")
        df = pl.DataFrame({"query_id": [r[0] for r in rows], "doc_id": [r[1] for r in rows],
                           "grade": [int(r[2]) for r in rows]},
                          schema={"query_id": pl.Utf8, "doc_id": pl.Utf8, "grade": pl.Int64})
    if df["grade"].null_count():
        row = df.filter(pl.col("grade").is_null()).row(0)
        raise MetricError(f"grade of query {row[0]!r}, document {row[1]!r} is missing")
    if df["grade"].dtype.is_float():
        bad = df.filter(pl.col("grade").is_nan() | (pl.col("grade") != pl.col("grade").round(0)))
        if bad.height:
            q, d, g = bad.row(0)
            raise MetricError(f"grade of query {q!r}, document {d!r} is not an integer ({g!r})")
    elif not df["grade"].dtype.is_integer():
        raise MetricError(f"grades must be integers, got {df['grade'].dtype}")
    neg = df.filter(pl.col("grade") < 0)
    if neg.height:
        q, d, g = neg.row(0)
        raise MetricError(f"negative grade {g} for query {q!r}, document {d!r}")
    return df.with_columns(pl.col("grade").cast(pl.Int64))


def run_frame(run: Mapping[str, Mapping[str, float]] | pl.DataFrame) -> pl.DataFrame:
    """A run as (query_id, doc_id, score[, rank]); dict input is {qid: {doc_id: score}}. Missing scores are errors."""
    if isinstance(run, pl.DataFrame):
        lacking = [c for c in ("query_id", "doc_id", "score") if c not in run.columns]
        if lacking:
            raise MetricError(f"the run lacks column(s) {lacking}")
        if not run["score"].dtype.is_numeric():
            raise MetricError(f"run scores must be numbers, got {run['score'].dtype}")
        df = run.with_columns(pl.col("query_id").cast(pl.Utf8), pl.col("doc_id").cast(pl.Utf8),
                              pl.col("score").cast(pl.Float64))
    else:
        rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
        for q, d, s in rows:
            if not isinstance(s, numbers.Real) or isinstance(s, bool):
                what = "missing" if s is None else f"not a number ({s!r})"
                raise MetricError(f"score of query {q!r}, document {d!r} is {what}")
        df = pl.DataFrame({"query_id": [r[0] for r in rows], "doc_id": [r[1] for r in rows],
                           "score": [float(r[2]) for r in rows]},
                          schema={"query_id": pl.Utf8, "doc_id": pl.Utf8, "score": pl.Float64})
    if df["score"].null_count():
        q, d = df.filter(pl.col("score").is_null()).select("query_id", "doc_id").row(0)
        raise MetricError(f"score of query {q!r}, document {d!r} is missing")
    return df


def _check_run(r: pl.DataFrame, policies: Policies) -> int:
    """Apply the NaN-score and repeated-rank policies; returns the number of NaN scores."""
    nan = int(r["score"].is_nan().sum())
    if nan and policies.nan_score == "error":
        q, d = r.filter(pl.col("score").is_nan()).select("query_id", "doc_id").row(0)
        raise MetricError(f"score of query {q!r}, document {d!r} is NaN (nan_score=error under contract "
                          f"{policies.label})")
    if policies.repeated_rank == "error" and "rank" in r.columns:
        if r["rank"].null_count():
            q, d = r.filter(pl.col("rank").is_null()).select("query_id", "doc_id").row(0)
            raise MetricError(f"rank of query {q!r}, document {d!r} is missing "
                              f"(repeated_rank=error under contract {policies.label})")
        if r.select(pl.struct("query_id", "rank").n_unique()).item() < r.height:
            dup = r.filter(pl.struct("query_id", "rank").is_duplicated()).sort("query_id", "rank", "doc_id")
            q, k = dup.select("query_id", "rank").row(0)
            docs = dup.filter((pl.col("query_id") == q) & (pl.col("rank") == k))["doc_id"].to_list()
            raise MetricError(f"rank {k} appears more than once in the ranking of query {q!r} "
                              f"(documents {', '.join(map(repr, docs))}; "
                              f"repeated_rank=error under contract {policies.label})")
    return nan


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
    ranked, blocks, queries = rr.select((starts | descending).all().alias("a"),
                                        starts.sum().alias("b"), pl.col("qi").n_unique().alias("c")).row(0)
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
    nan_scores = _check_run(r, policies)

    judged = q["query_id"].unique(maintain_order=True)
    nq = judged.len()
    qcode = pl.col("query_id").cast(pl.Enum(judged), strict=False).to_physical().cast(pl.Int64)  # null: not judged
    qk = q.with_columns(qcode.alias("qi")).select("qi", _pair_key().alias("k"), "grade",
                                                  pl.col("grade").max().over("qi").alias("top"),
                                                  pl.int_range(pl.len()).alias("_qrow"))
    on = ["k"]
    if qk["k"].n_unique() < qk.height:
        if (dup := _duplicate(q)) is not None:
            raise MetricError("duplicate judgment for query {!r}, document {!r}".format(*dup))
        on = ["k", "doc_id"]  # two judged documents share a key: match them exactly
        qk = qk.with_columns(q["doc_id"])
    qi = r.select(qcode).to_series()
    rr = r.lazy().with_columns(qi.alias("qi")).select(
        "qi", _pair_key(qi.null_count() > 0).alias("k"), pl.col("score").fill_nan(None) + 0.0,
        *(["rank"] if order == "rank" else []), pl.int_range(pl.len()).alias("_row")).collect()
    if rr["k"].n_unique() < rr.height and (dup := _duplicate(r)) is not None:
        raise MetricError("document {1!r} appears twice in the ranking of query {0!r}".format(*dup))
    extra = r.filter(qi.is_null())["query_id"].unique().sort() if qi.null_count() else pl.Series([], dtype=pl.Utf8)
    if extra.len():
        if policies.extra_query == "error":
            raise MetricError(f"{extra.len()} queries in the run have no judgments, e.g. {extra[0]!r} "
                              f"(extra_query=error under contract {policies.label})")
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
        raise MetricError(f"unknown document id {doc!r} in the ranking of query {query!r}: it has no judgment for that "
                          f"query (unjudged=error under contract {policies.label})")
    rr = rr.select("qi", "score", "_j", "_row", *(["rank"] if order == "rank" else []))
    rr = rr.sort("qi", "rank") if order == "rank" else _trec_order(rr, r["doc_id"].gather)
    rr = rr.select("qi", "_j", "_row", _within("qi"))

    present = rr["qi"].n_unique()
    keep = (pl.int_range(nq, eager=True, dtype=pl.Int64) if policies.missing_query == "zero"
            else rr["qi"].unique().sort())
    qids = judged.gather(keep).to_list()
    whole = any(m.cutoff is None for m in parsed.values())
    depth = max((m.cutoff or 0) for m in parsed.values())
    unjudged = rr.select((~pl.col("_j") & (pl.lit(whole) | (pl.col("pos") < depth))).sum()).item()
    counts = {"queries_judged": nq, "queries_missing_from_run": nq - present,
              "queries_extra_in_run": extra.len(), "unjudged_retrieved": unjudged, "nan_scores": nan_scores}

    # one aggregation over judged rows (j) and one over the ideal ordering of the judgments (i)
    j = rr.filter("_j").join(jr.select("_row", "grade", "top"), on="_row", maintain_order="left")  # in rank order
    i = qk.select("qi", "grade", "top").filter(pl.col("grade") > 0).sort(["qi", "grade"], descending=[False, True]) \
        .with_columns(_within("qi"))
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
            raise MetricError(f"{n_none} queries have no relevant document for {name}, e.g. "
                              f"{qids[no_rel.arg_true()[0]]!r}")
        if n_none and policies.no_relevant == "skip":
            values[name] = v.filter(~no_rel)
            ids[name] = [x for x, skip in zip(qids, no_rel.to_list()) if not skip]
        else:
            values[name], ids[name] = v, qids
    return Evaluation(ids, values, policies, parsed, counts)


# ---------------------------------------------------------------- the families, one entry each
# Each gives, for measure `m` (its n-th): aggregations over a query's judged rows in rank order (`pos`, 0-based;
# `grade`), aggregations over its ideal ordering (judgments with grade > 0, best first), and the per-query value from
# those columns (`v{n}`, `ideal{n}`, `rel` = relevant judgments at the threshold, `len` = documents returned). Both
# row sets also carry `top`, the query's highest grade.

def _top(m: Measure) -> pl.Expr:
    return pl.col("pos") < m.cutoff if m.cutoff else pl.lit(True)


def _hit(m: Measure) -> pl.Expr:
    return (pl.col("grade") >= m.rel) & _top(m)


def _ndcg(m: Measure, n: int, rel: str):
    g = pl.col("grade").cast(pl.Float64)
    if m.gain == "exponential":
        # (2^g − 1) / 2^top: DCG and its ideal scaled by one power of two, so their ratio is bit for bit the unscaled
        # one, and no grade overflows (2^g is infinite from g = 1024, and ∞ / ∞ is NaN)
        top = pl.col("top").cast(pl.Float64)
        g = 2.0 ** (g - top) - 2.0 ** (-top)
    dcg = (g / (pl.col("pos") + 2).log(2)).filter(_top(m)).sum()
    return [dcg.alias(f"v{n}")], [dcg.alias(f"ideal{n}")], \
        pl.when(pl.col(f"ideal{n}") > 0).then(pl.col(f"v{n}") / pl.col(f"ideal{n}"))


def _judged(m: Measure, n: int, rel: str):  # judged among the returned top k
    value = pl.when(pl.col("len") > 0).then(pl.col(f"v{n}") / pl.min_horizontal("len", m.cutoff))
    return [_top(m).sum().alias(f"v{n}")], [], value


def _rr(m: Measure, n: int, rel: str):
    return [(1.0 / (pl.col("pos").filter(_hit(m)).min() + 1)).alias(f"v{n}")], [], pl.col(f"v{n}")


def _p(m: Measure, n: int, rel: str):
    return [_hit(m).sum().alias(f"v{n}")], [], pl.col(f"v{n}") / m.cutoff


def _r(m: Measure, n: int, rel: str):
    return [_hit(m).sum().alias(f"v{n}")], [], pl.when(pl.col(rel) > 0).then(pl.col(f"v{n}") / pl.col(rel))


def _ap(m: Measure, n: int, rel: str):  # the i-th relevant document, at rank p, adds precision i / p
    hit = _hit(m)
    return [(hit.cum_sum() / (pl.col("pos") + 1)).filter(hit).sum().alias(f"v{n}")], [], \
        pl.when(pl.col(rel) > 0).then(pl.col(f"v{n}") / pl.col(rel))


FAMILY: dict[str, Callable] = {"nDCG": _ndcg, "Judged": _judged, "RR": _rr, "P": _p, "R": _r, "AP": _ap}
