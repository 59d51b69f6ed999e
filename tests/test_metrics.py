"""Metric contract: METHOD.md's worked example, exhaustive orderings, rejections, and pytrec_eval."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from terazi.metrics import MetricError, Policies, evaluate, parse_measure

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


@pytest.mark.parametrize("name, message", [
    ("nDCG@0", "positive integer"),
    ("nDCG@-3", "positive integer"),
    ("nDCG@2.5", "positive integer"),
    ("RR", "needs a cutoff"),
    ("Foo@10", "unknown measure"),
    ("nDCG(dcg='cubic')@10", "dcg must be"),
    ("R(rel=0)@10", "rel must be"),
])
def test_invalid_measures_are_rejected(name, message):
    with pytest.raises(MetricError, match=message):
        parse_measure(name)


@pytest.mark.parametrize("qrels, run, message", [
    ({"q": {"a": -1}}, {"q": {"a": 1.0}}, "negative grade"),
    ({"q": {"a": None}}, {"q": {"a": 1.0}}, "missing"),
    ({"q": {"a": 1.5}}, {"q": {"a": 1.0}}, "not an integer"),
    ({"q": {"a": 1}}, {"q": {"b": 1.0}}, None),  # unjudged: allowed under the TREC default
])
def test_invalid_judgments(qrels, run, message):
    if message is None:
        assert evaluate(qrels, run, ["nDCG@3"]).counts["unjudged_retrieved"] == 1
        with pytest.raises(MetricError, match="unjudged"):
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
