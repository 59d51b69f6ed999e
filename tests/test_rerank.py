"""Cached reranking: no pair twice, resume after a crash, concurrent runs sharing one cache, chunking that
never changes a score, BM25 over candidates equal to BM25 over the corpus, long documents cut to budget."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from terazi.base import fingerprint
from terazi.data.beir import load_beir
from terazi.data.loading import dataset_corpus, load_dataset
from terazi.models.text import CHARS_PER_TOKEN, clip
from terazi.rerank.backends import make_scorer
from terazi.rerank.pairs import Pair
from terazi.rerank.ranking import reciprocal_rank_fusion
from terazi.rerank.store import ModelKey, Scores
from terazi.schemas import BM25Spec, CrossEncoderSpec, DatasetSpec
from tests.stages import rerank_row, wrap_scorers

ROOT = str(Path(__file__).resolve().parents[1])


def inputs(root: Path):
    """Every document a candidate of every query, under two conditions (clean and upper): the dataset's manifest,
    the candidates, the variants and the documents' texts (read independently of the corpus table)."""
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
    return load_dataset(DatasetSpec(path=str(root), name="tiny"), announce=False), cands, variants, docs


class Exploding:
    """Wraps a scorer and fails after `after` calls, like a run killed mid-way (`exit=True`: the process dies)."""

    def __init__(self, inner, after: int, batch_size: int = 1, exit: bool = False):
        self.inner, self.after, self.calls, self.exit = inner, after, 0, exit
        self.identity, self.max_length, self.batch_size = inner.identity, inner.max_length, batch_size
        self.pairs = 0

    def score(self, pairs):
        self.calls += 1
        if self.calls > self.after:
            if self.exit:
                os._exit(9)
            raise RuntimeError("killed")
        self.pairs += len(pairs)
        return self.inner.score(pairs)


@pytest.fixture
def ce_spec(tiny_cross_encoder):
    return CrossEncoderSpec(name="tiny-ce", kind="cross-encoder", model=tiny_cross_encoder, max_length=64, batch_size=4)


def test_second_run_scores_zero_pairs(tmp_path, tiny_dataset, ce_spec):
    ds, cands, variants, docs = inputs(tiny_dataset)
    r1, first = rerank_row(ds, cands, variants, ce_spec, tmp_path, rerank_depth=10)
    assert r1.pairs_needed == 2 * 4 * 10 and r1.pairs_scored == r1.pairs_unique and r1.pairs_cached == 0
    r2, second = rerank_row(ds, cands, variants, ce_spec, tmp_path, rerank_depth=10)
    assert r2.pairs_scored == 0 and r2.pairs_cached == r1.pairs_unique
    assert first.equals(second)
    # the reranked head is ordered by score; the tail keeps first-stage order
    head = first.filter((pl.col("condition") == "clean") & (pl.col("query_id") == "q1") & (pl.col("rank") <= 10))
    assert head["score"].to_list() == sorted(head["score"].to_list(), reverse=True)
    tail = first.filter((pl.col("condition") == "clean") & (pl.col("query_id") == "q1") & (pl.col("rank") > 10))
    assert tail["doc_id"].to_list() == ["d11", "d12"]
    # a stored score is the one the model gives the pair, under the pair's key: the hash of the query text, and the
    # hash of the document's id with its text's hash
    row = head.row(0, named=True)
    text = variants.filter((pl.col("condition") == "clean") & (pl.col("query_id") == "q1"))["text"][0]
    q = fingerprint.text_keys([text])[0]
    d = fingerprint.doc_keys([row["doc_id"]], fingerprint.text_keys([docs[row["doc_id"]]]))[0]
    stored = Scores(tmp_path / "cache").get_many(ModelKey(r1.identity, 64), pl.DataFrame({"q": [q], "d": [d]}))
    assert stored["score"][0] == row["score"]


