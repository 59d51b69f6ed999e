"""Ranking metrics under an explicit contract, vectorised over all queries at once.

Measures are named the ir-measures way: ``nDCG@10`` (linear gain, as trec_eval),
``nDCG(dcg='exp-log2')@10`` (gain 2^g − 1), ``RR@10`` (alias ``MRR@10``), ``R@100``, ``P@10``,
``AP@10`` / ``AP``, ``Judged@10``; ``(rel=2)`` sets the relevance threshold of the binary ones.

Conventions (see METHOD.md §3), all of them named in `Policies` and reported by `contract()`:
ties in a run are broken as trec_eval does (score descending, then document id descending);
an all-zero ideal DCG gives 0; P@k divides by k; R@k and AP divide by the number of relevant
documents in the judgments; Judged@k divides by the documents returned in the top k.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, Mapping

import numpy as np
import polars as pl

FAMILIES = ("nDCG", "RR", "R", "P", "AP", "Judged")
_ALIASES = {"MRR": "RR", "NDCG": "nDCG", "ndcg": "nDCG", "Recall": "R", "MAP": "AP"}
_NAME = re.compile(r"^(?P<family>[A-Za-z]+)(?:\((?P<params>[^)]*)\))?(?:@(?P<cutoff>.+))?$")


class MetricError(ValueError):
    """Invalid measure, judgments or run, with the reason."""


@dataclass(frozen=True)
class Measure:
    name: str
    family: str
    cutoff: int | None
    gain: str = "linear"
    rel: int = 1


def parse_measure(name: str) -> Measure:
    """`nDCG@10`, `nDCG(dcg='exp-log2')@10`, `RR(rel=2)@10`, `AP` … → Measure; clear error otherwise."""
    m = _NAME.match(name.strip())
    if not m:
        raise MetricError(f"cannot parse measure {name!r} (expected e.g. nDCG@10, RR@10, R@100)")
    family = _ALIASES.get(m["family"], m["family"])
    if family not in FAMILIES:
        raise MetricError(f"unknown measure {m['family']!r} in {name!r}; known: {', '.join(FAMILIES)} (MRR = RR)")
    cutoff = None
    if m["cutoff"] is not None:
        try:
            cutoff = int(m["cutoff"])
        except ValueError:
            raise MetricError(f"cutoff of {name!r} must be a positive integer, got {m['cutoff']!r}") from None
        if cutoff <= 0:
            raise MetricError(f"cutoff of {name!r} must be a positive integer, got {cutoff}")
    elif family not in ("AP",):
        raise MetricError(f"{name!r} needs a cutoff, e.g. {family}@10")
    gain, rel = "linear", 1
    for part in filter(None, (p.strip() for p in (m["params"] or "").split(","))):
        key, _, value = part.partition("=")
        key, value = key.strip(), value.strip().strip("'\"")
        if key == "dcg" and family == "nDCG":
            if value not in ("log2", "exp-log2"):
                raise MetricError(f"{name!r}: dcg must be 'log2' (linear gain) or 'exp-log2'")
            gain = "exponential" if value == "exp-log2" else "linear"
        elif key == "rel" and family != "nDCG":
            if not value.isdigit() or int(value) < 1:
                raise MetricError(f"{name!r}: rel must be a positive integer")
            rel = int(value)
        else:
            raise MetricError(f"{name!r}: unknown parameter {key!r} for {family}")
    return Measure(name.strip(), family, cutoff, gain, rel)


@dataclass(frozen=True)
class Policies:
    """What to do with the cases where conventions differ. Defaults follow `trec_eval -c`."""

    no_relevant: Literal["zero", "skip", "error"] = "zero"
    missing_query: Literal["zero", "skip"] = "zero"
    extra_query: Literal["ignore", "error"] = "ignore"
    unjudged: Literal["irrelevant", "error"] = "irrelevant"


@dataclass
class Evaluation:
    """Per-query values (aligned with `query_ids` per measure), means, and what each policy did."""

    query_ids: dict[str, list[str]]
    per_query: dict[str, np.ndarray]
    policies: Policies
    measures: dict[str, Measure]
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def aggregate(self) -> dict[str, float]:
        return {m: float(v.mean()) if len(v) else 0.0 for m, v in self.per_query.items()}

    def per_query_dict(self, measure: str) -> dict[str, float]:
        return dict(zip(self.query_ids[measure], self.per_query[measure].tolist()))

    def contract(self) -> dict[str, object]:
        p = self.policies
        return {
            "measures": {n: {"gain": m.gain, "relevance_threshold": m.rel, "cutoff": m.cutoff} for n, m in self.measures.items()},
            "no_relevant": p.no_relevant,
            "missing_query": p.missing_query,
            "extra_query": p.extra_query,
            "unjudged": p.unjudged,
            "zero_ideal": "score 0",
            "ties": "score descending, then document id descending (trec_eval)",
        }


def qrels_frame(qrels: Mapping[str, Mapping[str, int]] | pl.DataFrame) -> pl.DataFrame:
    """Judgments as (query_id, doc_id, grade), validated: integer grades ≥ 0, no duplicates."""
    if isinstance(qrels, pl.DataFrame):
        df = qrels.select("query_id", "doc_id", "grade")
    else:
        rows = [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
        df = pl.DataFrame(rows, schema={"query_id": pl.Utf8, "doc_id": pl.Utf8, "grade": pl.Object}, orient="row")
        bad = [(q, d, g) for q, d, g in rows if g is None or isinstance(g, bool) or not isinstance(g, (int, np.integer))]
        if bad:
            q, d, g = bad[0]
            what = "missing" if g is None else f"not an integer ({g!r})"
            raise MetricError(f"grade of query {q!r}, document {d!r} is {what}")
        df = df.with_columns(pl.Series("grade", [int(r[2]) for r in rows], dtype=pl.Int64))
    if df["grade"].null_count():
        row = df.filter(pl.col("grade").is_null()).row(0)
        raise MetricError(f"grade of query {row[0]!r}, document {row[1]!r} is missing")
    if not df["grade"].dtype.is_integer():
        raise MetricError(f"grades must be integers, got {df['grade'].dtype}")
    neg = df.filter(pl.col("grade") < 0)
    if neg.height:
        q, d, g = neg.row(0)
        raise MetricError(f"negative grade {g} for query {q!r}, document {d!r}")
    dup = df.filter(pl.struct("query_id", "doc_id").is_duplicated())
    if dup.height:
        q, d, _ = dup.row(0)
        raise MetricError(f"duplicate judgment for query {q!r}, document {d!r}")
    return df.with_columns(pl.col("grade").cast(pl.Int64))


def run_frame(run: Mapping[str, Mapping[str, float]] | pl.DataFrame) -> pl.DataFrame:
    """A run as (query_id, doc_id, score[, rank]); dict input is {qid: {doc_id: score}}."""
    if isinstance(run, pl.DataFrame):
        return run
    rows = [(q, d, float(s)) for q, docs in run.items() for d, s in docs.items()]
    return pl.DataFrame(rows, schema={"query_id": pl.Utf8, "doc_id": pl.Utf8, "score": pl.Float64}, orient="row")


def rank_run(run: pl.DataFrame, order: Literal["score", "rank"] = "score") -> pl.DataFrame:
    """Rank each query's documents: by score as trec_eval does, or by a given `rank` column."""
    dup = run.filter(pl.struct("query_id", "doc_id").is_duplicated())
    if dup.height:
        q, d = dup.row(0)[:2]
        raise MetricError(f"document {d!r} appears twice in the ranking of query {q!r}")
    if order == "rank":
        ranked = run.sort("query_id", "rank")
    else:
        ranked = run.sort(["query_id", "score", "doc_id"], descending=[False, True, True])
    return ranked.with_columns(pl.int_range(1, pl.len() + 1).over("query_id").alias("_pos"))


