"""The whole recipe in this process: every step of flows/evaluate.py through tests/stages.py's `INLINE` steps (each
task's own function, called here; no Prefect server, no artifact), on the golden runs of the tiny dataset (the tiny
benchmark: five rows of four kinds, two datasets, judged variants; then the protocol: a dense and a BM25 first stage,
depth sweeps, the pairs they share). Their results folders are those the flow wrote into tests/golden/
(tests/test_golden.py), file by file: the recipe a test runs is the one a run runs."""

from __future__ import annotations

import pytest

from benchmarks.tiny import cross_encoder
from terazi.schemas import EvalConfig
from tests.conftest import make_tiny
from tests.golden_checks import check_results, golden_paths, protocol_run, tiny_run
from tests.stages import evaluation


@pytest.mark.slow
def test_the_whole_recipe_in_process_writes_what_the_flow_wrote(tmp_path, minilm_path):
    out, cache = tmp_path / "results", tmp_path / "cache"
    tiny = make_tiny(tmp_path / "tiny")
    ce = cross_encoder(tmp_path / "models" / "tiny-ce")
    # in the golden runs' order: the protocol reuses the tiny benchmark's dense candidates and cross-encoder scores
    runs = [
        evaluation(EvalConfig.model_validate(run))
        for run in (tiny_run(tiny, ce, minilm_path, out, cache), protocol_run(tiny, ce, out, cache))
    ]
    assert [r.flow_run_id for r in runs] == [None, None]  # no Prefect run was made
    clean = golden_paths(tmp_path, ce, minilm_path)
    for part in ("tiny", "protocol", "protocol/first-stages/bm25"):
        check_results(part, out / part, clean)
