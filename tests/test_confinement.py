"""Nothing a config names is written outside the results and cache folders.

Names that become paths are slugs (rejected otherwise, naming the field); labels derived from folder
names are made safe and unique; and every file a run writes lies under out_dir or cache_dir.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from terazi.cli import app
from terazi.schemas import EvalConfig
from tests.conftest import make_tiny


def files_under(root: Path) -> set[Path]:
    """Every file below `root` but SQLite's own sidecar files, which come and go with other tests' connections."""
    return {p for p in root.rglob("*") if p.is_file() and not p.name.endswith(("-wal", "-shm"))}


def test_odd_but_valid_names_stay_inside_and_unique(prefect_server, tmp_path):
    from terazi.flows.evaluate import evaluate

    a = make_tiny(tmp_path / "a" / "tiny")
    b = make_tiny(tmp_path / "b" / "tiny")
    (a / "sub").mkdir()
    odd = tmp_path / "b" / "veri seti ğ"
    make_tiny(odd)
    before = files_under(tmp_path)
    out, cache = tmp_path / "out", tmp_path / "cache"
    manifest = evaluate(
        EvalConfig.model_validate(
            {
                "datasets": [{"path": f"{a}/sub/.."}, {"path": str(b)}, {"path": str(odd)}],
                "rerankers": [
                    {"name": "bm25.v1", "kind": "bm25"},
                    {"name": "fused_1", "kind": "rrf", "fuse": ["first-stage", "bm25.v1"]},
                ],
                "conditions": ["clean", "upper"],
                "depth": 10,
                "rerank_depth": 5,
                "bootstrap_resamples": 100,
                "out_dir": str(out),
                "cache_dir": str(cache),
                "run_name": "r.1",
                "offline": True,
            }
        )
    )
    assert [d.name for d in manifest.datasets] == ["tiny", "tiny-2", "veri-seti"]
    written = files_under(tmp_path) - before
    outside = [p for p in written if not (p.is_relative_to(out) or p.is_relative_to(cache))]
    assert written and not outside, outside
    assert (out / "r.1" / "rankings" / "tiny-2" / "bm25.v1.parquet").is_file()


@pytest.mark.parametrize(
    "yaml_line, field",
    [
        ("datasets: [{path: DATA, name: ../x}]", "datasets.0.name"),
        ("datasets: [{path: DATA, name: /abs}]", "datasets.0.name"),
        ("datasets: [{path: DATA, name: ..}]", "datasets.0.name"),
        ("datasets: [{path: DATA, name: a/b}]", "datasets.0.name"),
        ("datasets: [{path: DATA}]\nrerankers: [{name: ../../x, kind: bm25}]", "rerankers.0.bm25.name"),
        ("datasets: [{path: DATA}]\nrerankers: [{name: /abs, kind: bm25}]", "rerankers.0.bm25.name"),
        ("datasets: [{path: DATA}]\nrerankers: [{name: a/b, kind: bm25}]", "rerankers.0.bm25.name"),
        ("datasets: [{path: DATA}]\nrun_name: ../x", "run_name"),
        ("datasets: [{path: DATA}]\nrun_name: /abs", "run_name"),
        ("datasets: [{path: DATA}]\nrun_name: '..'", "run_name"),
        ("datasets: [{path: DATA}]\nrun_name: a/b", "run_name"),
        ("datasets: [{path: DATA, split: ../../x}]", "datasets.0.split"),
        ("benchmark: ../x\ndatasets: [{path: DATA}]", "benchmark"),
    ],
)
def test_names_that_would_escape_are_refused_and_nothing_is_written(tmp_path, yaml_line, field):
    data = make_tiny(tmp_path / "tiny")
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(
        yaml_line.replace("DATA", str(data)) + f"\nout_dir: {tmp_path / 'out'}\ncache_dir: {tmp_path / 'cache'}\n"
    )
    before = files_under(tmp_path.parent)
    result = CliRunner().invoke(app, ["run", "--config", str(cfg)])
    assert result.exit_code == 2 and f"field '{field}'" in result.output, result.output
    assert files_under(tmp_path.parent) == before
