"""Bounds: a config (or the deployment form) that asks for unbounded work is refused before any heavy stage, with
the field, the figure, the limit and what to change; `terazi run --no-limits` lifts the limits, `terazi serve
--max-…` sets them for served runs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from terazi.base.errors import LimitError
from terazi.config.policy import NO_LIMITS, ServicePolicy, limits_in_force
from terazi.config.preflight import preflight, within_limits
from terazi.data.loading import load_dataset
from terazi.schemas import EvalConfig, Limits
from tests.conftest import TERAZI

ROOT = Path(__file__).resolve().parents[1]


def config(tmp_path: Path, dataset: Path, **extra) -> EvalConfig:
    return EvalConfig.model_validate(
        {
            "datasets": [{"path": str(dataset)}],
            "out_dir": str(tmp_path / "results"),
            "cache_dir": str(tmp_path / "cache"),
            "offline": True,
            **extra,
        }
    )


@pytest.mark.parametrize(
    "extra, field",
    [
        ({"bootstrap_resamples": 1_000_000_000}, "bootstrap_resamples"),
        ({"corruption": {"samples": 100_000}}, "corruption.samples"),
        ({"task_runner_workers": 10_000}, "task_runner_workers"),
    ],
)
def test_the_configs_own_numbers_are_refused_before_anything_loads(tmp_path, extra, field, monkeypatch):
    monkeypatch.delenv(NO_LIMITS, raising=False)
    cfg = config(tmp_path, tmp_path / "not-even-there", **extra)  # refused before the dataset is read
    with pytest.raises(
        LimitError,
        match=rf"^{field}: [\d,]+ is over the limit of [\d,]+; lower it, or allow more "
        r"with `terazi run --no-limits`",
    ):
        preflight(cfg, announce=False)


def test_the_work_estimates_count_variants_depth_and_queries(tmp_path, tiny_dataset):
    # the tiny dataset has 4 judged queries; clean, upper (1 sample each) and mobile (3 samples): 5 variants a query
    cfg = config(
        tmp_path,
        tiny_dataset,
        conditions=["clean", "upper", "mobile"],
        corruption={"samples": 3},
        depth=10,
        rerank_depth=5,
        bootstrap_resamples=500,
    )
    datasets = [load_dataset(cfg.datasets[0], cfg.cache_dir, announce=False)]
    assert datasets[0].n_queries == 4
    within_limits(cfg, Limits(pairs=4 * 5 * 10, cells=500 * 4), "", datasets)  # exactly at the limits: allowed
    with pytest.raises(
        LimitError,
        match=r"^first-stage pairs \(4 judged queries × 5 variants × depth 10\): 200 is "
        r"over the limit of 199",
    ):
        within_limits(cfg, Limits(pairs=199), "", datasets)
    with pytest.raises(LimitError, match=r"^bootstrap cells .*: 2,000 is over the limit of 1,999"):
        within_limits(cfg, Limits(cells=1999), "", datasets)


def test_no_limits_lifts_them_and_a_served_run_gets_its_servers(tmp_path, monkeypatch):
    monkeypatch.delenv("PREFECT__RUNTIME__DEPLOYMENT__ID", raising=False)
    monkeypatch.setenv(NO_LIMITS, "1")
    assert limits_in_force() == (None, "")
    served = ServicePolicy(results_root=str(tmp_path), cache_root=str(tmp_path), limits=Limits(resamples=5000))
    monkeypatch.setenv("TERAZI_SERVICE_POLICY", served.model_dump_json())
    monkeypatch.setenv("PREFECT__RUNTIME__DEPLOYMENT__ID", "00000000-0000-0000-0000-000000000001")
    limits, allow_more = limits_in_force()  # the form cannot lift them: --no-limits' variable does not count
    assert limits == Limits(resamples=5000) and "terazi serve --max-resamples" in allow_more.format(flag="resamples")
    with pytest.raises(
        LimitError,
        match=r"bootstrap_resamples: 6,000 is over the limit of 5,000; lower it, or ask "
        r"whoever serves it \(set by `terazi serve --max-resamples`\)",
    ):
        preflight(config(tmp_path, tmp_path / "x", bootstrap_resamples=6000), announce=False)


def test_the_cli_refuses_in_one_line_before_prefect_starts(tmp_path, tiny_dataset):
    env = {k: v for k, v in os.environ.items() if k != NO_LIMITS}
    proc = subprocess.run(
        [
            *TERAZI,
            "run",
            "--dataset",
            str(tiny_dataset),
            "--out",
            str(tmp_path / "r"),
            "--cache",
            str(tmp_path / "c"),
            "--offline",
            "--samples",
            "100000",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "corruption.samples: 100,000 is over the limit of 100" in proc.stderr and "--no-limits" in proc.stderr
    assert "Traceback" not in proc.stderr and "starting Prefect" not in proc.stderr


def test_5_the_number_of_depths_is_bounded_and_first_stages_multiply_the_pairs(tmp_path, tiny_dataset, monkeypatch):
    monkeypatch.delenv(NO_LIMITS, raising=False)
    monkeypatch.delenv("PREFECT__RUNTIME__DEPLOYMENT__ID", raising=False)
    base = {
        "datasets": [{"path": str(tiny_dataset)}],
        "out_dir": str(tmp_path / "r"),
        "cache_dir": str(tmp_path / "c"),
        "offline": True,
        "depth": 20_000,
        "rerank_depth": 10,
    }
    many = EvalConfig.model_validate({**base, "rerank_depths": list(range(1, 1001))})
    with pytest.raises(
        LimitError,
        match=r"^rerank_depths \(depths in the sweep\): 1,000 is over the limit of 100; "
        r"lower it, or allow more with `terazi run --no-limits`",
    ):
        preflight(many, announce=False)
    assert not (tmp_path / "c").exists()  # refused before anything was read or written
    # a served run: the server's limit (terazi serve --max-depths), which the form cannot lift
    monkeypatch.setenv(NO_LIMITS, "1")
    served = ServicePolicy(results_root=str(tmp_path), cache_root=str(tmp_path), limits=Limits(depths=5))
    monkeypatch.setenv("TERAZI_SERVICE_POLICY", served.model_dump_json())
    monkeypatch.setenv("PREFECT__RUNTIME__DEPLOYMENT__ID", "00000000-0000-0000-0000-000000000001")
    six = EvalConfig.model_validate({**base, "depth": 100, "rerank_depths": [1, 2, 3, 4, 5]})  # 10 is added: 6
    with pytest.raises(
        LimitError,
        match=r"rerank_depths \(depths in the sweep\): 6 is over the limit of 5; lower it, "
        r"or ask whoever serves it \(set by `terazi serve --max-depths`\)",
    ):
        preflight(six, announce=False)
    # two first stages rank every variant twice: 4 judged queries × 2 variants (clean, upper) × depth 10 × 2
    two = EvalConfig.model_validate(
        {
            **base,
            "depth": 10,
            "conditions": ["clean", "upper"],
            "first_stages": [{"name": "dense"}, {"name": "bm25", "kind": "bm25"}],
        }
    )
    datasets = [load_dataset(two.datasets[0], two.cache_dir, announce=False)]
    within_limits(two, Limits(pairs=160), "", datasets)
    with pytest.raises(
        LimitError,
        match=r"^first-stage pairs \(4 judged queries × 2 variants × depth 10 × 2 first "
        r"stages\): 160 is over the limit of 159",
    ):
        within_limits(two, Limits(pairs=159), "", datasets)
