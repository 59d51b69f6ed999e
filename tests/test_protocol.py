"""configs/protocol.yaml runs offline through the flow (a dense and a BM25 first stage, depths 10–100): the depth
sweep and the ceiling land in every output of both first stages, the protocol table compares them, the
sweep's headline at rerank_depth equals the leaderboard's (the same run, ranked two ways, to 1e-12), the clean
queries alone are scored past rerank_depth and nothing past the deepest depth, and the ceiling's recall at the
candidates' depth equals the one the first stage recorded when it froze them."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_protocol_preset(prefect_server, tmp_path):
    import terazi
    from terazi.config.config_files import read_config_file

    raw = read_config_file(ROOT / "configs" / "protocol.yaml")
    raw["datasets"][0]["path"] = str(ROOT / raw["datasets"][0]["path"])  # the preset runs from the repository root
    manifest, _ = terazi.evaluate({**raw, "out_dir": str(tmp_path / "results"), "cache_dir": str(tmp_path / "cache")})
    run = Path(manifest.run_dir)
    depths, ceiling = pl.read_csv(run / "depths.csv"), pl.read_csv(run / "ceiling.csv")
    assert sorted(depths["system"].unique().to_list()) == ["bm25-tr", "minilm-bi"]  # a fusion rescores nothing
    assert depths.filter(pl.col("system") == "bm25-tr")["depth"].to_list() == raw["rerank_depths"]
    assert depths.group_by("system").agg(pl.col("enough").sum())["enough"].to_list() == [1, 1]
    board = pl.read_csv(run / "leaderboard.csv").filter(pl.col("system") == "bm25-tr")
    at_30 = depths.filter((pl.col("depth") == raw["rerank_depth"]) & (pl.col("system") == "bm25-tr"))
    assert abs(at_30["mean"].item() - board["mean_task"].item()) <= 1e-12
    assert ((depths["share_of_ceiling"] > 0) & (depths["share_of_ceiling"] <= 1)).all()

    [bm25] = [r for r in manifest.reranks if r.system == "bm25-tr"]
    queries = {v.condition: v.n_queries for v in manifest.variants}
    assert bm25.pairs_needed == queries["clean"] * 100 + sum(n for c, n in queries.items() if c != "clean") * 30
    [cs] = manifest.candidates
    recall = ceiling.filter(pl.col("depth") == cs.depth)["recall"].item()
    assert round(recall, 6) == cs.recall["clean"]  # the manifest records it to 6 decimals
    assert ceiling["oracle"].is_sorted() and ceiling["recall"].is_sorted()  # deeper lists allow more

    lexical = run / "first-stages" / "bm25"  # the second first stage: a results folder of its own
    assert (
        pl.read_csv(lexical / "depths.csv").filter(pl.col("system") == "bm25-tr")["depth"].to_list()
        == raw["rerank_depths"]
    )
    assert pl.read_csv(lexical / "ceiling.csv")["recall"].is_sorted()
    protocol = pl.read_csv(run / "protocol.csv")
    assert protocol.select("first_stage", "versus").rows() == [("dense", "bm25")] and protocol["rerankers"].item() == 3
    assert protocol["sentence"].item() in (run / "protocol.md").read_text(encoding="utf-8")
    assert 0 < protocol["tau"].item() <= 1  # three rerankers: an order to compare (two tie on BM25's candidates)

    tables = json.loads((run / "tables.json").read_text(encoding="utf-8"))
    assert tables["depths"]["sentences"][0].startswith("bm25-tr: ")
    assert "## Rerank depth and the ceiling" in (run / "leaderboard.md").read_text(encoding="utf-8")
    assert 'id="plot-depths"' in (run / "report.html").read_text(encoding="utf-8")
