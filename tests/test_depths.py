"""The depth sweep and the ceiling: every depth ranked from the deepest depth's scores equals a run at that single
rerank_depth (pytrec_eval on that run's ranking, to 1e-12), and scores no pair beyond the deepest; the oracle's
nDCG@10 by hand; recall@depth against pytrec_eval's recall_<depth>; "enough depth" and the share of the ceiling."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
import pytrec_eval

from terazi.analysis.depths import depth_table
from terazi.data.beir import load_beir
from terazi.data.loading import load_dataset
from terazi.metrics.ceiling import ceiling_values
from terazi.results.sweep import sweep_row
from terazi.schemas import BM25Spec, CrossEncoderSpec, DatasetSpec, ModelCost
from tests.stages import candidate_set, rerank_row

DEPTHS = [2, 3, 5, 8]


def shuffled(root, conditions=("clean", "upper"), seed=0):
    """Every document a candidate of every judged query, in a seeded random first-stage order."""
    ds, rng = load_beir(root), np.random.default_rng(seed)
    rows, var = [], []
    for cond in conditions:
        for q in ds.judged_query_ids:
            var.append((cond, 0, q, ds.queries[q].text if cond == "clean" else ds.queries[q].text.upper()))
            for rank, i in enumerate(rng.permutation(len(ds.docs)), start=1):
                rows.append((cond, 0, q, rank, list(ds.docs)[i], 1.0 / rank))
    cands = pl.DataFrame(rows, schema=["condition", "sample", "query_id", "rank", "doc_id", "score"], orient="row")
    return (
        load_dataset(DatasetSpec(path=str(root), name="tiny"), announce=False),
        cands,
        pl.DataFrame(var, schema=["condition", "sample", "query_id", "text"], orient="row"),
        ds,
    )


def trec_ndcg10(beir, ranking: pl.DataFrame) -> dict[str, float]:
    """pytrec_eval's ndcg_cut_10 of a ranking's clean lists (rank order made a score)."""
    run: dict = {}
    for r in ranking.filter(pl.col("condition") == "clean").iter_rows(named=True):
        run.setdefault(r["query_id"], {})[r["doc_id"]] = -float(r["rank"])
    qrels = {q: dict(d) for q, d in beir.qrels.items()}
    return {q: v["ndcg_cut_10"] for q, v in pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut"}).evaluate(run).items()}


@pytest.mark.parametrize("kind", ["bm25", "cross-encoder"])
def test_every_depth_equals_a_run_at_that_depth(tmp_path, tiny_dataset, tiny_cross_encoder, kind):
    ds, cands, variants, beir = shuffled(tiny_dataset)
    spec = (
        BM25Spec(name="bm25", kind="bm25")
        if kind == "bm25"
        else CrossEncoderSpec(name="ce", kind="cross-encoder", model=tiny_cross_encoder, max_length=64, batch_size=4)
    )
    cache = tmp_path / "cache"
    sweep, _ = rerank_row(ds, cands, variants, spec, tmp_path / "sweep", rerank_depth=3, cache=cache, sweep_depth=8)
    # scored: every condition to rerank_depth, the clean queries to the deepest depth, nothing more
    n_clean, n_upper = (cands.filter(pl.col("condition") == c)["query_id"].n_unique() for c in ("clean", "upper"))
    assert sweep.pairs_needed == n_clean * 8 + n_upper * 3
    cs = candidate_set(ds, cands, tmp_path / "sweep")
    values = pl.read_parquet(sweep_row(ds, sweep, cs, DEPTHS, "nDCG@10", str(tmp_path / "sweep" / "out")).path)
    clean = cands.filter(pl.col("condition") == "clean")
    for d in DEPTHS:
        single, ranking = rerank_row(
            ds,
            clean,
            variants.filter(pl.col("condition") == "clean"),
            spec,
            tmp_path / f"d{d}",
            rerank_depth=d,
            cache=cache,
        )
        # the sweep scored every pair a run at depth d needs (BM25 bypasses the store: it scores them again)
        assert single.pairs_scored == (single.pairs_unique if kind == "bm25" else 0)
        want = trec_ndcg10(beir, ranking)
        got = dict(values.filter(pl.col("depth") == d).select("query_id", "value").iter_rows())
        assert got.keys() == want.keys()
        assert max(abs(got[q] - want[q]) for q in want) <= 1e-12
        assert values.filter(pl.col("depth") == d)["pairs"].to_list() == [float(d)] * len(want)
    at = {d: values.filter(pl.col("depth") == d)["value"].to_list() for d in (2, 8)}
    assert at[2] != at[8]  # the depth changes the ranking: the equality above is not of one list with itself


def test_oracle_and_recall_by_hand(tmp_path, tiny_dataset):
    """q1 (d1: 2, d2: 1, d3: 0) with candidates d3, d4 (unjudged for q1), d2, d1: the oracle of the top 3 puts d2
    first and leaves d1 fourth, as a reranker at depth 3 must, so nDCG@10 = (1 + 2/log2 5) / (2 + 1/log2 3); of the
    top 4, 1; of the top 2, the first stage's own order (1/log2 4 + 2/log2 5) / (2 + 1/log2 3). Recall: 0, ½, 1."""
    ds = load_dataset(DatasetSpec(path=str(tiny_dataset), name="tiny"), announce=False)
    cands = pl.DataFrame(
        [("clean", 0, "q1", r, d, 1.0 / r) for r, d in enumerate(["d3", "d4", "d2", "d1"], 1)],
        schema=["condition", "sample", "query_id", "rank", "doc_id", "score"],
        orient="row",
    )
    got = (
        pl.read_parquet(
            ceiling_values(ds, candidate_set(ds, cands, tmp_path), [2, 3, 4], "nDCG@10", str(tmp_path / "out")).path
        )
        .filter(pl.col("query_id") == "q1")
        .sort("depth")
    )
    ideal = 2 + 1 / math.log2(3)
    assert got["oracle"].to_list() == pytest.approx(
        [(1 / 2 + 2 / math.log2(5)) / ideal, (1 + 2 / math.log2(5)) / ideal, 1.0], abs=1e-12
    )
    assert got["recall"].to_list() == pytest.approx([0.0, 0.5, 1.0], abs=1e-12)


