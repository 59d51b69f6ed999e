"""The tie rule, by hand: every list terazi ranks from scores breaks a tie by document id descending, as trec_eval,
pytrec_eval and MTEB do (a reranker's head, streamed or in memory, fusion, the ceiling's oracle, dense search across
shards and at the cut, imported runs); `ties: first-stage` keeps a head's first-stage order; run files carry the
systems' scores, a first-stage tail moved below the head; documents a dataset leaves out of every ranking."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
import pytrec_eval

from terazi.base.ties import id_order
from terazi.data.beir import write_beir
from terazi.data.loading import load_dataset, open_dataset
from terazi.data.runfolder import run_scores
from terazi.data.trec import read_run
from terazi.data.trec_writer import write_run
from terazi.metrics.ceiling import oracle_ranking
from terazi.metrics.engine import evaluate
from terazi.present.notes import dropped_line
from terazi.rerank.ranking import rank_part, reciprocal_rank_fusion, write_ranking
from terazi.retrieval.bm25 import bm25_candidates
from terazi.retrieval.dense import MARGIN, exact_search
from terazi.schemas import DatasetSpec

FIRST = ["d1", "d3", "d10", "d2", "d5"]  # first-stage order of query q; d5 is the tail below a head of 4


def candidates() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "condition": "clean",
            "sample": 0,
            "query_id": "q",
            "rank": range(1, 6),
            "doc_id": FIRST,
            "score": [0.9, 0.8, 0.7, 0.6, 0.5],
        }
    ).with_columns(pl.col("rank").cast(pl.Int64), pl.col("sample").cast(pl.Int64))


@pytest.mark.parametrize(
    "ties, want", [("trec", ["d3", "d2", "d10", "d1", "d5"]), ("first-stage", ["d3", "d1", "d10", "d2", "d5"])]
)
def test_a_heads_ties_follow_the_rule_streamed_or_in_memory(tmp_path, ties, want):
    """Head scores d1 .5, d3 .9, d10 .5, d2 .5: d3 first, then the three ties by document id descending as strings
    (d2 > d10 > d1), or in first-stage order; d5 stays below."""
    head = np.array([0.5, 0.9, 0.5, 0.5])
    ranked = rank_part(candidates(), head, 4, ties)
    assert ranked["doc_id"].to_list() == want and ranked["rank"].to_list() == [1, 2, 3, 4, 5]
    candidates().write_parquet(tmp_path / "cands.parquet")
    write_ranking(tmp_path / "ranked.parquet", tmp_path / "cands.parquet", head, 4, ties)
    assert pl.read_parquet(tmp_path / "ranked.parquet").equals(ranked)
    # pytrec_eval ranks the same head by its scores alone: d2 relevant second, nDCG@10 = 1 / log2(3); first-stage
    # order puts it fourth, 1 / log2(5)
    got = pytrec_eval.RelevanceEvaluator({"q": {"d2": 1}}, {"ndcg_cut_10"}).evaluate(
        {"q": {d: float(s) for d, s in zip(FIRST[:4], head)}}
    )["q"]["ndcg_cut_10"]
    ours = evaluate(
        {"q": {"d2": 1}}, ranked.select("query_id", "doc_id", "rank", "score"), ["nDCG@10"], order="rank"
    ).aggregate["nDCG@10"]
    assert got == pytest.approx(1 / math.log2(3), abs=1e-15)
    assert ours == pytest.approx(1 / math.log2(3 if ties == "trec" else 5), abs=1e-15)


def test_fusion_and_the_oracle_break_ties_by_document_id():
    """RRF of (a, b) and (b, a) scores both 1/61 + 1/62: b (the larger id) first; under first-stage, the first
    ranking's order. The oracle's equal grades (b, c: 1) come in id order too, above the unjudged a."""
    base = candidates().head(2).with_columns(pl.Series("doc_id", ["a", "b"]))
    other = base.with_columns(pl.Series("rank", [2, 1]))
    assert reciprocal_rank_fusion([base, other], 2)["doc_id"].to_list() == ["b", "a"]
    assert reciprocal_rank_fusion([base, other], 2, ties="first-stage")["doc_id"].to_list() == ["a", "b"]
    three = candidates().head(3).with_columns(pl.Series("doc_id", ["a", "b", "c"]))
    grades = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["b", "c"], "grade": [1, 1]})
    assert oracle_ranking(three, grades, 3)["doc_id"].to_list() == ["c", "b", "a"]
    assert oracle_ranking(three, grades, 3, "first-stage")["doc_id"].to_list() == ["b", "c", "a"]


def test_dense_search_picks_tied_documents_by_the_rule_across_shards_and_the_cut():
    """40 documents, 4 distinct vectors (dyadic values: every inner product exact), ids in no order, shards of 7: a
    tie group of 25 straddles a cut of 5 (more than MARGIN past it), so the deeper search decides which 5 make it.
    Expected: numpy's exact scores ranked by (score, id) descending, as trec_eval ranks them."""
    rng = np.random.default_rng(0)
    ids = pl.Series([f"doc-{i}" for i in rng.permutation(40)])
    vectors = np.array([[1, 0, 0, 0], [0.5, 0.5, 0.5, 0.5], [0, 1, 0, 0], [0.25, 0.75, 0, 0]], dtype=np.float32)
    groups = np.array([0] * 25 + [1] * 6 + [2] * 5 + [3] * 4)
    emb = vectors[rng.permutation(groups)]
    queries = np.array([[1, 0, 0, 0], [0.5, 0.5, 0, 0], [0, 0, 0, 1]], dtype=np.float32)
    order = id_order(ids)
    assert 25 > 5 + MARGIN
    for depth in (5, 12, 40):
        scores, rows = exact_search(((a, emb[a : a + 7]) for a in range(0, 40, 7)), queries, depth, order)
        exact = queries.astype(np.float64) @ emb.T.astype(np.float64)
        for q in range(len(queries)):
            want = sorted(range(40), key=lambda i: (exact[q, i], ids[i]), reverse=True)[:depth]
            assert rows[q].tolist() == want, (q, depth)
            assert scores[q].tolist() == exact[q, want].tolist()


