"""Stored outputs (terazi.store.derived): a warm rerun links what an earlier run with the same inputs made, a changed
input makes anew, and a stage called without a cache folder writes in place."""

from __future__ import annotations

import os

import polars as pl

from terazi.schemas import BM25Spec
from terazi.store import codehash, derived
from tests.stages import rerank_row
from tests.test_rerank import inputs


def test_a_warm_rank_row_links_the_stored_ranking(tmp_path, tiny_dataset):
    ds, cands, variants, _ = inputs(tiny_dataset)
    spec = BM25Spec(name="bm25", kind="bm25")
    first, ranked = rerank_row(ds, cands, variants, spec, tmp_path, rerank_depth=5)
    stored = list((tmp_path / "cache" / "outputs").glob("ranking-*/rankings/tiny/bm25.parquet"))
    assert first.pairs_scored == first.pairs_unique > 0 and len(stored) == 1
    assert os.path.samefile(first.path, stored[0])  # the results file is the cache's, not a copy

    os.unlink(first.path)  # the results folder is new in every run; the cache keeps the object
    again, reranked = rerank_row(ds, cands, variants, spec, tmp_path, rerank_depth=5)
    assert (again.pairs_needed, again.pairs_unique, again.pairs_cached, again.pairs_scored) == (
        first.pairs_needed,
        first.pairs_unique,
        first.pairs_unique,
        0,
    )
    assert os.path.samefile(again.path, stored[0]) and reranked.equals(ranked)
    assert not list((tmp_path / "cache" / "work").iterdir())  # no plan written for a stored ranking

    deeper, ranked_deeper = rerank_row(ds, cands, variants, spec, tmp_path, rerank_depth=8)
    assert deeper.pairs_needed > first.pairs_needed and not os.path.samefile(deeper.path, stored[0])
    assert len(list((tmp_path / "cache" / "outputs").glob("ranking-*"))) == 2
    heads = [r.filter(pl.col("rank") <= 5).height for r in (ranked, ranked_deeper)]
    assert heads[0] == heads[1] and not ranked_deeper.equals(ranked)  # deeper reranking: another order


def test_reuse_makes_once_per_key_and_in_place_without_a_cache(tmp_path):
    made = []

    def make(root):
        made.append(root)
        (root / "runs").mkdir(parents=True)
        (root / "runs" / "a.trec").write_text(f"q 0 d 1 1.0 s{len(made)}\n")
        return {"files": 1}

    key = derived.key("test", "x", 1, maker=__name__)
    assert key == derived.key("test", "x", 1, maker=__name__) != derived.key("test", "x", 2, maker=__name__)
    for run in ("one", "two"):
        assert derived.reuse(tmp_path / "cache", key, tmp_path / run, make) == {"files": 1}
    one, two = (tmp_path / run / "runs" / "a.trec" for run in ("one", "two"))
    assert len(made) == 1 and os.path.samefile(one, two)
    assert derived.reuse(None, key, tmp_path / "three", make) == {"files": 1} and made[-1] == tmp_path / "three"
    assert (tmp_path / "three" / "runs" / "a.trec").read_text() == "q 0 d 1 1.0 s2\n"


def test_warm_variants_are_linked_and_new_corruption_code_makes_them_anew(tmp_path, tiny_dataset, monkeypatch):
    """The query variants are the same file in the second run (nothing corrupted), and a changed corruption
    code, setting or seed is a new key."""
    from terazi.corrupt import variants as module
    from terazi.data.loading import load_dataset
    from terazi.schemas import CorruptionSpec, DatasetSpec

    ds = load_dataset(DatasetSpec(path=str(tiny_dataset)), str(tmp_path / "cache"), announce=False)
    calls = []
    real = module.corrupt
    monkeypatch.setattr(module, "corrupt", lambda *a, **k: calls.append(1) or real(*a, **k))
    cache = str(tmp_path / "cache")
    first = module.corrupt_queries(ds, "typo", CorruptionSpec(), 13, str(tmp_path / "a"), cache)
    made = len(calls)
    again = module.corrupt_queries(ds, "typo", CorruptionSpec(), 13, str(tmp_path / "b"), cache)
    assert made > 0 and len(calls) == made and os.path.samefile(first.path, again.path)
    assert again.model_dump(exclude={"path"}) == first.model_dump(exclude={"path"})
    other = module.corrupt_queries(ds, "typo", CorruptionSpec(), 14, str(tmp_path / "c"), cache)
    assert len(calls) == 2 * made and not os.path.samefile(first.path, other.path)
    rules = next(p for p in codehash.closure(module.__name__).values() if p.name == "conditions.py")
    real_digest = codehash._digest
    monkeypatch.setattr(codehash, "_digest", lambda p: "edited" if p == rules else real_digest(p))
    edited = module.corrupt_queries(ds, "typo", CorruptionSpec(), 13, str(tmp_path / "d"), cache)
    assert len(calls) == 3 * made and not os.path.samefile(first.path, edited.path)  # new corruption code: made anew
