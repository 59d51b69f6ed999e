"""Hugging Face metadata for the card: the README's `model-index` block and `.eval_results/*.yaml` entries.

`model-index` (what the Hub renders as "Evaluation results" and `huggingface_hub.ModelCardData` parses into
`EvalResult`s): one result per ranked dataset (task text-ranking / Reranking; the dataset's hub id, or its name,
with split and revision, or terazi's content fingerprint where there is no hub revision), one metric per
condition: type `ndcg_at_10`, the value as the card rounds it, name `nDCG@10 (Mobil)`.

`.eval_results` (the Hub's newer per-result files): one entry per ranked dataset × condition with the same value,
the run's date, and notes carrying the cell's interval, the metric contract and what measured it. The Hub aggregates
these into a leaderboard only for datasets registered as benchmarks; elsewhere they are shown on the model page.

The two are separate files on the Hub, each read on its own: `model-index` in the README's front matter (one YAML
document between `---` fences), the entries as a YAML list in `.eval_results/<name>.yaml`. Written into one stream,
the entries would be read as `model-index` items without a `name`; `terazi card` writes them apart.
Out-of-ranking datasets are left out of both: the run set them aside for a reason (e.g. training overlap).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from terazi.present.card.words import DIGITS, condition
from terazi.present.labels import level, score
from terazi.schemas import DatasetManifest, MetricContract
from terazi.schemas.measures import parse_measure
from terazi.schemas.sources import parse

HF_METRIC = {"nDCG": "ndcg", "RR": "mrr", "R": "recall", "P": "precision", "AP": "map", "Judged": "judged"}
TASK = {"type": "text-ranking", "name": "Reranking"}


@dataclass(frozen=True)
class HubDataset:
    """How the Hub names a dataset: `type` (hub id, or the run's name for it), a pretty `name`, its split, its
    config (subset) and its revision (hub revision, else terazi's content fingerprint)."""

    key: str
    type: str
    name: str
    split: str
    revision: str
    config: str | None = None


@dataclass(frozen=True)
class Cell:
    """One figure of the featured system: its headline on one dataset under one condition, unrounded, with the
    interval of a bootstrap over that dataset's queries."""

    dataset: str
    condition: str
    value: float
    low: float
    high: float
    queries: int


def hub_dataset(d: DatasetManifest, benchmark: str, suffix: str) -> HubDataset:
    """A dataset loaded from the hub (`hf:org/name@revision#subset`) keeps its id, subset and revision."""
    text = (d.source or "").split(" (revision ")
    source = parse(text[0]) if text[0].startswith("hf:") else None
    revision = text[1].rstrip(")") if len(text) > 1 else (source.revision if source else None)
    hub = source is not None and not source.local
    return HubDataset(
        key=d.name,
        type=source.name if hub else d.name,
        name=f"{benchmark} {d.name}{suffix}",
        split=d.split,
        revision=(revision if hub and revision else d.fingerprint),
        config=source.subset if hub else None,
    )


def metric_type(measure: str) -> str:
    """`nDCG@10` -> ndcg_at_10 (the Hub's and MTEB's spelling); exponential gain and relevance levels suffixed."""
    m = parse_measure(measure)
    text = HF_METRIC.get(m.family, re.sub(r"\W+", "_", m.family.lower()))
    text += f"_at_{m.cutoff}" if m.cutoff else ""
    text += "_exp" if m.gain == "exponential" else ""
    return text + (f"_rel{m.rel}" if m.rel != 1 else "")


def metric_name(measure: str, cond: str, labels: str) -> str:
    return f"{measure} ({condition(cond, labels)})"


def rounded(v: float) -> float:
    """The value as the card prints it (3 decimals)."""
    return float(score(v, DIGITS))


def model_index(model: str, datasets: list[HubDataset], cells: list[Cell], measure: str, labels: str) -> dict:
    """No `source`: huggingface_hub refuses a source name without a URL, and a results folder has no URL."""
    results = []
    for ds in datasets:
        mine = [c for c in cells if c.dataset == ds.key]
        if not mine:
            continue
        dataset = {
            "name": ds.name,
            "type": ds.type,
            **({"config": ds.config} if ds.config else {}),
            "split": ds.split,
            "revision": ds.revision,
        }
        results.append(
            {
                "task": dict(TASK),
                "dataset": dataset,
                "metrics": [
                    {
                        "type": metric_type(measure),
                        "value": rounded(c.value),
                        "name": metric_name(measure, c.condition, labels),
                    }
                    for c in mine
                ],
            }
        )
    return {"model-index": [{"name": model, "results": results}]}


def contract_text(c: MetricContract | None) -> str:
    if c is None:
        return "not recorded"
    return (
        f"{c.contract}: gain {c.gain}, relevant = grade >= {c.relevance_threshold}, query without a relevant "
        f"document {c.no_relevant}, missing query {c.missing_query}, unjudged documents {c.unjudged}, "
        f"ties {c.ties}"
    )


NOTES = {
    "tr": "{name}; {level} GA [{low}, {high}] (veri setinin {n} sorgusundan {b} bootstrap örneklemi, seed {seed}); "
    "metrik sözleşmesi: {contract}; {source} ile ölçüldü",
    "en": "{name}; {level} CI [{low}, {high}] ({b} bootstrap resamples of the dataset's {n} queries, seed {seed}); "
    "metric contract: {contract}; measured with {source}",
}


def eval_results(
    datasets: list[HubDataset],
    cells: list[Cell],
    measure: str,
    labels: str,
    source: str,
    date: str,
    confidence: float,
    resamples: int,
    seed: int,
    contract: MetricContract | None,
) -> list[dict]:
    by = {d.key: d for d in datasets}
    out = []
    for c in cells:
        ds = by.get(c.dataset)
        if ds is None:
            continue
        notes = NOTES[labels].format(
            name=metric_name(measure, c.condition, labels),
            level=level(confidence, labels),
            low=score(c.low, DIGITS),
            high=score(c.high, DIGITS),
            n=c.queries,
            b=resamples,
            seed=seed,
            contract=contract_text(contract),
            source=source,
        )
        # no `source`: the Hub wants a URL with a source's name, and a results folder has none (the name is in notes)
        out.append(
            {
                "dataset": {"id": ds.type, "task_id": c.condition, "revision": ds.revision},
                "value": rounded(c.value),
                **({"date": date} if date else {}),
                "notes": notes,
            }
        )
    return out


def dump(data) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000)