def evaluate(
    qrels: Mapping[str, Mapping[str, int]] | pl.DataFrame,
    run: Mapping[str, Mapping[str, float]] | pl.DataFrame,
    measures: list[str],
    policies: Policies = Policies(),
    order: Literal["score", "rank"] = "score",
) -> Evaluation:
    """Score a run against judgments; returns per-query values for every measure."""
    parsed = {m.name: m for m in map(parse_measure, measures)}
    q = qrels_frame(qrels)
    r = rank_run(run_frame(run), order)

    judged_q = q["query_id"].unique(maintain_order=True).to_list()
    run_q = set(r["query_id"].unique().to_list())
    judged_set = set(judged_q)
    extra = run_q - judged_set
    if extra and policies.extra_query == "error":
        raise MetricError(f"{len(extra)} queries in the run have no judgments, e.g. {sorted(extra)[0]!r}")
    missing = [x for x in judged_q if x not in run_q]
    qids = judged_q if policies.missing_query == "zero" else [x for x in judged_q if x in run_q]
    nq = len(qids)

    max_k = max((m.cutoff or 0) for m in parsed.values())
    if any(m.cutoff is None for m in parsed.values()):
        max_k = max(max_k, int(r["_pos"].max() or 0))
    max_k = max(max_k, 1)

    r = r.filter(pl.col("query_id").is_in(qids) & (pl.col("_pos") <= max_k))
    r = r.join(q, on=["query_id", "doc_id"], how="left")
    unjudged = int(r["grade"].null_count())
    if unjudged and policies.unjudged == "error":
        row = r.filter(pl.col("grade").is_null()).row(0, named=True)
        raise MetricError(f"document {row['doc_id']!r} retrieved for query {row['query_id']!r} is unjudged")

    qindex = pl.DataFrame({"query_id": qids, "_qi": np.arange(nq, dtype=np.int64)})
    r = r.join(qindex, on="query_id", how="left")
    qi, pos = r["_qi"].to_numpy(), r["_pos"].to_numpy().astype(np.int64) - 1
    grades = np.zeros((nq, max_k), dtype=np.float64)
    judged = np.zeros((nq, max_k), dtype=bool)
    returned = np.zeros((nq, max_k), dtype=bool)
    g = r["grade"].cast(pl.Float64).to_numpy()
    grades[qi, pos] = np.nan_to_num(g, nan=0.0)
    judged[qi, pos] = ~np.isnan(g)
    returned[qi, pos] = True

    qk = q.join(qindex, on="query_id", how="inner").sort(["_qi", "grade"], descending=[False, True])
    qk = qk.with_columns(pl.int_range(1, pl.len() + 1).over("_qi").alias("_pos"))
    ideal = np.zeros((nq, max_k), dtype=np.float64)
    iq = qk.filter(pl.col("_pos") <= max_k)
    ideal[iq["_qi"].to_numpy(), iq["_pos"].to_numpy().astype(np.int64) - 1] = iq["grade"].to_numpy()
    num_rel_by = {}

    values: dict[str, np.ndarray] = {}
    ids: dict[str, list[str]] = {}
    discount = 1.0 / np.log2(np.arange(2, max_k + 2))
    counts = {"queries_judged": len(judged_q), "queries_missing_from_run": len(missing),
              "queries_extra_in_run": len(extra), "unjudged_retrieved": unjudged}
    for name, m in parsed.items():
        k = m.cutoff or max_k
        if m.rel not in num_rel_by:
            num_rel_by[m.rel] = np.bincount(qk.filter(pl.col("grade") >= m.rel)["_qi"].to_numpy(), minlength=nq).astype(np.float64)
        num_rel = num_rel_by[m.rel]
        if m.family == "nDCG":
            gain = (lambda x: np.power(2.0, x) - 1.0) if m.gain == "exponential" else (lambda x: x)
            dcg = (gain(grades[:, :k]) * discount[:k]).sum(axis=1)
            idcg = (gain(ideal[:, :k]) * discount[:k]).sum(axis=1)
            v = np.divide(dcg, idcg, out=np.zeros(nq), where=idcg > 0)
        else:
            hit = grades[:, :k] >= m.rel
            if m.family == "RR":
                first = hit.argmax(axis=1)
                v = np.where(hit.any(axis=1), 1.0 / (first + 1), 0.0)
            elif m.family == "P":
                v = hit.sum(axis=1) / k
            elif m.family == "R":
                v = np.divide(hit.sum(axis=1), num_rel, out=np.zeros(nq), where=num_rel > 0)
            elif m.family == "AP":
                prec = np.cumsum(hit, axis=1) / np.arange(1, k + 1)
                v = np.divide((prec * hit).sum(axis=1), num_rel, out=np.zeros(nq), where=num_rel > 0)
            else:  # Judged
                n_ret = returned[:, :k].sum(axis=1)
                v = np.divide(judged[:, :k].sum(axis=1), n_ret, out=np.zeros(nq), where=n_ret > 0)
        keep = np.ones(nq, dtype=bool)
        no_rel = num_rel == 0
        counts[f"{name}:no_relevant"] = int(no_rel.sum())
        if no_rel.any() and policies.no_relevant == "error":
            raise MetricError(f"{int(no_rel.sum())} queries have no relevant document for {name}, e.g. {qids[int(no_rel.argmax())]!r}")
        if policies.no_relevant == "skip":
            keep &= ~no_rel
        values[name] = v[keep]
        ids[name] = [x for x, k_ in zip(qids, keep) if k_]
    return Evaluation(ids, values, policies, parsed, counts)