def test_recall_at_depth_equals_pytrec_eval(tmp_path, tiny_dataset):
    ds, cands, _, beir = shuffled(tiny_dataset, conditions=("clean",), seed=3)
    got = pl.read_parquet(
        ceiling_values(ds, candidate_set(ds, cands, tmp_path), DEPTHS, "nDCG@10", str(tmp_path / "out")).path
    )
    run: dict = {}
    for r in cands.iter_rows(named=True):
        run.setdefault(r["query_id"], {})[r["doc_id"]] = r["score"]
    measures = {f"recall_{d}" for d in DEPTHS}
    want = pytrec_eval.RelevanceEvaluator({q: dict(d) for q, d in beir.qrels.items()}, measures).evaluate(run)
    for d in DEPTHS:
        part = dict(got.filter(pl.col("depth") == d).select("query_id", "recall").iter_rows())
        assert part == pytest.approx({q: v[f"recall_{d}"] for q, v in want.items()}, abs=1e-12)


def test_enough_depth_and_share_of_ceiling():
    """Depth 2 far below depth 8 on every query, depth 4 equal to it: 4 is enough; the share is mean / oracle."""
    rng = np.random.default_rng(0)
    base = rng.uniform(0.3, 0.9, 40)
    sweep = pl.DataFrame(
        [
            {
                "dataset": "a",
                "system": "ce",
                "depth": d,
                "query_id": f"q{i:02d}",
                "value": v - (0.25 if d == 2 else 0.0),
                "pairs": float(d),
            }
            for d in (2, 4, 8)
            for i, v in enumerate(base)
        ]
    )
    ceiling = pl.DataFrame(
        [
            {"dataset": "a", "system": "first-stage", "depth": d, "query_id": f"q{i:02d}", "recall": 1.0, "oracle": 1.0}
            for d in (2, 4, 8)
            for i in range(40)
        ]
    )
    cost = ModelCost(items=100, seconds=2.0)
    table = depth_table(sweep, ceiling, ["a"], ["ce"], {"ce": cost}, 500, 0, 0.95)
    assert table.filter(pl.col("enough"))["depth"].to_list() == [4]
    assert table["verdict"].to_list() == ["worse", "no difference", "no difference"]
    assert table["mean"].to_list() == pytest.approx([base.mean() - 0.25, base.mean(), base.mean()], abs=1e-12)
    assert table["share_of_ceiling"].to_list() == pytest.approx(table["mean"].to_list(), abs=1e-12)  # oracle = 1
    assert table["seconds_per_query"].to_list() == pytest.approx([2 / 50, 4 / 50, 8 / 50])
