"""Cached reranking: no pair twice, resume after a crash, two runs sharing one cache."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from schemas import BM25Spec, CrossEncoderSpec
from terazi.data import load_beir
from terazi.rerank import reciprocal_rank_fusion, rerank
from terazi.rerankers import make_scorer
from terazi.score_cache import ScoreCache


def inputs(root: Path):
    """Every document a candidate of every query, under two conditions (clean and upper)."""
    ds = load_beir(root)
    rows, var = [], []
    for cond in ("clean", "upper"):
        for q in ds.judged_query_ids:
            text = ds.queries[q].text if cond == "clean" else ds.queries[q].text.upper()
            var.append((cond, 0, q, text))
            for rank, d in enumerate(ds.docs, start=1):
                rows.append((cond, 0, q, rank, d, 1.0 / rank))
    cands = pl.DataFrame(rows, schema=["condition", "sample", "query_id", "rank", "doc_id", "score"], orient="row")
    variants = pl.DataFrame(var, schema=["condition", "sample", "query_id", "text"], orient="row")
    docs = {d: doc.full_text for d, doc in ds.docs.items()}
    return ds, cands, variants, docs


class Exploding:
    """Wraps a scorer and raises after `after` calls, like a run killed mid-way."""

    def __init__(self, inner, after: int):
        self.inner, self.after, self.calls = inner, after, 0
        self.identity, self.max_length, self.batch_size = inner.identity, inner.max_length, 1

    def score(self, pairs):
        self.calls += 1
        if self.calls > self.after:
            raise RuntimeError("killed")
        return self.inner.score(pairs)


@pytest.fixture
def ce_spec(tiny_cross_encoder):
    return CrossEncoderSpec(name="tiny-ce", kind="cross-encoder", model=tiny_cross_encoder, max_length=64, batch_size=4)


def test_second_run_scores_zero_pairs(tmp_path, tiny_dataset, ce_spec):
    ds, cands, variants, docs = inputs(tiny_dataset)
    scorer = make_scorer(ce_spec, docs, ds.corpus_fingerprint, offline=True)
    cache = ScoreCache(tmp_path / "scores.sqlite")
    first, s1 = rerank(cands, variants, docs, scorer, cache, rerank_depth=10)
    assert s1.needed == 2 * 4 * 10 and s1.scored == s1.unique and s1.cached == 0
    second, s2 = rerank(cands, variants, docs, scorer, cache, rerank_depth=10)
    assert s2.scored == 0 and s2.cached == s1.unique
    assert first.equals(second)
    # the reranked head is ordered by score; the tail keeps first-stage order
    head = first.filter((pl.col("condition") == "clean") & (pl.col("query_id") == "q1") & (pl.col("rank") <= 10))
    assert head["score"].to_list() == sorted(head["score"].to_list(), reverse=True)
    tail = first.filter((pl.col("condition") == "clean") & (pl.col("query_id") == "q1") & (pl.col("rank") > 10))
    assert tail["doc_id"].to_list() == ["d11", "d12"]


def test_duplicate_pairs_across_conditions_are_scored_once(tmp_path, tiny_dataset):
    ds, cands, variants, docs = inputs(tiny_dataset)
    same = variants.with_columns(pl.col("text").first().over("query_id"))  # 'upper' identical to clean
    scorer = make_scorer(BM25Spec(name="bm25", kind="bm25"), docs, ds.corpus_fingerprint, offline=True)
    _, stats = rerank(cands, same, docs, scorer, ScoreCache(tmp_path / "s.sqlite"), rerank_depth=12)
    assert stats.needed == 96 and stats.unique == 48 and stats.scored == 48


def test_killed_run_resumes_with_only_missing_pairs(tmp_path, tiny_dataset, ce_spec):
    ds, cands, variants, docs = inputs(tiny_dataset)
    scorer = make_scorer(ce_spec, docs, ds.corpus_fingerprint, offline=True)
    reference, _ = rerank(cands, variants, docs, scorer, ScoreCache(tmp_path / "ref.sqlite"), rerank_depth=10)

    cache = ScoreCache(tmp_path / "crash.sqlite")
    boom = Exploding(scorer, after=3)  # batch_size 1 -> chunks of 8 pairs; dies on the 4th chunk
    with pytest.raises(RuntimeError, match="killed"):
        rerank(cands, variants, docs, boom, cache, rerank_depth=10)
    assert cache.count() == 24
    resumed, stats = rerank(cands, variants, docs, scorer, cache, rerank_depth=10)
    assert stats.cached == 24 and stats.scored == stats.unique - 24
    assert np.allclose(resumed["score"].to_numpy(), reference["score"].to_numpy(), atol=1e-6)
    assert resumed["doc_id"].to_list() == reference["doc_id"].to_list()


WORKER = textwrap.dedent("""
    import os, sys
    os.environ["HF_HUB_OFFLINE"] = "1"
    sys.path.insert(0, {root!r})
    from tests.test_rerank import inputs
    from schemas import BM25Spec, CrossEncoderSpec
    from terazi.rerank import rerank
    from terazi.rerankers import make_scorer
    from terazi.score_cache import ScoreCache
    from pathlib import Path
    ds, cands, variants, docs = inputs(Path({data!r}))
    spec = CrossEncoderSpec(name="ce", kind="cross-encoder", model={model!r}, max_length=64, batch_size=2)
    scorer = make_scorer(spec, docs, ds.corpus_fingerprint, offline=True)
    ranked, stats = rerank(cands, variants, docs, scorer, ScoreCache({cache!r}), rerank_depth=12)
    ranked.write_parquet({out!r})
    print("scored", stats.scored, "cached", stats.cached)
""")


def test_two_concurrent_runs_share_one_cache(tmp_path, tiny_dataset, tiny_cross_encoder):
    root = str(Path(__file__).resolve().parents[1])
    cache = str(tmp_path / "shared.sqlite")
    procs = []
    for i in range(2):
        code = WORKER.format(root=root, data=str(tiny_dataset), model=tiny_cross_encoder, cache=cache,
                             out=str(tmp_path / f"out{i}.parquet"))
        procs.append(subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert "locked" not in err
    a, b = (pl.read_parquet(tmp_path / f"out{i}.parquet") for i in range(2))
    assert a.equals(b)
    assert ScoreCache(cache).count() == 2 * 4 * 12


def test_rrf_fuses_two_rankings():
    base = pl.DataFrame({"condition": ["clean"] * 3, "sample": [0] * 3, "query_id": ["q"] * 3, "rank": [1, 2, 3],
                         "doc_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    other = base.with_columns(pl.Series("rank", [3, 1, 2]))  # b first, c second, a third
    fused = reciprocal_rank_fusion([base, other], rerank_depth=3, k=60)
    # a: 1/61 + 1/63, b: 1/62 + 1/61, c: 1/63 + 1/62  ->  b > a > c
    assert fused["doc_id"].to_list() == ["b", "a", "c"]
    assert fused["score"][0] == pytest.approx(1 / 62 + 1 / 61)