def test_duplicate_pairs_across_conditions_are_scored_once(tmp_path, tiny_dataset):
    ds, cands, variants, _ = inputs(tiny_dataset)
    same = variants.with_columns(pl.col("text").first().over("query_id"))  # 'upper' identical to clean
    result, _ = rerank_row(ds, cands, same, BM25Spec(name="bm25", kind="bm25"), tmp_path, rerank_depth=12)
    assert result.pairs_needed == 96 and result.pairs_unique == 48 and result.pairs_scored == 48


def test_bm25_over_candidates_equals_bm25_over_the_corpus(tmp_path, tiny_dataset):
    """The per-candidate sums are bit for bit what bm25s's whole-corpus `get_scores` gives."""
    import bm25s

    from terazi.base.turkish import analyse

    ds, cands, variants, docs = inputs(tiny_dataset)
    corpus = dataset_corpus(ds, str(tmp_path))
    scorer = make_scorer(BM25Spec(name="bm25", kind="bm25", k1=1.2, b=0.7), corpus, ds.corpus_fingerprint, offline=True)
    ref = bm25s.BM25(k1=1.2, b=0.7)
    ref.index([analyse(t, "turkish") or [""] for t in docs.values()], show_progress=False)
    ids = list(docs)
    queries = [*variants["text"].to_list(), "çay çay demlik", "zzzz yok"]  # repeated and unknown tokens too
    pairs = [Pair(q, d, docs[d]) for q in queries for d in ids[::-1]]
    got = scorer.score(pairs)
    for i, q in enumerate(queries):
        tokens = [t for t in analyse(q, "turkish") if t in ref.vocab_dict]
        full = ref.get_scores(tokens) if tokens else np.zeros(len(ids))
        expect = np.array([full[ids.index(d)] for d in ids[::-1]], dtype=np.float64)
        assert np.array_equal(got[i * len(ids) : (i + 1) * len(ids)], expect), q
    assert got.max() > 0


def test_chunking_never_changes_a_score(tmp_path, tiny_dataset, ce_spec, monkeypatch):
    """Chunks are whole scoring blocks, so one block per chunk and one chunk for everything agree bit for bit.

    Each run gets its own scorer: a fresh scorer scores its first pair on its own (the untimed warm-up), and a
    pair's score can differ in the last bits with the batch it was padded into."""
    from terazi.tasks.rerank import rerank_chunk_task

    ds, cands, variants, _ = inputs(tiny_dataset)
    chunks = []
    score_chunk = rerank_chunk_task.fn
    monkeypatch.setattr(rerank_chunk_task, "fn", lambda plan, chunk: chunks.append(chunk) or score_chunk(plan, chunk))
    r1, one = rerank_row(ds, cands, variants, ce_spec, tmp_path / "a", rerank_depth=12)
    r2, many = rerank_row(ds, cands, variants, ce_spec, tmp_path / "b", rerank_depth=12, chunk_pairs=1)
    assert r1.pairs_scored == r2.pairs_scored == r1.pairs_unique == 96
    assert chunks == [0, 0, 1, 2]  # one chunk; then blocks of 4 × 8 pairs, one a chunk
    assert one.equals(many)


def test_killed_run_resumes_with_only_missing_pairs(tmp_path, tiny_dataset, ce_spec, monkeypatch):
    ds, cands, variants, _ = inputs(tiny_dataset)
    _, reference = rerank_row(ds, cands, variants, ce_spec, tmp_path / "ref", rerank_depth=10)

    cache = tmp_path / "crash-cache"
    wrap_scorers(lambda s: Exploding(s, after=3), monkeypatch.setattr)  # batch_size 1 -> blocks of 8; dies on the 4th
    with pytest.raises(RuntimeError, match="killed"):
        rerank_row(ds, cands, variants, ce_spec, tmp_path / "crash", rerank_depth=10, cache=cache)
    scores = Scores(cache)
    assert scores.local.count() == 24
    wrap_scorers(lambda s: Exploding(s, after=10**6), monkeypatch.setattr)
    stats, resumed = rerank_row(ds, cands, variants, ce_spec, tmp_path / "resume", rerank_depth=10, cache=cache)
    assert stats.pairs_cached == 24 and stats.pairs_scored == stats.pairs_unique - 24
    assert np.allclose(resumed["score"].to_numpy(), reference["score"].to_numpy(), atol=1e-6)
    assert resumed["doc_id"].to_list() == reference["doc_id"].to_list()
    assert scores.local.count() == stats.pairs_unique  # every pair stored once


