"""Run configurations from files with the command line's flags laid over, and the bundled demo benchmark (used by the
CLI and the deployments)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from terazi.base.errors import ConfigError, DatasetError, check_utf8

DEMO_DIR = Path(__file__).parents[1] / "demo"


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
        "out_dir": out_dir,
        "cache_dir": cache_dir,
        "run_name": run_name,
        "offline": True,
    }


def with_datasets(raw: dict, datasets: list[str] | None, split: str | None) -> dict:
    """A config's fields with the command line's datasets (replacing the file's) and split (for every dataset) laid
    over; a config with no dataset either way is refused."""
    if datasets:
        raw["datasets"] = [{"path": d, **({"split": split} if split else {})} for d in datasets]
    elif split:
        for d in raw.get("datasets", []):
            d["split"] = split
    if not raw.get("datasets"):
        raise ConfigError("no dataset: give --dataset PATH or a --config file with datasets")
    return raw


def given(model: type, args: dict[str, Any], **renamed: str) -> dict[str, Any]:
    """The flags a command was given (not None) that set fields of `model` (a pydantic model), by field: a parameter is
    named as the field it sets, or `renamed` (parameter → field, `section.field` for a section's) says which."""
    fields = {renamed.get(name, name): value for name, value in args.items() if value is not None}
    return {name: value for name, value in fields.items() if name.split(".")[0] in model.model_fields}


def laid_over(raw: dict, fields: dict[str, Any]) -> dict:
    """A config file's fields with the command line's laid over: a dotted name sets a field of a section
    (`encoder.model`), keeping the section's other fields."""
    for name, value in fields.items():
        *sections, field = name.split(".")
        target = raw
        for section in sections:
            target = target.setdefault(section, {})
        target[field] = value
    return raw


def results_folder(out: str | None) -> dict[str, str]:
    """`--out FOLDER` as config fields: the results go straight into FOLDER (no time-stamped sub-folder)."""
    return {"out_dir": str(Path(out).parent), "run_name": Path(out).name} if out else {}


def key_values(items: list[str] | None, option: str, form: str) -> dict[str, str]:
    """Repeated `KEY=VALUE` options (`--name bge=BAAI/…`, `--mobile ne_zaman=0.5`) as a mapping; a malformed one is
    refused naming the option and the `form` expected."""
    pairs = {}
    for item in items or []:
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise ConfigError(f"{option} {item!r}: expected {form}")
        pairs[key.strip()] = value.strip()
    return pairs
