"""BM25 over the whole corpus as a first stage: its candidates are bm25s's own top documents (its `retrieve`, the
scores to float32 precision), the BM25 reranker over them keeps their order (the same analyser and statistics),
and a second call reuses the frozen set."""

from __future__ import annotations

import bm25s
import numpy as np
import polars as pl
import pytest

from terazi.base.turkish import analyse
from terazi.data.beir import load_beir
from terazi.data.loading import dataset_corpus, load_dataset
from terazi.retrieval.bm25 import bm25_candidates
from terazi.schemas import BM25Spec, DatasetSpec
from tests.stages import rerank_row


def clean_variants(root):
    ds = load_beir(root)
    return ds, pl.DataFrame(
        [("clean", 0, q, ds.queries[q].text) for q in ds.judged_query_ids],
        schema=["condition", "sample", "query_id", "text"],
        orient="row",
    )


def test_bm25_candidates_are_bm25s_top_documents(tmp_path, tiny_dataset):
    beir, variants = clean_variants(tiny_dataset)
    ds = load_dataset(DatasetSpec(path=str(tiny_dataset), name="tiny"), announce=False)
    cs = bm25_candidates(ds, variants, 5, str(tmp_path / "cache"))
    cands = pl.read_parquet(cs.path)
    ids = list(beir.docs)
    ref = bm25s.BM25(k1=1.5, b=0.75)
    ref.index([analyse(beir.docs[d].full_text) or [""] for d in ids], show_progress=False)
    for q in beir.judged_query_ids:
        docs, scores = ref.retrieve([analyse(beir.queries[q].text)], k=5, show_progress=False)
        ours = cands.filter(pl.col("query_id") == q).sort("rank")
        np.testing.assert_allclose(ours["score"].to_numpy(), scores[0], rtol=1e-6)
        top = {ids[i] for i, s in zip(docs[0], scores[0]) if s > scores[0][-1]}  # above the last tie
        assert top <= set(ours["doc_id"].to_list())
    again = bm25_candidates(ds, variants, 5, str(tmp_path / "cache"))
    assert again.reused and again.fingerprint == cs.fingerprint and cs.encoder == "bm25"
    assert cs.recall["clean"] > 0


def test_bm25_reranker_keeps_the_bm25_first_stage_order(tmp_path, tiny_dataset, monkeypatch):
    """... and the two stages index the corpus once between them; a corpus table made again is indexed again."""
    from terazi.models import bm25_index

    built, original = [], bm25_index.build
    monkeypatch.setattr(bm25_index, "build", lambda *a, **k: built.append(1) or original(*a, **k))
    _, variants = clean_variants(tiny_dataset)
    ds = load_dataset(DatasetSpec(path=str(tiny_dataset), name="tiny"), announce=False)
    cands = pl.read_parquet(bm25_candidates(ds, variants, 8, str(tmp_path / "cache")).path)
    _, ranked = rerank_row(
        ds,
        cands,
        variants,
        BM25Spec(name="bm25", kind="bm25"),
        tmp_path / "rerank",
        rerank_depth=8,
        cache=tmp_path / "cache",
    )
    assert len(built) == 1
    table = dataset_corpus(ds, str(tmp_path / "cache"))
    again = table.path.with_suffix(".again")
    again.write_bytes(table.path.read_bytes())
    again.replace(table.path)  # made again, as terazi writes a table: another file
    bm25_index.shared(table.path, table.batches(), "turkish", 1.5, 0.75)
    assert len(built) == 2
    joined = cands.join(ranked, on=["condition", "sample", "query_id", "doc_id"], suffix="_rerank")
    np.testing.assert_allclose(joined["score_rerank"].to_numpy(), joined["score"].to_numpy(), rtol=1e-6)
    distinct = cands.group_by("query_id").agg(pl.col("score").n_unique() == pl.len()).filter(pl.col("score"))
    same = joined.filter(pl.col("query_id").is_in(distinct["query_id"].implode()))
    assert (same["rank"] == same["rank_rerank"]).all()  # no ties: the same order


def test_the_index_built_block_by_block_is_bm25s_own(tiny_dataset):
    """Two documents a block, an empty document and repeated tokens: every token's column (its rows and float32
    scores) is the one `bm25s.BM25.index` builds over all the tokens at once, bit for bit."""
    from terazi.models.bm25_index import build

    beir = load_beir(tiny_dataset)
    texts = [*(d.full_text for d in beir.docs.values()), "", "çay çay çay demlik", "..."]
    ours = build((texts[i : i + 2] for i in range(0, len(texts), 2)), "turkish", 1.2, 0.6)
    ref = bm25s.BM25(k1=1.2, b=0.6)
    ref.index([analyse(t) or [""] for t in texts], show_progress=False)
    s = ref.scores
    occurring = {t for t, i in ref.vocab_dict.items() if s["indptr"][i + 1] > s["indptr"][i]}
    assert ours.n_docs == len(texts) and set(ours.vocab) == occurring and "" in occurring
    for token, mine in ours.vocab.items():
        theirs = ref.vocab_dict[token]
        a, z = ours.indptr[mine], ours.indptr[mine + 1]
        b, y = s["indptr"][theirs], s["indptr"][theirs + 1]
        assert np.array_equal(ours.indices[a:z], s["indices"][b:y]), token
        assert np.array_equal(ours.data[a:z], s["data"][b:y]), token


@pytest.mark.slow
def test_a_run_with_a_bm25_first_stage(prefect_server, tmp_path, tiny_dataset):
    """`first_stages: [{kind: bm25}]` through the flow: the frozen set is BM25's own on the run's variants, and the
    BM25 reranker over it ranks as the first stage does (the same scores)."""
    import terazi
    from terazi.data.loading import read_variants

    cache = tmp_path / "cache"
    manifest, board = terazi.evaluate(
        {
            "datasets": [{"path": str(tiny_dataset), "name": "tiny"}],
            "first_stages": [{"name": "bm25", "kind": "bm25"}],
            "rerankers": [{"name": "bm25-tr", "kind": "bm25"}],
            "conditions": ["clean", "upper"],
            "robustness": "end-to-end",
            "depth": 8,
            "rerank_depth": 8,
            "bootstrap_resamples": 200,
            "offline": True,
            "out_dir": str(tmp_path / "results"),
            "cache_dir": str(cache),
            "run_name": "bm25",
        }
    )
    [cs], [ds] = manifest.candidates, manifest.datasets
    assert cs.encoder == "bm25" and manifest.config["first_stages"][0]["kind"] == "bm25"
    again = bm25_candidates(ds, read_variants(manifest.variants), 8, str(cache))
    assert again.reused and again.fingerprint == cs.fingerprint
    means = dict(board.select("system", "mean_task").iter_rows())
    assert abs(means["bm25-tr"] - means["first-stage"]) <= 1e-12
