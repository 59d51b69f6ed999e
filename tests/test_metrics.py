"""Metric contract: METHOD.md's worked example, exhaustive orderings, rejections, and pytrec_eval."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from terazi.base.errors import MetricError
from terazi.metrics.contracts import CONTRACTS, Policies
from terazi.metrics.engine import evaluate
from terazi.schemas.measures import parse_measure

GRADES = {"A": 3, "B": 2, "C": 1, "D": 0}
L3 = math.log2(3)


def ranked(order: str) -> dict[str, float]:
    return {d: float(len(order) - i) for i, d in enumerate(order)}


def worked_example():
    qrels = {"Q1": GRADES, "Q2": GRADES, "Q3": {d: 0 for d in GRADES}}
    run = {"Q1": ranked("DABC"), "Q2": ranked("ACBD"), "Q3": ranked("ABCD")}
    return qrels, run


def test_worked_example_values():
    qrels, run = worked_example()
    ev = evaluate(qrels, run, ["RR@3", "nDCG@3"])
    ideal = 3 + 2 / L3 + 1 / 2
    assert ev.per_query_dict("RR@3") == {"Q1": 0.5, "Q2": 1.0, "Q3": 0.0}
    nd = ev.per_query_dict("nDCG@3")
    assert nd["Q1"] == pytest.approx((3 / L3 + 2 / 2) / ideal, abs=1e-12)
    assert nd["Q2"] == pytest.approx((3 + 1 / L3 + 2 / 2) / ideal, abs=1e-12)
    assert round(nd["Q1"], 4) == 0.6075 and round(nd["Q2"], 4) == 0.9725
    assert nd["Q3"] == 0.0
    assert ev.aggregate["RR@3"] == 0.5
    assert ev.counts["RR@3:no_relevant"] == 1


def test_worked_example_skip_policy():
    qrels, run = worked_example()
    ev = evaluate(qrels, run, ["RR@3"], Policies(no_relevant="skip"))
    assert ev.aggregate["RR@3"] == 0.75
    assert ev.query_ids["RR@3"] == ["Q1", "Q2"]
    assert ev.contract()["no_relevant"] == "skip"


def test_worked_example_error_policy():
    qrels, run = worked_example()
    with pytest.raises(MetricError, match="no relevant document"):
        evaluate(qrels, run, ["RR@3"], Policies(no_relevant="error"))


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_all_orderings_stay_in_unit_interval_and_hit_one_only_when_ideal(k):
    perms = ["".join(p) for p in itertools.permutations("ABCD")]
    qrels = {p: GRADES for p in perms}
    run = {p: ranked(p) for p in perms}
    ev = evaluate(qrels, run, [f"nDCG@{k}"])
    ideal_top = [GRADES[d] for d in "ABCD"][:k]
    for p, v in ev.per_query_dict(f"nDCG@{k}").items():
        assert 0.0 <= v <= 1.0
        is_ideal = [GRADES[d] for d in p[:k]] == ideal_top
        assert (v == pytest.approx(1.0, abs=1e-12)) == is_ideal, p


@pytest.mark.parametrize(
    "name, message",
    [
        ("nDCG@0", "positive integer"),
        ("nDCG@-3", "positive integer"),
        ("nDCG@2.5", "positive integer"),
        ("P", "needs a cutoff"),
        ("R", "needs a cutoff"),  # nDCG without one is trec_eval's ndcg: the whole ranking
        ("Foo@10", "unknown measure"),
        ("nDCG(dcg='cubic')@10", "dcg must be"),
        ("R(rel=0)@10", "rel must be"),
    ],
)
def test_invalid_measures_are_rejected(name, message):
    with pytest.raises(MetricError, match=message):
        parse_measure(name)


@pytest.mark.parametrize(
    "qrels, run, message",
    [
        ({"q": {"a": -1}}, {"q": {"a": 1.0}}, "negative grade"),
        ({"q": {"a": None}}, {"q": {"a": 1.0}}, "missing"),
        ({"q": {"a": 1.5}}, {"q": {"a": 1.0}}, "not an integer"),
        ({"q": {"a": 1}}, {"q": {"b": 1.0}}, None),  # unjudged: allowed under the TREC default
    ],
)
def test_invalid_judgments(qrels, run, message):
    if message is None:
        assert evaluate(qrels, run, ["nDCG@3"]).counts["unjudged_retrieved"] == 1
        with pytest.raises(MetricError, match="unknown document id 'b' in the ranking of query 'q'.*unjudged=error"):
            evaluate(qrels, run, ["nDCG@3"], Policies(unjudged="error"))
    else:
        with pytest.raises(MetricError, match=message):
            evaluate(qrels, run, ["nDCG@3"])


def test_duplicate_document_in_ranking_is_rejected():
    import polars as pl

    run = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "a"], "score": [1.0, 0.5]})
    with pytest.raises(MetricError, match="appears twice"):
        evaluate({"q": {"a": 1}}, run, ["RR@10"])


def test_missing_and_extra_queries_policies():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": {"a": 1.0}, "q3": {"c": 1.0}}
    ev = evaluate(qrels, run, ["RR@10"])
    assert ev.per_query_dict("RR@10") == {"q1": 1.0, "q2": 0.0}
    assert ev.counts["queries_missing_from_run"] == 1 and ev.counts["queries_extra_in_run"] == 1
    assert evaluate(qrels, run, ["RR@10"], Policies(missing_query="skip")).per_query_dict("RR@10") == {"q1": 1.0}
    with pytest.raises(MetricError, match="no judgments"):
        evaluate(qrels, run, ["RR@10"], Policies(extra_query="error"))


def test_exponential_gain_is_its_own_contract():
    qrels, run = worked_example()
    ev = evaluate(qrels, run, ["nDCG@3", "nDCG(dcg='exp-log2')@3"])
    ideal = 7 + 3 / L3 + 1 / 2
    assert ev.per_query_dict("nDCG(dcg='exp-log2')@3")["Q1"] == pytest.approx((7 / L3 + 3 / 2) / ideal)
    assert ev.contract()["measures"]["nDCG(dcg='exp-log2')@3"]["gain"] == "exponential"


# --- property test against pytrec_eval (trec_eval) ------------------------------------------------

docs = [f"d{i}" for i in range(12)]


@st.composite
def qrels_and_run(draw):
    n_q = draw(st.integers(1, 6))
    qrels, run = {}, {}
    for q in range(n_q):
        qid = f"q{q}"
        judged = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=8, unique=True))
        qrels[qid] = {d: draw(st.integers(0, 3)) for d in judged}
        retrieved = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=10, unique=True))
        # coarse scores make ties common; unjudged documents appear often
        run[qid] = {d: float(draw(st.integers(0, 4))) for d in retrieved}
    return qrels, run


TREC = {"ndcg_cut.{k}": "nDCG@{k}", "P.{k}": "P@{k}", "recall.{k}": "R@{k}", "map_cut.{k}": "AP@{k}"}


@settings(max_examples=150, deadline=None)
@given(qrels_and_run(), st.sampled_from([1, 3, 5, 10]))
def test_matches_pytrec_eval(data, k):
    qrels, run = data
    trec_measures = {m.format(k=k) for m in TREC} | {"recip_rank", "map"}
    ref = pytrec_eval.RelevanceEvaluator(qrels, trec_measures).evaluate(run)
    ours = evaluate(qrels, run, [m.format(k=k) for m in TREC.values()] + ["RR@1000", "AP", f"RR@{k}"])
    for trec, name in list(TREC.items()) + [("recip_rank", "RR@1000"), ("map", "AP")]:
        t = trec.format(k=k).replace(".", "_") if "{k}" in trec else trec
        n = name.format(k=k)
        got = ours.per_query_dict(n)
        for qid, values in ref.items():
            assert got[qid] == pytest.approx(values[t], abs=1e-9), (n, qid, qrels[qid], run[qid])
    # trec_eval's recip_rank has no cutoff: RR@k equals it when the first hit is within the top k
    for qid, values in ref.items():
        expected = values["recip_rank"] if values["recip_rank"] >= 1 / k - 1e-12 else 0.0
        assert ours.per_query_dict(f"RR@{k}")[qid] == pytest.approx(expected, abs=1e-9)


def test_vectorised_over_many_queries():
    rng = np.random.default_rng(0)
    qrels = {f"q{i}": {f"d{j}": int(rng.integers(0, 3)) for j in range(5)} for i in range(300)}
    run = {f"q{i}": {f"d{j}": float(rng.random()) for j in range(20)} for i in range(300)}
    ev = evaluate(qrels, run, ["nDCG@10"])
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    assert np.allclose(ev.per_query["nDCG@10"], [ref[q]["ndcg_cut_10"] for q in ev.query_ids["nDCG@10"]], atol=1e-12)


# --- named contracts: trec (default) and strict (the metric note) ------------------------------------


def test_contracts_are_named_documented_data():
    assert set(CONTRACTS) == {"trec", "strict"} and all(c.summary for c in CONTRACTS.values())
    assert Policies() == CONTRACTS["trec"].policies and Policies().label == "trec"
    strict = Policies.of("strict")
    assert strict.label == "strict" and strict.unjudged == "error" and strict.nan_score == "error"
    assert Policies.of("strict", unjudged="irrelevant").label == "strict, changed: unjudged=irrelevant"
    qrels, run = worked_example()
    assert evaluate(qrels, run, ["RR@3"], strict).contract()["contract"] == "strict"
    with pytest.raises(MetricError, match="unknown contract 'lenient'"):
        Policies.of("lenient")


def test_strict_equals_trec_on_valid_input():
    qrels, run = worked_example()
    trec, strict = (evaluate(qrels, run, ["RR@3", "nDCG@3", "AP"], p) for p in (Policies(), Policies.of("strict")))
    assert trec.aggregate == strict.aggregate


def _with_rank(run: dict[str, dict[str, float]], ranks: dict[tuple[str, str], int]):
    import polars as pl

    rows = [(q, d, s, ranks[q, d]) for q, docs in run.items() for d, s in docs.items()]
    return pl.DataFrame(rows, schema=["query_id", "doc_id", "score", "rank"], orient="row")


@pytest.mark.parametrize(
    "case",
    [
        "unknown document id",
        "repeated rank",
        "None grade",
        "NaN grade",
        "NaN score",
        "None score",
        "cutoff nDCG@3_0",
        "run query without judgments",
    ],
)
def test_strict_rejects_with_the_query_and_document_named(case):
    qrels = {"q1": {"a": 2, "b": 0}, "q2": {"c": 1}}
    run = {"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 1.0}}
    measures, strict = ["nDCG@3"], Policies.of("strict")
    if case == "unknown document id":
        run["q1"]["zz"] = 0.5
        expected = "unknown document id 'zz' in the ranking of query 'q1'"
    elif case == "repeated rank":
        run = _with_rank(run, {("q1", "a"): 1, ("q1", "b"): 1, ("q2", "c"): 1})
        expected = "rank 1 appears more than once in the ranking of query 'q1' \\(documents 'a', 'b'"
    elif case == "None grade":
        qrels["q1"]["b"] = None
        expected = "grade of query 'q1', document 'b' is missing"
    elif case == "NaN grade":
        import polars as pl

        qrels = pl.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "c"], "grade": [2.0, math.nan, 1.0]})
        expected = "grade of query 'q1', document 'b' is not an integer \\(nan\\)"
    elif case == "NaN score":
        run["q1"]["b"] = math.nan
        expected = "score of query 'q1', document 'b' is NaN"
    elif case == "None score":
        run["q2"]["c"] = None
        expected = "score of query 'q2', document 'c' is missing"
    elif case == "cutoff nDCG@3_0":
        measures, expected = ["nDCG@3_0"], "plain positive integer"
    else:
        run["q9"] = {"a": 1.0}
        expected = "queries in the run have no judgments, e.g. 'q9'"
    with pytest.raises(MetricError, match=expected):
        evaluate(qrels, run, measures, strict)


def test_trec_accepts_what_strict_rejects_except_invalid_values():
    qrels = {"q1": {"a": 2, "b": 0}}
    ok = evaluate(
        qrels,
        _with_rank({"q1": {"a": 2.0, "b": 1.0, "zz": 0.5}}, {("q1", "a"): 1, ("q1", "b"): 1, ("q1", "zz"): 2}),
        ["nDCG@3"],
    )
    assert ok.counts["unjudged_retrieved"] == 1 and ok.aggregate["nDCG@3"] == 1.0
    for bad in ({"q1": {"a": None}}, {"q1": {"a": "high"}}):  # a missing or non-numeric score is never a ranking
        with pytest.raises(MetricError, match="score of query 'q1', document 'a' is"):
            evaluate(qrels, bad, ["nDCG@3"])


def test_nan_scores_rank_last_under_trec():
    # trec_eval compares scores with < and >, which NaN defeats: its order is then undefined (pytrec_eval put the
    # top-scored relevant document 4th in one such run). terazi ranks NaN below every number and counts it.
    qrels = {"q": {"a": 1, "b": 0, "c": 0, "d": 0}}
    run = {"q": {"a": 3.0, "b": math.nan, "c": 2.0, "d": math.nan}}
    ev = evaluate(qrels, run, ["RR@10", "nDCG@2"])
    assert ev.per_query_dict("RR@10") == {"q": 1.0} and ev.counts["nan_scores"] == 2
    qrels_nan_relevant = {"q": {"a": 0, "b": 1, "c": 0, "d": 1}}
    ev = evaluate(qrels_nan_relevant, run, ["RR@10"])
    # ranking a(3) c(2) d(NaN) b(NaN): NaNs tie and fall back to document id descending, as -inf would in trec_eval
    low = {"q": {d: (-1e300 if math.isnan(s) else s) for d, s in run["q"].items()}}
    ref = pytrec_eval.RelevanceEvaluator(qrels_nan_relevant, {"recip_rank"}).evaluate(low)
    assert ev.per_query_dict("RR@10")["q"] == ref["q"]["recip_rank"] == pytest.approx(1 / 3)
    assert evaluate(qrels_nan_relevant, run, ["RR@10"]).contract()["nan_score"].startswith("rank last")


def test_negative_zero_ties_with_zero_as_in_trec_eval():
    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": {"a": -0.0, "b": 0.0}}  # tie: document id descending puts b first
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
    assert evaluate(qrels, run, ["RR"]).per_query_dict("RR")["q"] == ref["q"]["recip_rank"] == 0.5


# --- (query, document) keys are 64-bit hashes; collisions must never change a number --------------------


def _weak_key(entropy):
    import polars as pl

    from terazi.metrics import engine as metrics

    def key(unjudged_queries=False):
        query = pl.coalesce(pl.col("qi").cast(pl.UInt64), pl.col("query_id").hash(seed=2))
        return entropy(pl.col("doc_id")) + query * metrics._MIX

    return key


@settings(max_examples=40, deadline=None)
@given(qrels_and_run())
def test_colliding_keys_between_judged_documents_fall_back_to_exact_matching(data):
    from terazi.metrics import engine as metrics

    qrels, run = data
    names = ["nDCG@5", "RR", "AP", "R@10", "Judged@5"]
    expected = evaluate(qrels, run, names)
    original = metrics._pair_key
    metrics._pair_key = _weak_key(lambda d: d.hash(seed=0) % 2)  # two keys per query: nearly everything collides
    try:
        got = evaluate(qrels, run, names)
    finally:
        metrics._pair_key = original
    assert all(got.per_query_dict(m) == expected.per_query_dict(m) for m in names)
    assert got.counts == expected.counts


def test_an_unjudged_document_colliding_with_a_judged_one_stays_unjudged(monkeypatch):
    from terazi.metrics import engine as metrics

    monkeypatch.setattr(metrics, "_pair_key", _weak_key(lambda d: d.str.head(1).hash(seed=0)))  # key = first letter
    qrels = {"q": {"a1": 0, "b1": 3}}
    run = {"q": {"b2": 3.0, "a2": 2.0, "b1": 1.0}}  # b2 and a2 share keys with judged b1 and a1
    ev = evaluate(qrels, run, ["RR@10", "Judged@3"])
    assert ev.per_query_dict("RR@10") == {"q": 1 / 3} and ev.per_query_dict("Judged@3") == {"q": 1 / 3}
    assert ev.counts["unjudged_retrieved"] == 2
    with pytest.raises(MetricError, match="unknown document id 'a2' in the ranking of query 'q'"):
        evaluate(qrels, run, ["RR@10"], Policies.of("strict"))
    with pytest.raises(MetricError, match="document 'b1' appears twice"):
        import polars as pl

        evaluate(
            qrels,
            pl.DataFrame({"query_id": ["q"] * 3, "doc_id": ["b1", "b2", "b1"], "score": [1.0, 2.0, 3.0]}),
            ["RR@10"],
        )


def test_row_order_of_the_run_does_not_matter():
    # a run in rank order is used as it is; shuffled or with queries interleaved it is sorted; ties need the doc id
    import polars as pl

    rng = np.random.default_rng(7)
    rows = [(f"q{q}", f"d{d}", float(rng.integers(0, 5))) for q in range(30) for d in rng.choice(60, 20, replace=False)]
    qrels = {f"q{q}": {f"d{d}": int(rng.integers(0, 3)) for d in rng.choice(60, 15, replace=False)} for q in range(30)}
    frame = pl.DataFrame(rows, schema=["query_id", "doc_id", "score"], orient="row")
    ranked = frame.sort(["query_id", "score"], descending=[False, True])  # ties left in input order
    names = ["nDCG@5", "AP", "RR", "P@10", "Judged@10"]
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.5", "map", "recip_rank", "P.10"}).evaluate(
        {q: dict(zip(g["doc_id"], g["score"])) for (q,), g in frame.group_by("query_id")}
    )
    results = [evaluate(qrels, f, names) for f in (ranked, frame.sample(fraction=1.0, shuffle=True, seed=1), frame)]
    for ev in results:
        assert ev.per_query_dict("AP") == results[0].per_query_dict("AP")
        assert ev.counts == results[0].counts
        for q, v in ref.items():
            assert ev.per_query_dict("nDCG@5")[q] == pytest.approx(v["ndcg_cut_5"], abs=1e-12)
            assert ev.per_query_dict("RR")[q] == pytest.approx(v["recip_rank"], abs=1e-12)
