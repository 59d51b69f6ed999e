"""Several first stages in one run: a tiny random bi-encoder (dense) and BM25 over the corpus, two rerankers. Every
figure of each first stage equals a run with that first stage alone (to 1e-12); the pairs scored equal the union of
the two runs' pairs (a pair both first stages hold is scored once); Kendall's τ equals scipy's."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from terazi.analysis.protocol import kendall_tau
from terazi.rerank.store.sqlite import SQLiteStore

FILES = (
    "leaderboard.csv",
    "scores.csv",
    "comparisons.csv",
    "retention.csv",
    "robustness.csv",
    "ranks.csv",
    "depths.csv",
    "ceiling.csv",
)


def same(a: Path, b: Path) -> None:
    """Every results file of two folders: the same rows, numbers to 1e-12 (timings aside)."""
    for name in FILES:
        x, y = pl.read_csv(a / name), pl.read_csv(b / name)
        x, y = (f.drop([c for c in f.columns if c in ("seconds_per_query",)]) for f in (x, y))
        assert x.columns == y.columns and x.height == y.height, name
        for c in x.columns:
            if x[c].dtype.is_numeric():
                assert np.allclose(
                    x[c].to_numpy().astype(float), y[c].to_numpy().astype(float), atol=1e-12, rtol=0, equal_nan=True
                ), (name, c)
            else:
                assert x[c].to_list() == y[c].to_list(), (name, c)
    pa, pb = (
        pl.read_parquet(f / "per_query.parquet").sort("dataset", "system", "condition", "query_id", "measure")
        for f in (a, b)
    )
    assert pa.drop("value").equals(pb.drop("value")) and np.allclose(pa["value"], pb["value"], atol=1e-12, rtol=0)


@pytest.mark.slow
def test_two_first_stages_equal_two_runs_alone(prefect_server, tmp_path, tiny_dataset, tiny_bi_encoder):
    import terazi

    base = {
        "datasets": [{"path": str(tiny_dataset), "name": "tiny"}],
        "encoder": {"model": tiny_bi_encoder},
        "rerankers": [
            {"name": "bm25-tr", "kind": "bm25"},
            {"name": "bi", "kind": "bi-encoder", "model": tiny_bi_encoder, "max_length": 64},
        ],
        "conditions": ["clean", "upper"],
        "robustness": "end-to-end",
        "depth": 8,
        "rerank_depth": 5,
        "rerank_depths": [3, 5, 8],
        "bootstrap_resamples": 200,
        "offline": True,
        "out_dir": str(tmp_path / "results"),
    }
    dense, bm25 = {"name": "dense", "kind": "dense"}, {"name": "bm25", "kind": "bm25"}
    alone = str(tmp_path / "cache-alone")  # both runs alone on one cache: its store ends with the union of pairs
    terazi.evaluate({**base, "cache_dir": alone, "run_name": "dense"})  # `encoder:`, the shorthand
    after_dense = SQLiteStore(Path(alone) / "scores.sqlite").count()
    lexical, _ = terazi.evaluate({**base, "first_stages": [bm25], "cache_dir": alone, "run_name": "bm25"})
    both, _ = terazi.evaluate(
        {**base, "first_stages": [dense, bm25], "cache_dir": str(tmp_path / "cache-both"), "run_name": "both"}
    )
    out = Path(base["out_dir"])
    same(out / "both", out / "dense")
    same(out / "both" / "first-stages" / "bm25", out / "bm25")
    union = SQLiteStore(Path(alone) / "scores.sqlite").count()
    assert SQLiteStore(tmp_path / "cache-both" / "scores.sqlite").count() == union
    dense_pairs = sum(r.pairs_scored for r in both.reranks if r.system == "bi")  # bm25-tr bypasses the store
    assert 0 < dense_pairs < union  # the BM25 first stage added pairs of its own
    # the manifest's shared pairs, measured through the store: the dense run alone filled it with the dense pairs,
    # the BM25 run after it found the shared ones there (cached) and scored the rest, ending with the union
    rows = {r.system: r for r in both.shared_pairs}
    assert sorted(rows) == ["bi", "bm25-tr"] and after_dense == rows["bi"].pairs["dense"]
    assert union == rows["bi"].unique
    for r in lexical.reranks:
        if r.system == "bi":
            assert rows[r.system].shared == r.pairs_cached > 0 and rows[r.system].pairs["bm25"] == r.pairs_unique
            assert rows[r.system].unique == rows[r.system].pairs["dense"] + r.pairs_unique - rows[r.system].shared
    page = (out / "both" / "protocol.md").read_text(encoding="utf-8")
    assert "## Pairs shared between first stages" in page
    for stage, root in (("dense", out / "dense"), ("bm25", out / "bm25")):  # retention per first stage: each alone's
        recall = pl.read_csv(root / "robustness.csv").filter(pl.col("condition") == "upper")["first_stage_recall"][0]
        assert f"{recall:.3f} ({stage})" in page.split("- upper: ", 1)[1].split("\n", 1)[0]

    # the same runs made elsewhere: runs/<dataset>/<condition>/<first stage>~<system>.trec, analysed
    runs = tmp_path / "runs-elsewhere"
    for stage, root in (("dense", out / "both"), ("bm25", out / "both" / "first-stages" / "bm25")):
        for f in (root / "runs").rglob("*.trec"):
            to = runs / f.parent.relative_to(root) / f"{stage}~{f.name}"
            to.parent.mkdir(parents=True, exist_ok=True)
            to.write_bytes(f.read_bytes())
    for part in ("qrels", "changed"):
        shutil.copytree(out / "both" / part, runs / part)
    analyzed, _ = terazi.analyze(
        runs,
        out=tmp_path / "analyzed",
        metrics=both.config["metrics"],
        bootstrap_resamples=200,
        first_stages=["dense", "bm25"],
    )
    got = Path(analyzed.run_dir)
    assert pl.read_csv(got / "protocol.csv").equals(pl.read_csv(out / "both" / "protocol.csv"))  # τ, interval, flips
    for a, b in ((got, out / "both"), (got / "first-stages" / "bm25", out / "both" / "first-stages" / "bm25")):
        mine, theirs = (pl.read_csv(f / "leaderboard.csv").select("system", "mean_task").sort("system") for f in (a, b))
        assert mine["system"].to_list() == theirs["system"].to_list()
        assert np.allclose(mine["mean_task"], theirs["mean_task"], atol=1e-12, rtol=0)

    # `terazi compare` of two runs that both swept depths: their depth tables side by side
    cmp = terazi.compare(out / "dense", out / "bm25", bootstrap_resamples=200)
    a, b = (pl.read_csv(out / n / "depths.csv") for n in ("dense", "bm25"))
    assert cmp.depths.select("system", "depth").rows() == b.select("system", "depth").rows()
    assert np.allclose(cmp.depths["delta"], b["mean"] - a["mean"], atol=1e-12, rtol=0)
    assert cmp.depths["before"].to_list() == a["mean"].to_list()
    assert cmp.depths["enough_after"].to_list() == b["enough"].to_list()
    assert '"depths"' in cmp.to_json()
    from terazi.present.comparison_text import comparison_markdown

    assert "| system | depth | before | after |" in comparison_markdown(cmp)
    protocol = pl.read_csv(out / "both" / "protocol.csv")
    assert protocol["first_stage"].to_list() == ["dense"] and protocol["versus"].to_list() == ["bm25"]
    assert protocol["rerankers"].item() == 2 and protocol["tau"].item() in (-1.0, 1.0)
    assert protocol["sentence"].item() in (out / "both" / "protocol.md").read_text(encoding="utf-8")


def test_kendall_tau_equals_scipy():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    for n in (2, 3, 5, 9):
        a, b = rng.normal(size=n), rng.normal(size=n)
        b[: n // 2] = np.round(b[: n // 2], 0)  # some ties
        want = scipy_stats.kendalltau(a, b).statistic
        assert math.isclose(kendall_tau(a, b), want, abs_tol=1e-12)
    assert math.isnan(kendall_tau(np.ones(3), np.arange(3.0)))
    assert kendall_tau(np.array([3.0, 2.0, 1.0]), np.array([1.0, 2.0, 3.0])) == -1.0


def test_runs_of_several_first_stages_named_or_refused(tmp_path):
    from terazi.base.errors import DatasetError
    from terazi.data import runfolder

    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "d.tsv").write_text("q1 0 a 1\n")
    clean = tmp_path / "runs" / "d" / "clean"
    clean.mkdir(parents=True)
    for name in ("dense~first-stage", "dense~ce", "bm25~first-stage", "bm25~ce"):
        (clean / f"{name}.trec").write_text("q1 Q0 a 1 1.0 x\n")
    found = runfolder.scan(tmp_path)
    assert runfolder.first_stages(found, None) == ["bm25", "dense"]
    assert runfolder.first_stages(found, ["dense", "bm25"]) == ["dense", "bm25"]
    assert sorted(found[0].of_stage("dense").runs["clean"][0]) == ["ce", "first-stage"]
    with pytest.raises(DatasetError, match="do not match"):
        runfolder.first_stages(found, ["dense"])
    (clean / "ce.trec").write_text("q1 Q0 a 1 1.0 x\n")
    with pytest.raises(DatasetError, match="has no first stage"):
        runfolder.first_stages(runfolder.scan(tmp_path), None)