def test_run_files_carry_the_scores_and_a_tail_below_the_head(tmp_path):
    """Head .25, .125 above a first-stage tail .75, .5, .5: the tail is lowered by .75 − .125 + 1 = 1.625, to −.875,
    −1.125, −1.125 (its order and its tie kept); a tail already below stays. Scores a shift would merge (5e8 scale
    against a 2⁻⁴⁰ gap) are written head's lowest − place. The file's text reads back as the very floats."""
    frame = pl.DataFrame(
        {
            "condition": "clean",
            "sample": 0,
            "query_id": "q",
            "rank": [1, 2, 3, 4, 5],
            "doc_id": ["a", "b", "c", "e", "d"],
            "score": [0.25, 0.125, 0.75, 0.5, 0.5],
        }
    )
    assert run_scores(frame, 2)["score"].to_list() == [0.25, 0.125, -0.875, -1.125, -1.125]
    assert run_scores(frame, None).equals(frame)
    below = frame.with_columns(pl.Series("score", [2.0, 1.5, 0.75, 0.5, 0.5]))
    assert run_scores(below, 2).equals(below)
    far = frame.head(4).with_columns(pl.Series("score", [-4e8, -5e8, 0.5 + 2.0**-40, 0.5]))
    assert run_scores(far, 2)["score"].to_list() == [-4e8, -5e8, -5e8 - 1, -5e8 - 2]
    odd = frame.with_columns(pl.Series("score", [1 / 3, 1e-300, 2.0**-1074, 123456789.123456789, math.pi]))
    write_run(odd, tmp_path / "x.trec", "t")
    assert read_run(tmp_path / "x.trec")["score"].to_list() == odd["score"].to_list()


def arguana_like(root):
    """q1 is also a document (its own text, the best match), q2 excludes its best match d2."""
    docs = [
        {"_id": "q1", "text": "çay demleme süresi"},
        {"_id": "d1", "text": "çay demleme on beş dakika sürer"},
        {"_id": "d2", "text": "dağ evi kiralama"},
        {"_id": "d3", "text": "dağ evleri tatil için kiralanabilir"},
        {"_id": "d4", "text": "satranç"},
    ]
    queries = [
        {"_id": "q1", "text": "çay demleme süresi"},
        {"_id": "q2", "text": "dağ evi kiralama", "excluded_ids": ["d2", "N/A"]},
    ]
    return write_beir(root, docs, queries, [("q1", "d1", 1), ("q2", "d3", 1)])


def test_identical_ids_and_excluded_ids_are_left_out_by_hand(tmp_path):
    """BM25 ranks q1 (a document too) first for q1 and d2 first for q2. Left out: d1 and d3 move up to rank 1,
    nDCG@10 = 1 each; kept (no ignore_identical_ids): q1's d1 is second, 1 / log2(3). Depth is still filled."""
    root = arguana_like(tmp_path / "ds")
    values = {}
    for ignore in (False, True):
        ds = load_dataset(DatasetSpec(path=str(root), name="arg", ignore_identical_ids=ignore), announce=False)
        variants = pl.DataFrame(
            {
                "condition": "clean",
                "sample": 0,
                "query_id": ["q1", "q2"],
                "text": ["çay demleme süresi", "dağ evi kiralama"],
            }
        ).with_columns(pl.col("sample").cast(pl.Int64))
        cs = bm25_candidates(ds, variants, 3, str(tmp_path / "cache"))
        cand = pl.read_parquet(cs.path)
        assert cand.group_by("query_id").len().sort("query_id")["len"].to_list() == [3, 3]
        assert "d2" not in cand.filter(pl.col("query_id") == "q2")["doc_id"].to_list()
        assert (cand.filter(pl.col("query_id") == "q1")["doc_id"][0] == "q1") != ignore
        assert cs.ties == "trec" and cs.ignore_identical_ids == ignore and ds.n_dropped == 1 + ignore
        values[ignore] = evaluate(open_dataset(ds).qrels, cand, ["nDCG@10"], order="rank").per_query_dict("nDCG@10")
        assert dropped_line([ds]).startswith(f"arg: {1 + ignore} (query, document) pairs")
    assert values[True] == {"q1": 1.0, "q2": 1.0}
    assert values[False] == pytest.approx({"q1": 1 / math.log2(3), "q2": 1.0}, abs=1e-15)


