"""Run configurations from files, and the bundled demo benchmark (used by the CLI and the deployments)."""

from __future__ import annotations

import json
from pathlib import Path

DEMO_DIR = Path(__file__).parent / "demo"


def read_config_file(path: Path) -> dict:
    """An EvalConfig as YAML (.yaml/.yml), TOML (.toml) or JSON (anything else), not yet validated."""
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".yaml", ".yml"):
        import yaml

        return yaml.safe_load(text) or {}
    if path.suffix == ".toml":
        import tomllib

        return tomllib.loads(text)
    return json.loads(text)


def demo_config(out_dir: str = "results", cache_dir: str = ".terazi-cache", run_name: str | None = None) -> dict:
    """The demo: bundled Turkish dataset, offline MiniLM first stage, BM25 and RRF rerankers, four corruptions."""
    return {
        "datasets": [{"path": str(DEMO_DIR), "name": "terazi-demo", "task_type": "retrieval"}],
        "rerankers": [
            {"name": "bm25-tr", "kind": "bm25"},
            {"name": "hybrid-rrf", "kind": "rrf", "fuse": ["first-stage", "bm25-tr"]},
        ],
        "conditions": ["clean", "upper", "ascii_full", "mobile", "typo"],
        "corruption": {"samples": 3},
        "out_dir": out_dir, "cache_dir": cache_dir, "run_name": run_name, "offline": True,
    }
