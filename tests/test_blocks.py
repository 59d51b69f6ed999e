"""The stages after the model read and write a block of whole variants at a time (terazi/data/blocks.py): every block
holds whole variants, and whatever is computed block by block (rankings, fusion, per-query values, run files, the
isolated setting's pool, the candidates' hash) equals what the whole table gives, whatever the block size; a file
without the layout is read whole instead."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from terazi.base import fingerprint
from terazi.data import blocks, runfolder
from terazi.data.blocks import Unsorted, aligned_blocks, blockwise, sorted_blocks, variant_blocks
from terazi.metrics.contracts import Policies
from terazi.metrics.engine import evaluate
from terazi.metrics.per_query import per_query_values
from terazi.rerank.ranking import rank_part, reciprocal_rank_fusion, write_fusion, write_ranking
from terazi.retrieval.isolated import isolated_blocks, with_isolated
from terazi.schemas.tables import RANKING, VARIANT

SORT = [*VARIANT, "rank"]
QRELS = {f"q{i}": {f"d{j}": (i + j) % 3 for j in range(0, 12, 2)} for i in range(6)} | {"q9": {"d1": 1}}
# q9 is judged but never ranked; q6 is ranked but not judged; q5's grades are all below 1 in half its documents


def candidates(seed: int = 0, depth: int = 6) -> pl.DataFrame:
    """Sorted candidates of conditions clean, typo (two samples) and upper over queries q0..q6."""
    rng, rows = random.Random(seed), []
    for cond, samples in (("clean", 1), ("typo", 2), ("upper", 1)):
        for smp in range(samples):
            for q in (f"q{i}" for i in range(7)):
                for rank, d in enumerate(rng.sample([f"d{j}" for j in range(12)], depth), start=1):
                    rows.append((cond, smp, q, rank, d, round(rng.random(), 2)))
    return pl.DataFrame(rows, schema=RANKING, orient="row")


def variants(cands: pl.DataFrame) -> pl.DataFrame:
    """The variants in the order the flow lists its variant sets: clean, upper, typo."""
    keys = cands.select(VARIANT).unique(maintain_order=True)
    order = {"clean": 0, "upper": 1, "typo": 2}
    return keys.sort(pl.col("condition").replace_strict(order), "sample", "query_id").with_columns(
        (pl.col("condition") != "clean").alias("changed"), pl.col("query_id").alias("text")
    )


def pool(tmp_path: Path) -> tuple[Path, pl.DataFrame]:
    """The isolated setting's pool as the flow writes it (candidates, then upper~isolated, typo~isolated: not sorted
    as a whole), in small row groups; and the same table in memory."""
    cands = candidates()
    cands.write_parquet(tmp_path / "cands.parquet")
    blocks.write_blocks(
        tmp_path / "pool.parquet", isolated_blocks(tmp_path / "cands.parquet", variants(cands)), lambda: pl.DataFrame()
    )
    whole = with_isolated(cands, variants(cands))[0]
    whole.write_parquet(tmp_path / "pool-small-groups.parquet", row_group_size=5)
    return tmp_path / "pool-small-groups.parquet", whole


def test_the_pool_streamed_equals_it_in_memory(tmp_path):
    _, whole = pool(tmp_path)
    assert pl.read_parquet(tmp_path / "pool.parquet").equals(whole)
    assert whole["condition"].unique(maintain_order=True).to_list() == [
        "clean",
        "typo",
        "upper",
        "upper~isolated",
        "typo~isolated",
    ]
    clean = whole.filter(pl.col("condition") == "clean").drop("condition", "sample")
    for cond, smp in (("upper~isolated", 0), ("typo~isolated", 0), ("typo~isolated", 1)):
        mine = whole.filter((pl.col("condition") == cond) & (pl.col("sample") == smp)).drop("condition", "sample")
        assert mine.equals(clean)


@pytest.mark.parametrize("rows", [1, 4, 25, 100_000])
def test_blocks_hold_whole_variants_in_file_or_sorted_order(tmp_path, rows):
    path, whole = pool(tmp_path)
    for read, expected in ((variant_blocks, whole), (sorted_blocks, whole.sort(SORT, maintain_order=True))):
        parts = list(read(path, RANKING, rows))
        assert pl.concat(parts).equals(expected), read.__name__
        keys = [set(p.select(VARIANT).unique().rows()) for p in parts]
        assert sum(map(len, keys)) == len(set().union(*keys))  # no variant in two blocks
        assert all(p.height <= rows + 6 or p.select(VARIANT).n_unique() == 1 for p in parts)  # a block, not a file
    assert all(p["condition"].n_unique() == 1 for p in sorted_blocks(path, RANKING, rows))


def test_a_file_without_the_layout_is_read_whole(tmp_path):
    cands = candidates()
    resumed = pl.concat([cands.filter(pl.col("query_id") < "q3"), cands.filter(pl.col("query_id") >= "q3")])
    shuffled = cands.sample(fraction=1.0, shuffle=True, seed=3)
    for name, frame in (("resumed", resumed), ("shuffled", shuffled)):
        frame.write_parquet(tmp_path / f"{name}.parquet", row_group_size=7)
        with pytest.raises(Unsorted):
            list(variant_blocks(tmp_path / f"{name}.parquet", RANKING, 10))
        got = blockwise(tmp_path / f"{name}.parquet", RANKING, lambda parts: pl.concat(list(parts)))
        assert got.equals(frame)


def expected_values(qrels: dict, ranking: pl.DataFrame, measures: list[str], policies: Policies) -> pl.DataFrame:
    """Each (condition, sample) ranking evaluated whole, samples of a query averaged; rows by condition (as they
    first appear), measure, then the judgments' order of queries."""
    values: dict[tuple, list[float]] = {}
    for (cond, _smp), part in ranking.group_by("condition", "sample", maintain_order=True):
        ev = evaluate(qrels, part.drop("condition", "sample"), measures, policies, order="rank")
        for m in measures:
            for q, v in zip(ev.query_ids[m], ev.per_query[m]):
                values.setdefault((cond, q, m), []).append(float(v))
    conds, order = ranking["condition"].unique(maintain_order=True).to_list(), list(qrels)
    keys = sorted(values, key=lambda k: (conds.index(k[0]), measures.index(k[2]), order.index(k[1])))
    return pl.DataFrame(
        [(c, q, m, sum(values[c, q, m]) / len(values[c, q, m])) for c, q, m in keys],
        schema=["condition", "query_id", "measure", "value"],
        orient="row",
    )


