"""Measure names: plain cutoffs, the neighbours' spellings (ranx, trec_eval) as aliases that give the same numbers,
names without an equivalent refused with the reason, and every family of the grammar computed by the engine."""

from __future__ import annotations

import pytest
import pytrec_eval
from hypothesis import given, settings

from terazi.base.errors import MetricError
from terazi.metrics.engine import evaluate
from terazi.metrics.families import FAMILY
from terazi.schemas.measures import FAMILIES, parse_measure
from tests.test_metrics import qrels_and_run


def test_every_family_of_the_grammar_has_its_computation():
    assert set(FAMILY) == set(FAMILIES)


@pytest.mark.parametrize(
    "name",
    [
        "nDCG@3_0",
        "nDCG@+3",
        "nDCG@ 3",
        "nDCG@03",
        "nDCG@3.0",
        "nDCG@٣",
        "nDCG@",
        "RR@1e1",
        "ndcg_cut_03",
        "P_+5",
        "R(rel=1_0)@10",
    ],
)
def test_cutoffs_are_plain_positive_integers(name):
    # int() accepts '3_0', '+3', ' 3', '03' and the Arabic-Indic '٣'; a measure name must not
    with pytest.raises(MetricError, match="plain positive integer|rel must be"):
        parse_measure(name)


# --- the neighbours' names: ranx and trec_eval spellings ------------------------------------------------

ALIASES = {
    "mrr@10": "RR@10",
    "MRR@10": "RR@10",
    "mrr": "RR",
    "recip_rank": "RR",
    "map@100": "AP@100",
    "map": "AP",
    "MAP": "AP",
    "map_cut_100": "AP@100",
    "map_cut.100": "AP@100",
    "recall@100": "R@100",
    "Recall@100": "R@100",
    "recall_100": "R@100",
    "recall.100": "R@100",
    "precision@5": "P@5",
    "P_5": "P@5",
    "P.5": "P@5",
    "ndcg": "nDCG",
    "ndcg@10": "nDCG@10",
    "NDCG@10": "nDCG@10",
    "ndcg_cut_10": "nDCG@10",
    "ndcg_cut.10": "nDCG@10",
    "ndcg_burges@10": "nDCG(dcg='exp-log2')@10",
    "nDCG(dcg='log2')@10": "nDCG@10",
    "mrr(rel=2)@10": "RR(rel=2)@10",
}


@pytest.mark.parametrize("alias, canonical", ALIASES.items())
def test_aliases_resolve_to_the_canonical_measure(alias, canonical):
    m, c = parse_measure(alias), parse_measure(canonical)
    assert m.canonical == canonical == c.canonical
    assert (m.family, m.cutoff, m.gain, m.rel) == (c.family, c.cutoff, c.gain, c.rel)


@pytest.mark.parametrize(
    "name, why",
    [
        ("hit_rate@10", "no terazi family"),
        ("hits@10", "use P@k"),
        ("f1@10", "no terazi family"),
        ("r-precision", "no terazi family"),
        ("bpref", "no terazi family"),
        ("dcg@10", "use nDCG@k"),
    ],
)
def test_neighbour_names_without_an_equivalent_say_so(name, why):
    with pytest.raises(MetricError, match=why):
        parse_measure(name)


# trec_eval result key of each canonical measure at cutoff 10 / 100 / 5 (None: not in trec_eval)
TREC_KEY = {
    "RR": "recip_rank",
    "AP": "map",
    "AP@100": "map_cut_100",
    "R@100": "recall_100",
    "P@5": "P_5",
    "nDCG": "ndcg",
    "nDCG@10": "ndcg_cut_10",
    "RR@10": None,
    "nDCG(dcg='exp-log2')@10": None,
    "RR(rel=2)@10": None,
}


@settings(max_examples=60, deadline=None)
@given(qrels_and_run())
def test_every_alias_equals_its_canonical_measure_and_pytrec_eval(data):
    qrels, run = data
    ours = evaluate(qrels, run, list(ALIASES) + sorted(set(ALIASES.values())))
    ref = pytrec_eval.RelevanceEvaluator(
        qrels, {"recip_rank", "map", "map_cut.100", "recall.100", "P.5", "ndcg", "ndcg_cut.10"}
    ).evaluate(run)
    for alias, canonical in ALIASES.items():
        assert ours.per_query_dict(alias) == ours.per_query_dict(canonical), alias
        if TREC_KEY[canonical]:
            for qid, values in ref.items():
                assert ours.per_query_dict(alias)[qid] == pytest.approx(values[TREC_KEY[canonical]], abs=1e-12), alias


def test_recip_rank_has_no_cutoff():
    # first relevant document at rank 50: trec_eval's recip_rank is 1/50; RR@10 is 0
    qrels = {"q": {"d49": 1}}
    run = {"q": {f"d{i:02d}": 100.0 - i for i in range(60)}}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["q"]["recip_rank"]
    ev = evaluate(qrels, run, ["recip_rank", "RR", "RR@10", "mrr@10"])
    assert ev.aggregate["recip_rank"] == ev.aggregate["RR"] == ref == pytest.approx(1 / 50)
    assert ev.aggregate["RR@10"] == ev.aggregate["mrr@10"] == 0.0