WORKER = textwrap.dedent("""
    import os, sys, time, json
    os.environ["HF_HUB_OFFLINE"] = "1"
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from terazi.schemas import BM25Spec
    from tests.stages import rerank_row, wrap_scorers
    from tests.test_rerank import Exploding, inputs

    class Slow(Exploding):
        def score(self, pairs):
            time.sleep(0.05)  # long enough for the two runs to overlap
            return super().score(pairs)

    made = []  # the plan's scorer and the one the chunks share
    wrap_scorers(lambda s: made.append(Slow(s, after={after}, batch_size=1, exit=True)) or made[-1])
    ds, cands, variants, _ = inputs(Path({data!r}))
    spec = BM25Spec(name="bm25", kind="bm25")  # cheap to start: the leases are under test, not the model
    Path({ready!r}).touch()
    while not all(Path(p).exists() for p in {barrier!r}):
        time.sleep(0.01)
    result, ranked = rerank_row(ds, cands, variants, spec, Path({tmp!r}), rerank_depth=12, chunk_pairs=16,
                                cache=Path({cache!r}))
    ranked.write_parquet({out!r})
    print(json.dumps({{"scored": result.pairs_scored, "cached": result.pairs_cached, "unique": result.pairs_unique,
                       "model_pairs": sum(s.pairs for s in made)}}))
""")


def start_worker(tmp_path, name, data, cache, barrier, after=10**6):
    code = WORKER.format(
        root=ROOT,
        data=str(data),
        cache=str(cache),
        out=str(tmp_path / f"{name}.parquet"),
        tmp=str(tmp_path / name),
        ready=str(tmp_path / f"{name}.ready"),
        barrier=[str(tmp_path / f"{b}.ready") for b in barrier],
        after=after,
    )
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_concurrent_runs_score_each_pair_once(tmp_path, tiny_dataset):
    """Leases split the work: the pairs the two runs scored add up to the unique pairs, whatever the timing."""
    import json

    procs = [start_worker(tmp_path, n, tiny_dataset, tmp_path / "shared", ["a", "b"]) for n in "ab"]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert "locked" not in err
    stats = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    unique = stats[0]["unique"]
    assert unique == 2 * 4 * 12
    assert stats[0]["scored"] + stats[1]["scored"] == unique
    assert stats[0]["model_pairs"] + stats[1]["model_pairs"] == unique  # the model saw each pair once
    assert all(s["scored"] + s["cached"] == unique for s in stats)
    a, b = (pl.read_parquet(tmp_path / f"{n}.parquet") for n in "ab")
    assert a.equals(b)
    assert Scores(tmp_path / "shared").local.count() == unique


def test_a_killed_run_releases_its_lease(tmp_path, tiny_dataset):
    """A run that dies mid-chunk (os._exit, as kill -9) holds a lease; the next run takes its pairs over at once."""
    import json

    dead = start_worker(tmp_path, "dead", tiny_dataset, tmp_path / "cache", ["dead"], after=5)
    dead.communicate(timeout=300)
    assert dead.returncode == 9
    store = Scores(tmp_path / "cache").local
    committed = store.count()
    assert committed == 5 * 8  # five blocks of eight pairs (batch size 1)
    assert store._conn().execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 1  # left behind by the dead run
    t = time.perf_counter()
    alive = start_worker(tmp_path, "alive", tiny_dataset, tmp_path / "cache", ["alive"])
    out, err = alive.communicate(timeout=300)
    assert alive.returncode == 0, err
    stats = json.loads(out.strip().splitlines()[-1])
    assert stats["scored"] == stats["unique"] - committed and stats["model_pairs"] == stats["scored"]
    assert time.perf_counter() - t < 120  # not the lease's expiry (10 min): the dead process was noticed
    assert store.count() == stats["unique"]
    assert store._conn().execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0


