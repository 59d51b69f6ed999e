"""Run configurations from files, and the bundled demo benchmark (used by the CLI and the deployments)."""

from __future__ import annotations

import json
from pathlib import Path

from terazi.errors import ConfigError, DatasetError, check_utf8

DEMO_DIR = Path(__file__).parent / "demo"


def read_config_file(path: Path) -> dict:
    """An EvalConfig as YAML (.yaml/.yml), TOML (.toml) or JSON (anything else), not yet validated.

    Syntax errors name the file and line; YAML is read safely (no Python tags).
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    try:
        check_utf8(path)
    except DatasetError as e:
        raise ConfigError(str(e)) from None
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix in (".yaml", ".yml"):
        import yaml

        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f", line {mark.line + 1}" if mark else ""
            problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            if "could not determine a constructor" in str(e):
                problem = f"{problem} (only plain YAML is read; tags such as !!python/... are refused)"
            raise ConfigError(f"{path}{where}: not valid YAML: {problem}") from None
    elif path.suffix == ".toml":
        import tomllib

        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{path}: not valid TOML: {e}") from None
    else:
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}, line {e.lineno}: not valid JSON ({e.msg} at column {e.colno})") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of EvalConfig fields, got {type(raw).__name__}")
    return raw


def demo_config(out_dir: str = "results", cache_dir: str = ".terazi-cache", run_name: str | None = None) -> dict:
    """The demo: the bundled Turkish dataset with every default (offline MiniLM first stage, BM25 and its
    fusion with the first stage, four corruptions), three samples of the stochastic ones."""
    return {
        "benchmark": "terazi-demo",
        "datasets": [{"path": str(DEMO_DIR), "name": "terazi-demo", "task_type": "retrieval"}],
        "corruption": {"samples": 3},
        "out_dir": out_dir, "cache_dir": cache_dir, "run_name": run_name, "offline": True,
    }
