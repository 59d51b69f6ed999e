"""Copies tie exactly: a corpus of 5,000 passages, 200 of them exact copies of others under new ids, at random places
across the encoding shards and blocks, 1,000 queries. In every candidate list of the dense first stage (exact search,
HNSW, IVF), of BM25 and of a bi-encoder reranker, a passage and each copy of it that both make a list score the very
same float; where a list's end cuts a passage's copies apart, the kept ones are the larger ids tied at the cut's score,
as the field's tie rule (score, then document id, descending) keeps them."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from terazi.corrupt.variants import corrupt_queries
from terazi.data.beir import write_beir
from terazi.data.loading import load_dataset, read_variants
from terazi.retrieval.bm25 import bm25_candidates
from terazi.schemas import BiEncoderSpec, CorruptionSpec, DatasetSpec, EncoderSpec, ScaleSpec
from tests.stages import first_stage, rank_row

PASSAGES, COPIES, QUERIES, DEPTH = 5000, 200, 1000, 20
SCALE = ScaleSpec(shard_size=1500, chunk_pairs=3000)  # shards of 1,500 rows across encoding blocks of 2,048


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """(dataset, clean variants, cache folder, each document's text group): passages of random words; 200 of them
    copies of 200 others, every passage placed at random and named by a random number, so that which of a passage
    and its copy sorts first by id is chance."""
    rng = np.random.default_rng(45)
    words = ["".join(rng.choice(list("abcçdefgğhıijklmnoöprsştuüvyz"), rng.integers(3, 9))) for _ in range(800)]
    distinct = [" ".join(rng.choice(words, rng.integers(6, 14))) for _ in range(PASSAGES - COPIES)]
    texts = distinct + [distinct[i] for i in rng.choice(len(distinct), COPIES, replace=False)]
    place = rng.permutation(PASSAGES)
    ids = [str(i) for i in rng.choice(10 * PASSAGES, PASSAGES, replace=False)]
    docs = [{"_id": ids[i], "text": texts[i]} for i in place]
    asked = rng.choice(PASSAGES, QUERIES)
    queries = [{"_id": f"q{j}", "text": " ".join(texts[i].split()[2:6])} for j, i in enumerate(asked)]
    root = tmp_path_factory.mktemp("copies")
    write_beir(root / "data", docs, queries, [(f"q{j}", ids[i], 1) for j, i in enumerate(asked)])
    ds = load_dataset(DatasetSpec(path=str(root / "data"), name="copies"), announce=False)
    vs = corrupt_queries(ds, "clean", CorruptionSpec(), 13, str(root / "out"))
    first = {t: ids[i] for i, t in enumerate(texts)}
    group = pl.DataFrame({"doc_id": ids, "group": [first[t] for t in texts]})
    assert group["group"].n_unique() == PASSAGES - COPIES
    return ds, vs, str(root / "cache"), group


def check_ties(cand: pl.DataFrame, group: pl.DataFrame, at_cut: bool = True) -> tuple[int, int]:
    """Every list's members of one text group score alike; with `at_cut`, a group the list holds only part of is
    cut at the list's last score and keeps its larger ids. Returns (lists holding a passage with a copy, lists
    cutting a group apart)."""
    sizes = group.group_by("group").len("size")
    rows = cand.join(group, on="doc_id").join(sizes, on="group")
    assert rows.height == cand.height
    rows = rows.with_columns(cut=pl.col("score").min().over("query_id"))
    per = rows.group_by("query_id", "group").agg(
        pl.col("score").n_unique().alias("scores"),
        pl.len().alias("held"),
        pl.col("size").first(),
        (pl.col("score").first() == pl.col("cut").first()).alias("at_cut"),
        pl.col("doc_id").min().alias("lowest"),
    )
    assert per["scores"].max() == 1  # one score per text group in every list
    cut_apart = per.filter(pl.col("held") < pl.col("size"), pl.col("held") > 0)
    if at_cut and cut_apart.height:
        assert cut_apart["at_cut"].all()
        left = group.join(cut_apart.select("query_id", "group", "lowest"), on="group").join(
            rows.select("query_id", "doc_id", pl.lit(True).alias("in")), on=["query_id", "doc_id"], how="left"
        )
        out = left.filter(pl.col("in").is_null())
        assert (out["doc_id"] < out["lowest"]).all()  # the smaller ids are the ones left out
    return per.filter(pl.col("held") > 1).height, cut_apart.height


def test_copies_tie_in_every_first_stage_and_the_bi_encoder_reranker(corpus, tiny_bi_encoder, tmp_path):
    ds, vs, cache, group = corpus
    seen = {}
    for index in ("flat", "hnsw", "ivf"):
        cs = first_stage(
            ds, [vs], EncoderSpec(model=tiny_bi_encoder, index=index, batch_size=128), DEPTH, cache, scale=SCALE
        )
        cand = pl.read_parquet(cs.path)
        assert cand["query_id"].n_unique() == QUERIES and cand.group_by("query_id").len()["len"].max() == DEPTH
        seen[index] = check_ties(cand, group)
        if index == "flat":
            flat = cs
    assert seen["flat"][0] > 100 and seen["flat"][1] > 0, seen  # the property is exercised, cuts included
    assert all(held > 100 for held, _ in seen.values()), seen

    bm25 = pl.read_parquet(bm25_candidates(ds, read_variants([vs]), DEPTH, cache).path)
    held, _ = check_ties(bm25, group)
    assert held > 100

    spec = BiEncoderSpec(name="bi", kind="bi-encoder", model=tiny_bi_encoder)  # the first stage's vectors
    result = rank_row(ds, flat, [vs], spec, DEPTH, cache, str(tmp_path / "out"), SCALE)  # 7 chunks of pairs
    held, _ = check_ties(pl.read_parquet(result.path), group, at_cut=False)
    assert held > 100