def test_long_documents_are_cut_to_the_models_budget(tmp_path, tiny_dataset, ce_spec):
    """A 1 MB document costs what the model sees: the same score as its first few thousand characters."""
    ds, *_ = inputs(tiny_dataset)
    scorer = make_scorer(ce_spec, dataset_corpus(ds, str(tmp_path)), ds.corpus_fingerprint, offline=True)
    long = "Çay demlemek için su kaynatılır ve demlik ısıtılır. " * 20_000  # ~1 MB
    assert len(clip(long, 64)) == 64 * CHARS_PER_TOKEN and clip("kısa", 64) == "kısa" and clip(long, 0) == long
    t = time.perf_counter()
    whole = scorer.score([Pair("çay nasıl demlenir", "big", long)] * 4)
    assert time.perf_counter() - t < 10
    # the model itself, given 5,000 characters uncut, keeps the same first 64 tokens: the cut changes nothing
    raw = scorer.model.predict([("çay nasıl demlenir", long[:5000])], show_progress_bar=False)
    assert np.float64(np.asarray(raw).ravel()[0]) == whole[0] and len(set(whole.tolist())) == 1


def test_rrf_fuses_two_rankings():
    base = pl.DataFrame(
        {
            "condition": ["clean"] * 3,
            "sample": [0] * 3,
            "query_id": ["q"] * 3,
            "rank": [1, 2, 3],
            "doc_id": ["a", "b", "c"],
            "score": [3.0, 2.0, 1.0],
        }
    )
    other = base.with_columns(pl.Series("rank", [3, 1, 2]))  # b first, c second, a third
    fused = reciprocal_rank_fusion([base, other], rerank_depth=3, k=60)
    # a: 1/61 + 1/63, b: 1/62 + 1/61, c: 1/63 + 1/62  ->  b > a > c
    assert fused["doc_id"].to_list() == ["b", "a", "c"]
    assert fused["score"][0] == pytest.approx(1 / 62 + 1 / 61)


def test_streamed_ranking_equals_the_in_memory_one(tmp_path, tiny_dataset, monkeypatch):
    """The flow writes rankings a batch of variants at a time; they equal `rank_part` on the whole table, also when
    a variant straddles two batches, and a candidate file in another order falls back to ranking in memory."""
    import terazi.rerank.ranking as ranking
    from terazi.data import blocks

    ds, cands, variants, _ = inputs(tiny_dataset)
    spec = BM25Spec(name="bm25", kind="bm25")
    _, flow_ranking = rerank_row(ds, cands, variants, spec, tmp_path, rerank_depth=7)
    corpus = dataset_corpus(ds, str(tmp_path / "cache"))
    scorer = make_scorer(spec, corpus, ds.corpus_fingerprint, offline=True)
    texts = dict(zip(variants["query_id"] + "\0" + variants["condition"], variants["text"]))

    def head_scores(frame):  # BM25 bypasses the score store: its scores again, in the frame's order
        head = frame.filter(pl.col("rank") <= 7)
        return scorer.score(
            [Pair(texts[q + "\0" + c], d, "") for q, c, d in zip(head["query_id"], head["condition"], head["doc_id"])]
        )

    expected = ranking.rank_part(cands, head_scores(cands), 7)  # the whole table, in memory
    assert flow_ranking.equals(expected)
    for name, frame in (("sorted", cands), ("shuffled", cands.sample(fraction=1.0, shuffle=True, seed=1))):
        frame.write_parquet(tmp_path / f"{name}.parquet", row_group_size=5)
        head = head_scores(frame)
        for rows in (5, 1000):
            monkeypatch.setattr(blocks, "BLOCK_ROWS", rows)
            ranking.write_ranking(tmp_path / "ranked.parquet", tmp_path / f"{name}.parquet", head, 7)
            assert pl.read_parquet(tmp_path / "ranked.parquet").equals(expected), (name, rows)
