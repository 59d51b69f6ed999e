"""A first stage computed elsewhere, imported from TREC runs: the candidates of a run, re-imported, give the same
rankings and leaderboard; runs that miss a judged query or name an unknown document are refused by file."""

from __future__ import annotations

import shutil

import polars as pl
import pytest

from terazi.base.errors import DatasetError
from terazi.corrupt.variants import corrupt_queries
from terazi.data.loading import load_dataset, open_dataset
from terazi.retrieval.external import import_candidates
from terazi.schemas import EvalConfig
from tests.conftest import tiny_config


def config(tmp_path, data, run_name, **dataset):
    return EvalConfig.model_validate(
        tiny_config(
            tmp_path,
            data,
            datasets=[{"path": str(data), "name": "tiny", **dataset}],
            conditions=["clean", "upper", "typo"],
            corruption={"samples": 2},
            depth=8,
            bootstrap_resamples=200,
            run_name=run_name,
        )
    )


def test_reimported_candidates_reproduce_the_run(prefect_server, tmp_path, tiny_dataset):
    from terazi.flows.evaluate import evaluate

    m1 = evaluate(config(tmp_path, tiny_dataset, "own"))
    runs = tmp_path / "gpu-first-stage"
    shutil.copytree(tmp_path / "results" / "own" / "candidates" / "tiny", runs)  # clean, upper, typo-0, typo-1
    m2 = evaluate(config(tmp_path, tiny_dataset, "imported", first_stage_runs=str(runs)))
    c1, c2 = m1.candidates[0], m2.candidates[0]
    assert c2.encoder == f"external:{runs}" and c2.encoder_identity.startswith("trec-runs:")
    assert c2.fingerprint != c1.fingerprint and c2.recall == c1.recall
    a, b = pl.read_parquet(c1.path), pl.read_parquet(c2.path)
    keys = ["condition", "sample", "query_id", "rank"]
    assert a.sort(keys).select(*keys, "doc_id").equals(b.sort(keys).select(*keys, "doc_id"))
    board1 = pl.read_csv(tmp_path / "results" / "own" / "leaderboard.csv")
    board2 = pl.read_csv(tmp_path / "results" / "imported" / "leaderboard.csv")
    assert board1.equals(board2)
    # the same runs again: the frozen set is found by its key, not rebuilt
    assert evaluate(config(tmp_path, tiny_dataset, "again", first_stage_runs=str(runs))).candidates[0].reused


def test_runs_must_cover_every_judged_query_and_know_every_document(tmp_path, tiny_dataset):
    ds = load_dataset(config(tmp_path, tiny_dataset, "x").datasets[0], str(tmp_path / "cache"))
    from terazi.schemas import CorruptionSpec

    variants = pl.read_parquet(corrupt_queries(ds, "clean", CorruptionSpec(), 13, str(tmp_path / "out")).path)
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "clean.trec").write_text("".join(f"q{i} Q0 d{i} 1 1.0 x\n" for i in (1, 2, 3)))
    with pytest.raises(DatasetError, match=r"clean.trec: 1 of 4 judged queries have no candidates, e.g. 'q4'"):
        import_candidates(ds, open_dataset(ds), runs, variants, 10, tmp_path / "cache")
    (runs / "clean.trec").write_text("".join(f"q{i} Q0 d{i} 1 1.0 x\n" for i in (1, 2, 3, 4)) + "q4 Q0 zz 2 0.5 x\n")
    with pytest.raises(DatasetError, match=r"document 'zz' \(query 'q4'\) is not in the dataset's corpus"):
        import_candidates(ds, open_dataset(ds), runs, variants, 10, tmp_path / "cache")
    (runs / "clean.trec").write_text("".join(f"q{i} Q0 d{i} 1 1.0 x\nq{i} Q0 d12 2 2.0 x\n" for i in (1, 2, 3, 4)))
    cs = import_candidates(ds, open_dataset(ds), runs, variants, 1, tmp_path / "cache")
    cand = pl.read_parquet(cs.path)
    assert cand.height == 4 and set(cand["doc_id"]) == {"d12"}  # ranked by score, cut to depth 1
    with pytest.raises(DatasetError, match="missing first-stage run for condition 'upper'"):
        import_candidates(
            ds,
            open_dataset(ds),
            runs,
            variants.with_columns(pl.lit("upper").alias("condition")),
            10,
            tmp_path / "cache",
        )
