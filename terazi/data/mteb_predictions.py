"""MTEB's saved predictions (`mteb.evaluate(..., prediction_folder=…)`) read as a run: what a retrieval model ranked
for each query, so terazi's rerankers rerank the very candidates MTEB's two-stage reranking (`convert_to_reranking`)
reranks.

The file is MTEB's: `<prediction_folder>/<task>_predictions.json`, `{"mteb_model_meta": {"model_name", "revision"},
<subset>: {<split>: {<query id>: {<document id>: score}}}}`. A subset is picked as `default` or the file's only one;
a split by the dataset's split. Problems are one line naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from terazi.base.errors import DatasetError

SUFFIX = "_predictions.json"


def predictions_file(source: Path) -> Path | None:
    """The predictions `source` names: itself (a file), or the one `*_predictions.json` of a folder (None: none)."""
    if source.is_file():
        return source
    found = sorted(source.glob(f"*{SUFFIX}"))
    if len(found) > 1:
        raise DatasetError(
            source,
            None,
            f"holds MTEB predictions of {len(found)} tasks ({found[0].name}, "
            f"{found[1].name}, …): give one file as first_stage_runs",
        )
    return found[0] if found else None


def read_predictions(path: Path, split: str) -> tuple[pl.DataFrame, str]:
    """(query_id, doc_id, score) of one split of an MTEB predictions file, and the model it names
    (`model_name@revision`)."""
    try:
        body = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise DatasetError(path, None, f"not an MTEB predictions file (JSON: {e})") from None
    meta = body.pop("mteb_model_meta", None) if isinstance(body, dict) else None
    if not isinstance(meta, dict) or not body:
        raise DatasetError(path, None, "not an MTEB predictions file (no mteb_model_meta, or no subset)")
    subset = "default" if "default" in body else next(iter(body)) if len(body) == 1 else None
    if subset is None:
        raise DatasetError(
            path, None, f"holds subsets {', '.join(sorted(body))}: terazi reads 'default' or a file of one subset"
        )
    splits = body[subset]
    if not isinstance(splits, dict) or split not in splits:
        have = ", ".join(sorted(splits)) if isinstance(splits, dict) else "none"
        raise DatasetError(path, None, f"subset {subset!r} has no split {split!r} (it has: {have})")
    queries, docs, scores = [], [], []
    for q, ranked in splits[split].items():
        if not isinstance(ranked, dict):
            raise DatasetError(path, None, f"{subset}.{split}.{q} is not a mapping of document id to score")
        queries += [q] * len(ranked)
        docs += ranked.keys()
        scores += ranked.values()
    try:
        run = pl.DataFrame(
            {"query_id": queries, "doc_id": docs, "score": scores},
            schema={"query_id": pl.Utf8, "doc_id": pl.Utf8, "score": pl.Float64},
            strict=False,
        )
    except (TypeError, pl.exceptions.PolarsError) as e:
        raise DatasetError(path, None, f"a score is not a number ({e})") from None
    if run["score"].null_count():
        bad = run.filter(pl.col("score").is_null()).row(0)
        raise DatasetError(path, None, f"score of query {bad[0]!r}, document {bad[1]!r} is not a number")
    return run, f"{meta.get('model_name')}@{meta.get('revision')}"
