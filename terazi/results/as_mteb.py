"""The results as MTEB's result files, beside terazi's own, so MTEB's tools (`mteb.ResultCache`, the leaderboard) and
`terazi leaderboard` read a terazi run as they read an MTEB run.

One file per system and dataset, `mteb/results/<system>/<revision>/<dataset>.json` (MTEB's layout; `mteb/` opens as
an `mteb.ResultCache`), with MTEB's `TaskResult` fields: the dataset's split holds one subset, `default`, whose
`main_score` is the leaderboard's figure (the headline's mean over the clean queries) and whose other keys are the
run's measures under the names MTEB's retrieval evaluator writes (`ndcg_at_10`, `mrr_at_10`, `recall_at_100`,
`precision_at_k`, `map_at_k`: measures of relevance threshold 1 and linear gain, the ones MTEB computes; others have
no MTEB name and are left out). Figures are written at full precision (MTEB itself rounds to 6 decimals). The
revision is the run's benchmark fingerprint; `model_meta.json` names the system and it. The corrupted conditions have
no place in MTEB's format: they stay in terazi's files.
"""

from __future__ import annotations

import json

import polars as pl

from terazi.schemas import BenchmarkIdentity, DatasetManifest, parse_measure
from terazi.schemas.layout import RunLayout
from terazi.schemas.tables import CLEAN

FORMAT = "2.0.0"  # the TaskResult format these files follow (mteb ≥ 2.0); terazi wrote them, no mteb ran
MTEB_NAMES = {"nDCG": "ndcg_at_{}", "RR": "mrr_at_{}", "R": "recall_at_{}", "P": "precision_at_{}", "AP": "map_at_{}"}


def mteb_name(measure: str) -> str | None:
    """The name MTEB's retrieval evaluator gives `measure`, None when it computes no such figure."""
    m = parse_measure(measure)
    if m.family not in MTEB_NAMES or not m.cutoff or m.rel != 1 or (m.family == "nDCG" and m.gain != "linear"):
        return None
    return MTEB_NAMES[m.family].format(m.cutoff)


def write_mteb_results(
    per_query: pl.DataFrame, datasets: list[DatasetManifest], headline: str, identity: BenchmarkIdentity, run_dir: str
) -> int:
    """Every (system, dataset)'s clean means as an MTEB result file; returns the number of files written."""
    layout, by_name = RunLayout(run_dir), {d.name: d for d in datasets}
    means = (
        per_query.filter(pl.col("condition") == CLEAN)
        .group_by("system", "dataset", "measure", maintain_order=True)
        .agg(pl.col("value").mean())
    )
    revision = identity.fingerprint
    n = 0
    for (system, dataset), part in means.group_by(["system", "dataset"], maintain_order=True):
        values = dict(part.select("measure", "value").iter_rows())
        scores = {name: values[m] for m in values if (name := mteb_name(m)) is not None}
        entry = {
            **scores,
            "main_score": values[headline],
            "hf_subset": "default",
            "languages": [by_name[dataset].language],
        }
        body = {
            "dataset_revision": by_name[dataset].fingerprint,
            "task_name": dataset,
            "mteb_version": FORMAT,
            "scores": {by_name[dataset].split: [entry]},
            "evaluation_time": None,
            "kg_co2_emissions": None,
        }
        path = layout.mteb_result(system, revision, dataset)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(body, indent=1, ensure_ascii=False), encoding="utf-8")
        (path.parent / "model_meta.json").write_text(
            json.dumps({"name": system, "revision": revision}), encoding="utf-8"
        )
        n += 1
    return n
