"""MTEB result folders as a long score table, so `terazi leaderboard` ranks models evaluated with MTEB.

The layout is MTEB's: `<model>/<revision>/<task>.json` (optionally under `results/`), the model name
with `/` written as `__`, and each file `{"task_name": …, "scores": {split: [{"main_score": …,
"hf_subset": …, "languages": [...]}, …]}}` (the format of mteb ≥ 1.11). `model_meta.json` is skipped.
A task's score is then the mean of `main_score` over the splits and subsets kept. Result files do
not say a task's type, so it comes from the caller (`--task-type TASK=TYPE`), else `default_type`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl


def result_files(folder: str | Path) -> list[Path]:
    folder = Path(folder)
    if (folder / "results").is_dir():
        folder = folder / "results"
    return sorted(f for f in folder.glob("*/*/*.json") if f.name != "model_meta.json")


def _entries(path: Path, split: str | None, language: str | None) -> tuple[str, list[tuple[str, str, float]]]:
    """(task name, [(split, subset, main_score)]) of one result file; errors name the file and the entry."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not a JSON file ({e})") from None
    scores = data.get("scores") if isinstance(data, dict) else None
    if not isinstance(scores, dict):
        raise ValueError(f"{path}: no 'scores' object (expected the result format of mteb ≥ 1.11)")
    out = []
    for sp, entries in scores.items():
        if split is not None and sp != split:
            continue
        if not isinstance(entries, list):
            raise ValueError(f"{path}: scores.{sp} is not a list of subset results")
        for i, entry in enumerate(entries):
            score = entry.get("main_score") if isinstance(entry, dict) else None
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
                number = isinstance(score, float) and not math.isnan(score)
                what = "missing" if score is None else f"{score!r}, not a {'finite ' if number else ''}number"
                raise ValueError(f"{path}: scores.{sp}[{i}].main_score is {what}")
            langs = [str(x) for x in entry.get("languages") or []]
            if language is not None and not any(x == language or x.split("-")[0] == language for x in langs):
                continue
            out.append((sp, str(entry.get("hf_subset", "default")), float(score)))
    return str(data.get("task_name") or path.stem), out


def read_mteb_results(
    folder: str | Path,
    task_types: dict[str, str] | None = None,
    default_type: str = "unspecified",
    split: str | None = None,
    language: str | None = None,
) -> pl.DataFrame:
    """(system, task, task_type, score, split, subset, revision): one row per split × subset of every result file.

    A model with several revision folders becomes one system per revision (`model@revision`); none is
    picked silently. `split` keeps one split; `language` keeps subsets in that language (`tur` or `tur-Latn`).
    """
    files = result_files(folder)
    if not files:
        raise ValueError(f"{folder}: no MTEB result files (<model>/<revision>/<task>.json)")
    rows = []
    for path in files:
        model, revision = path.parent.parent.name.replace("__", "/"), path.parent.name
        task, entries = _entries(path, split, language)
        rows += [(model, revision, task, sp, subset, score) for sp, subset, score in entries]
    if not rows:
        raise ValueError(
            f"{folder}: no scores left after the split/language filters (split={split}, language={language})"
        )
    long = pl.DataFrame(rows, schema=["model", "revision", "task", "split", "subset", "score"], orient="row")
    several = long.group_by("model").agg(pl.col("revision").n_unique() > 1).filter(pl.col("revision"))["model"]
    types = task_types or {}
    return long.select(
        pl.when(pl.col("model").is_in(several.implode()))
        .then(pl.format("{}@{}", "model", "revision"))
        .otherwise(pl.col("model"))
        .alias("system"),
        "task",
        pl.col("task").replace_strict(types, default=default_type, return_dtype=pl.Utf8).alias("task_type"),
        "score",
        "split",
        "subset",
        "revision",
    )
