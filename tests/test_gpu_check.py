"""benchmarks/gpu_check.py: skips cleanly without CUDA, runs its whole path on the CPU with --dry-run, and counts
rank flips as it says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import gpu_check  # noqa: E402


def test_flips_are_counted_only_where_fp32_separates_the_candidates():
    ref = np.array([0.0, 1.0, 2.0, 2.001, 5.0, 6.0])  # two queries of three candidates
    other = np.array([1.1, 1.0, 2.0, 2.002, 6.0, 5.0])  # query 1: 0 and 1 swapped; query 2: 5 and 6 swapped
    tau, flips, clear = gpu_check.agreement(ref, other, [3, 3], tolerance=0.02)
    assert flips == 2 and clear == 6  # 3 separated pairs per query, one reversed in each
    tau, flips, clear = gpu_check.agreement(ref[:3], np.array([0.0, 2.0, 1.9999]), [3], tolerance=0.02)
    assert flips == 1 and abs(tau - 1 / 3) < 1e-12
    tau, flips, clear = gpu_check.agreement(np.array([2.0, 2.001, 0.0]), np.array([2.001, 2.0, 0.0]), [3], 0.02)
    assert flips == 0 and clear == 2  # a near-tie may reorder


def test_without_cuda_it_skips_cleanly(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the script would run for real")
    assert gpu_check.main([]) == 0
    assert "skipped, no CUDA device" in capsys.readouterr().out


@pytest.mark.slow
def test_dry_run_on_the_cpu(tmp_path):
    out = tmp_path / "gpu.json"
    res = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--dry-run", "--queries", "2", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "gpu_check: passed" in res.stdout
    rows = json.loads(out.read_text())["rows"]
    assert {(r["model"], r["precision"]) for r in rows} == {
        (m, p) for m in ("cross-encoder", "llm-reranker") for p in ("fp32", "fp16", "bf16")
    }
    for r in rows:
        assert r["pairs"] == 20 and r["pairs_per_s"] > 0 and r["batch_size"] >= 1
        assert r["passes"] == 2 and r["pairs_per_s_range"][0] <= r["pairs_per_s"] <= r["pairs_per_s_range"][1]
        assert f":{r['precision']}@cpu:" in r["identity"]
        if r["precision"] != "fp32":
            assert 0 < r["max_abs_diff"] < 1 and r["separated_pairs"] > 0 and r["verdict"] in ("ok", "reported")
        else:  # the reference scored again query by query keeps its order
            assert r["rebatched_flips"] == 0 and r["verdict"] == "stable"
