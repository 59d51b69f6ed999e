"""Robustness decomposed: a corruption that changes only the candidate pool shows up end to end, not in the
isolated (reranker-only) setting, and the explanation says so."""

from __future__ import annotations

import polars as pl
import pytest

from terazi.analysis.retention import decomposition, retention_intervals
from terazi.base.turkish import tr_upper
from terazi.data.beir import load_beir
from terazi.data.loading import load_dataset
from terazi.metrics.per_query import changed_flags, per_query_values
from terazi.present.notes import explain
from terazi.retrieval.isolated import isolated_candidates, isolated_variants, with_isolated
from terazi.schemas import BM25Spec, DatasetSpec
from tests.stages import candidate_set, rerank_row


def pools(ds):
    """Clean pool: every judged document of the query and three distractors. Upper pool: the same without the
    grade-2 document, i.e. the corruption changes the candidates only."""
    other = ["d12", "d9", "d3"]
    cand, var = [], []
    for q in ds.judged_query_ids:
        judged = sorted(ds.qrels[q], key=lambda d: -ds.qrels[q][d])
        for cond, docs in (("clean", judged + other), ("upper", judged[1:] + other)):
            docs = list(dict.fromkeys(docs))
            cand += [(cond, 0, q, rank, d, 1.0 / rank) for rank, d in enumerate(reversed(docs), start=1)]
            text = ds.queries[q].text
            var.append((cond, 0, q, text if cond == "clean" else tr_upper(text), text, cond != "clean"))
    return (
        pl.DataFrame(cand, schema=["condition", "sample", "query_id", "rank", "doc_id", "score"], orient="row"),
        pl.DataFrame(var, schema=["condition", "sample", "query_id", "text", "original", "changed"], orient="row"),
    )


def test_pseudo_conditions_carry_clean_candidates_and_corrupted_text(tiny_dataset):
    ds = load_beir(tiny_dataset)
    cand, var = pools(ds)
    iso_c, iso_v = isolated_candidates(cand, var), isolated_variants(var)
    assert set(iso_c["condition"]) == set(iso_v["condition"]) == {"upper~isolated"}
    clean = cand.filter(pl.col("condition") == "clean").drop("condition")
    assert iso_c.drop("condition").sort("query_id", "rank").equals(clean.sort("query_id", "rank"))
    assert iso_v.drop("condition").equals(var.filter(pl.col("condition") == "upper").drop("condition"))
    all_c, all_v = with_isolated(cand, var)
    assert all_c.height == cand.height + iso_c.height and all_v.height == var.height + iso_v.height


def test_pool_only_loss_is_end_to_end_not_isolated(tiny_dataset, tmp_path):
    ds = load_beir(tiny_dataset)
    cand, var = with_isolated(*pools(ds))
    manifest = load_dataset(DatasetSpec(path=str(tiny_dataset), name="tiny"), announce=False)
    # BM25 with Turkish casing scores UPPER text exactly like clean text: the reranker itself is unaffected
    _, ranked = rerank_row(manifest, cand, var, BM25Spec(name="bm25", kind="bm25"), tmp_path, 5)
    pq = per_query_values(ds.qrels, ranked, changed_flags(var), ["nDCG@10"]).with_columns(
        pl.lit("tiny").alias("dataset"), pl.lit("bm25").alias("system")
    )
    ret = retention_intervals(pq, ["tiny"], ["clean", "upper", "upper~isolated"], 500, 0, 0.95)
    by = {r["setting"]: r for r in ret.iter_rows(named=True)}
    assert by["isolated"]["retention"] == pytest.approx(1.0, abs=1e-12)
    assert by["end-to-end"]["retention"] < 0.9  # the grade-2 document is gone from every upper pool
    assert by["end-to-end"]["retention_high"] < 1  # and significantly so

    first = per_query_values(
        ds.qrels, cand.filter(~pl.col("condition").str.contains("~")), changed_flags(var), ["R@5"]
    ).with_columns(pl.lit("tiny").alias("dataset"), pl.lit("first-stage").alias("system"))
    recall = retention_intervals(first, ["tiny"], ["clean", "upper"], 500, 0, 0.95)
    d = decomposition(ret, recall).row(0, named=True)
    assert d["end_to_end"] < d["reranker_only"] == pytest.approx(1.0) and d["first_stage_recall"] < 1
    lines = explain(decomposition(ret, recall), ["bm25"], ["upper"], 5, "first-stage")
    assert len(lines) == 1 and "loss comes from the candidate pool" in lines[0] and "recall@5" in lines[0]


def test_the_flow_hook_extends_the_tables_only_for_both(tiny_dataset, tmp_path):
    from terazi.data.loading import load_dataset
    from terazi.retrieval.isolated import add_isolated
    from terazi.schemas import DatasetSpec, VariantSet

    ds_manifest = load_dataset(DatasetSpec(path=str(tiny_dataset), name="tiny"))
    cand, var = pools(load_beir(tiny_dataset))
    sets = []
    for c in ("clean", "upper"):
        var.filter(pl.col("condition") == c).write_parquet(tmp_path / f"{c}.parquet")
        sets.append(
            VariantSet(
                dataset="tiny",
                condition=c,
                params={},
                seed=13,
                samples=1,
                path=str(tmp_path / f"{c}.parquet"),
                n_queries=4,
                n_changed=4 * (c != "clean"),
            )
        )
    cs = candidate_set(ds_manifest, cand, tmp_path / "frozen")
    assert add_isolated(ds_manifest, cs, sets, "end-to-end", str(tmp_path / "run")) == (cs, sets)
    cs2, sets2 = add_isolated(ds_manifest, cs, sets, "both", str(tmp_path / "run"))
    assert cs2.fingerprint == cs.fingerprint and cs2.path != cs.path  # same frozen candidates, extended table
    assert [v.condition for v in sets2] == ["clean", "upper", "upper~isolated"] and sets2[2].n_changed == 4
    ext = pl.read_parquet(cs2.path)
    assert (
        ext.filter(pl.col("condition") == "upper~isolated").height == cand.filter(pl.col("condition") == "clean").height
    )
    assert pl.read_parquet(sets2[2].path)["condition"].unique().to_list() == ["upper~isolated"]
