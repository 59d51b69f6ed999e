"""The runs/ folder of a results folder carries the systems' own scores in terazi's order, so trec_eval's code
(pytrec_eval), MTEB's evaluator and ranx, reading those files as they are, give terazi's per-query values and the
leaderboard's figures to 1e-12: the demo run as the golden test runs it (BM25 and fused heads above the dense first
stage, four corrupted conditions, three samples)."""

from __future__ import annotations

import polars as pl

from terazi.data.trec import read_run
from tests.rescore import TOOLS, disagreements


def test_every_run_file_gives_terazis_figures_in_every_tool(prefect_server, tmp_path):
    import terazi
    from terazi.config.config_files import demo_config

    terazi.evaluate(demo_config(str(tmp_path / "results"), str(tmp_path / "cache"), "demo"))
    run = tmp_path / "results" / "demo"
    compared, worst = disagreements(run)
    assert worst <= 1e-12, worst
    assert all(compared[t] > 0 for t in TOOLS) and compared["leaderboard pytrec nDCG@10"] == 3, compared
    assert compared["leaderboard ranx nDCG@10"] >= 1  # ranx's figure where no tie reaches a top 10

    # the scores are the systems' own: the first stage's are its candidates', a head's are the reranker's, and the
    # tail below a head keeps the first stage's order one below the head's lowest score
    clean = run / "runs" / "terazi-demo" / "clean"
    frozen = pl.read_parquet(next((tmp_path / "cache" / "candidates").glob("*/candidates.parquet")))
    first = read_run(clean / "first-stage.trec").join(
        frozen.filter(pl.col("condition") == "clean"), on=["query_id", "doc_id"], suffix="_frozen"
    )
    assert first.height == frozen.filter(pl.col("condition") == "clean").height
    assert (first["score"] == first["score_frozen"]).all()
    bm25 = read_run(clean / "bm25-tr.trec", rank=True).join(
        pl.read_parquet(run / "rankings" / "terazi-demo" / "bm25-tr.parquet").filter(pl.col("condition") == "clean"),
        on=["query_id", "doc_id", "rank"],
        suffix="_ranking",
    )
    head, tail = bm25.filter(pl.col("rank") <= 30), bm25.filter(pl.col("rank") > 30)
    assert (head["score"] == head["score_ranking"]).all() and tail.height
    lowest = head.group_by("query_id").agg(pl.col("score").min().alias("low"))
    gaps = tail.group_by("query_id").agg(pl.col("score").max().alias("high")).join(lowest, on="query_id")
    assert (gaps["high"] < gaps["low"]).all()