@pytest.mark.parametrize("policies", [Policies(), Policies(missing_query="skip", no_relevant="skip")])
def test_per_query_values_in_blocks_equal_each_ranking_evaluated_whole(tmp_path, policies):
    path, whole = pool(tmp_path)
    measures = ["nDCG@3", "RR@10", "R@5"]
    changed = pl.DataFrame({"condition": ["upper"], "query_id": ["q1"], "changed": [True]})
    want = expected_values(QRELS, whole, measures, policies)
    assert want.filter(pl.col("query_id") == "q9").height == (5 * 3 if policies.missing_query == "zero" else 0)
    for rows in (1, 7, 100_000):
        got = per_query_values(QRELS, variant_blocks(path, RANKING, rows), changed, measures, policies)
        assert got.drop("changed").equals(want), rows
        assert got.filter(pl.col("changed"))[["condition", "query_id"]].unique().rows() == [("upper", "q1")]
    assert per_query_values(QRELS, whole, changed, measures, policies).equals(got)  # one table: one block


def head_scores(frame: pl.DataFrame, depth: int, seed: int = 1) -> np.ndarray:
    """New scores of the candidates ranked ≤ depth, in the frame's order, with ties."""
    n = frame.filter(pl.col("rank") <= depth).height
    return np.random.default_rng(seed).integers(0, 4, n).astype(np.float64)


@pytest.mark.parametrize("rows", [1, 9, 100_000])
def test_rankings_and_fusions_of_the_pool_equal_the_whole_tables(tmp_path, monkeypatch, rows):
    path, whole = pool(tmp_path)
    monkeypatch.setattr(blocks, "BLOCK_ROWS", rows)
    heads = head_scores(whole, 4)
    write_ranking(tmp_path / "ranked.parquet", path, heads, 4)
    ranked = rank_part(whole, heads, 4)  # in memory: sorted by variant and rank
    assert pl.read_parquet(tmp_path / "ranked.parquet").equals(ranked)
    write_fusion(tmp_path / "fused.parquet", [path, tmp_path / "ranked.parquet"], 4, 60)
    assert pl.read_parquet(tmp_path / "fused.parquet").equals(reciprocal_rank_fusion([whole, ranked], 4, 60))
    short = ranked.filter(pl.col("query_id") != "q4")  # not the same variants: fused in memory
    short.write_parquet(tmp_path / "short.parquet")
    with pytest.raises(Unsorted):
        list(aligned_blocks([path, tmp_path / "short.parquet"], RANKING, rows))
    write_fusion(tmp_path / "fused-short.parquet", [path, tmp_path / "short.parquet"], 4, 60)
    assert pl.read_parquet(tmp_path / "fused-short.parquet").equals(reciprocal_rank_fusion([whole, short], 4, 60))


def test_run_files_and_the_candidates_hash_written_in_blocks_equal_the_whole_tables(tmp_path):
    path, whole = pool(tmp_path)
    samples = {"typo": 2, "typo~isolated": 2}
    for head in (None, 4):  # the systems' own scores; a rescored head above a tail moved below it
        one = runfolder.write_rankings(whole, tmp_path / f"one{head}", "x", "sys", samples, head)
        many = runfolder.write_rankings(
            variant_blocks(path, RANKING, 5), tmp_path / f"many{head}", "x", "sys", samples, head
        )
        one, many = sorted(one), sorted(many)
        assert [p.relative_to(tmp_path / f"one{head}") for p in one] == [
            p.relative_to(tmp_path / f"many{head}") for p in many
        ]
        assert len(one) == 7 and all(a.read_bytes() == b.read_bytes() for a, b in zip(one, many))
    ids = whole.select("condition", "sample", "query_id", "doc_id")
    rows = fingerprint.Rows()
    for part in variant_blocks(path, RANKING, 5):
        rows.add(part.select("condition", "sample", "query_id", "doc_id"))
    text = "\n".join("\t".join(map(str, r)) for r in ids.iter_rows())  # the definition, row by row
    assert rows.hexdigest() == fingerprint.of_rows(ids) == fingerprint.of_text(text)