def test_excluded_ids_enter_the_fingerprint_only_where_given(tmp_path):
    root = arguana_like(tmp_path / "ds")
    with_ids = load_dataset(DatasetSpec(path=str(root), name="a"), announce=False).fingerprint
    text = (root / "queries.jsonl").read_text(encoding="utf-8").replace(', "excluded_ids": ["d2", "N/A"]', "")
    (root / "queries.jsonl").write_text(text, encoding="utf-8")
    without = load_dataset(DatasetSpec(path=str(root), name="a"), announce=False)
    assert without.fingerprint != with_ids and without.n_dropped == 0


def test_dense_first_stage_leaves_them_out_and_old_sets_are_refused(tmp_path):
    """The dense first stage (bundled MiniLM) searches past depth by what a query can lose: each list is full,
    without q1 for q1 nor d2 for q2. A set frozen before the rule (no `ties` in its manifest), named by its
    fingerprint, is refused rather than served in FAISS's order."""
    import json

    from terazi.base.errors import ConfigError
    from terazi.corrupt.variants import corrupt_queries
    from terazi.retrieval.frozen import find_frozen
    from terazi.schemas import CorruptionSpec, EncoderSpec
    from tests.stages import first_stage

    root = arguana_like(tmp_path / "ds")
    ds = load_dataset(DatasetSpec(path=str(root), name="arg", ignore_identical_ids=True), announce=False)
    vs = corrupt_queries(ds, "clean", CorruptionSpec(), 13, str(tmp_path / "out"))
    cache = str(tmp_path / "cache")
    cs = first_stage(ds, [vs], EncoderSpec(), 4, cache)
    cand = pl.read_parquet(cs.path)
    assert cand.group_by("query_id").len()["len"].to_list() == [4, 4]
    assert cand.filter(pl.col("doc_id") == pl.col("query_id")).is_empty()
    assert "d2" not in cand.filter(pl.col("query_id") == "q2")["doc_id"].to_list()
    assert find_frozen(cache, cs.fingerprint, ds).fingerprint == cs.fingerprint
    manifest = tmp_path / "cache" / "candidates" / cs.lookup_key / "manifest.json"
    body = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({k: v for k, v in body.items() if k != "ties"}))
    with pytest.raises(ConfigError, match="frozen in FAISS's order"):
        find_frozen(cache, cs.fingerprint, ds)


def test_6_a_first_stage_whose_scores_all_tie_is_warned_about(tmp_path, caplog):
    import logging

    from terazi.rerank.stage import first_stage_ranking
    from terazi.schemas import DatasetManifest
    from tests.stages import candidate_set

    rows = [
        (cond, 0, q, r + 1, f"d{r}", 0.0 if cond == "upper" else float(-r))
        for cond in ("clean", "upper")
        for q in ("q1", "q2")
        for r in range(5)
    ]
    rows[0] = ("clean", 0, "q1", 1, "d0", 0.0)  # clean: q2 tells its candidates apart, so clean is not all tied
    frame = pl.DataFrame(rows, schema=["condition", "sample", "query_id", "rank", "doc_id", "score"], orient="row")
    ds = DatasetManifest(
        name="empty",
        path=str(tmp_path),
        split="test",
        task_type="retrieval",
        in_ranking=True,
        fingerprint="x",
        corpus_fingerprint="x",
        n_docs=5,
        n_queries=2,
        n_judgments=2,
        n_queries_without_relevant=0,
    )
    cs = candidate_set(ds, frame, tmp_path)
    log = logging.getLogger("terazi.rerank")
    log.addHandler(caplog.handler)  # whether or not a command made the terazi logger stop propagating
    try:
        first_stage_ranking(ds, cs, str(tmp_path / "run"))
    finally:
        log.removeHandler(caplog.handler)
    warned = sorted({r.getMessage() for r in caplog.records if r.levelno == logging.WARNING})
    assert (
        len(warned) == 1
        and "first stage test on empty: every query's candidates have one score under upper:" in warned[0]
        and "tie order of the document ids" in warned[0]
    ), warned
