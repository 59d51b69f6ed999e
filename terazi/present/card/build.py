"""`build_card(results_dir, system)`: the evaluation section of a model card for one system of a results folder.

The card is built from the folder's full-precision files (terazi.present.card.inputs) in the Kalbur card's layout:
method sentences, results table, per-dataset table, comparison counts, significant cells, the judged-variant
sentence where the system has a judged variant, rank intervals; plus the Hugging Face metadata
(terazi.present.card.hub). Text is rounded as the card prints it; `Card.to_json()` keeps every number unrounded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import polars as pl

from terazi.analysis import stats
from terazi.analysis.intervals import pairwise_summary
from terazi.analysis.judged import Judgement
from terazi.analysis.ranks import rank_intervals
from terazi.base.errors import ConfigError, DatasetError
from terazi.present.card import hub, method, tables
from terazi.present.card.inputs import RunFolder, read_folder
from terazi.present.card.method import model_label
from terazi.present.card.words import condition, word
from terazi.present.notes import variant_sentence
from terazi.present.table import Table
from terazi.schemas import MetricContract, ModelCost, Statistics
from terazi.store.bootstraps import BootstrapStore

Labels = Literal["tr", "en"]
FORMATS = ("markdown", "yaml", "eval-results", "json", "all")
# all: each part in its own file, as the Hub reads them (the README's front matter, .eval_results/)
SUFFIXES = {"markdown": ".md", "yaml": ".yaml", "json": ".json"}


def check_format(fmt: str, out: Path | None) -> None:
    """A format the card can be given in: one of `FORMATS`, and `all` (several files) only with a file to write."""
    if fmt not in FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt == "all" and out is None:
        raise ConfigError(
            "--format all writes each part to its own file: give --out FILE (FILE.md, FILE.yaml, "
            "FILE.json and .eval_results/FILE.yaml)"
        )


def card_files(out: Path, fmt: str) -> dict[str, Path]:
    """format → the file it is written to: `out` itself, or for `all` `out` with each suffix and the
    `.eval_results/<name>.yaml` beside it (the folder a model repository keeps them in)."""
    if fmt != "all":
        return {fmt: out}
    return {
        **{key: out.with_suffix(suffix) for key, suffix in SUFFIXES.items()},
        "eval-results": out.parent / ".eval_results" / f"{out.stem}.yaml",
    }


@dataclass(frozen=True)
class Card:
    system: str
    model_name: str
    labels: str
    headline: str
    confidence: float
    method: list[str]
    results: Table
    per_dataset: Table
    comparisons: Table
    comparisons_caption: str
    significant: list[str]
    variants: list[str]
    ranks: Table
    rank_line: str
    cells: list[hub.Cell]
    datasets: list[hub.HubDataset]
    source: str
    date: str
    resamples: int
    seed: int
    contract: dict | None
    numbers: dict = field(repr=False)

    def markdown(self) -> str:
        lab = self.labels
        lines = [
            f"## {word('title', lab)}",
            "",
            " ".join(self.method),
            "",
            self.results.markdown(),
            "",
            f"{word('per_dataset', lab)} ({condition('clean', lab).lower()}):",
            "",
            self.per_dataset.markdown(),
            "",
        ]
        if self.comparisons.rows:  # a run of one system compares nothing
            lines += [f"{word('pairs', lab)} ({self.comparisons_caption}):", "", self.comparisons.markdown(), ""]
            lines += [f"- {x}" for x in self.significant] + [""]
        if self.variants:
            lines += [f"{word('variants', lab)}:", ""] + [f"- {x}" for x in self.variants] + [""]
        lines += [f"{word('ranks', lab)}:", "", self.rank_line, "", self.ranks.markdown()]
        return "\n".join(lines).rstrip() + "\n"

    def model_index(self) -> dict:
        return hub.model_index(self.model_name, self.datasets, self.cells, self.headline, self.labels)

    def model_index_yaml(self) -> str:
        """The README front matter's `model-index` block (without the `---` fences)."""
        return hub.dump(self.model_index())

    def eval_results(self) -> list[dict]:
        contract = MetricContract.model_validate(self.contract) if self.contract else None
        return hub.eval_results(
            self.datasets,
            self.cells,
            self.headline,
            self.labels,
            self.source,
            self.date,
            self.confidence,
            self.resamples,
            self.seed,
            contract,
        )

    def eval_results_yaml(self) -> str:
        """Entries for a `.eval_results/<name>.yaml` file of the model repository."""
        return hub.dump(self.eval_results())

    def text(self, fmt: str) -> str:
        """The card in one format of `FORMATS` (not `all`)."""
        return {
            "markdown": self.markdown,
            "yaml": self.model_index_yaml,
            "eval-results": self.eval_results_yaml,
            "json": lambda: self.to_json() + "\n",
        }[fmt]()

    def write(self, out: Path, fmt: str) -> Iterator[Path]:
        """Write the card in `fmt` to `out` (with `all`, each part to its own file: `card_files`), yielding each file
        once written."""
        for key, path in card_files(out, fmt).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.text(key), encoding="utf-8")
            yield path

    def to_json(self) -> str:
        """Everything the card prints, unrounded, with the text tables beside."""
        body = {
            "system": self.system,
            "model_name": self.model_name,
            "labels": self.labels,
            "headline": self.headline,
            "confidence": self.confidence,
            "method": self.method,
            **self.numbers,
            "cells": [asdict(c) for c in self.cells],
            "hub_datasets": [asdict(d) for d in self.datasets],
            "tables": {
                "results": self.results.to_json(),
                "per_dataset": self.per_dataset.to_json(),
                "comparisons": self.comparisons.to_json(),
                "ranks": self.ranks.to_json(),
            },
            "comparisons_caption": self.comparisons_caption,
            "significant": self.significant,
            "variants": self.variants,
            "rank_line": self.rank_line,
            "contract": self.contract,
            "model_index": self.model_index(),
            "eval_results": self.eval_results(),
        }
        return json.dumps(body, ensure_ascii=False, indent=1)


def cells(run: RunFolder, system: str, known: BootstrapStore | None = None) -> list[hub.Cell]:
    """The system's headline per dataset × condition (the configured conditions, datasets in the run's order) with
    a percentile interval from the run's bootstrap settings over that dataset's queries (found in `known` when
    computed before, terazi.store.bootstraps)."""
    s, st = run.settings, run.settings.statistics
    mine = run.per_query.filter(pl.col("system") == system).sort("dataset", "query_id")
    out = []
    for d in run.datasets:
        for c in s.conditions:
            v = mine.filter((pl.col("dataset") == d.name) & (pl.col("condition") == c))["value"].to_numpy()
            if v.size:
                iv = stats.interval({d.name: v}, st.bootstrap_resamples, st.seed, st.confidence, known=known)
                out.append(hub.Cell(d.name, c, iv.estimate, iv.low, iv.high, int(v.size)))
    return out


def _cost(row: dict | None) -> ModelCost | None:
    if not row or row.get("unit") not in ("pairs", "texts"):
        return None
    return ModelCost.model_validate({k: v for k, v in row.items() if k in ModelCost.model_fields and v is not None})


def variant_lines(run: RunFolder, system: str, labels: str) -> tuple[list[str], list[dict]]:
    """The judged-variant sentences of the system (as base or as variant), in the card's labels, with the speed
    and size ratios from costs.csv; and the rows, unrounded."""
    if run.variants is None:
        return [], []
    rows = run.variants.filter((pl.col("base") == system) | (pl.col("variant") == system)).to_dicts()
    costs = {r["system"]: r for r in run.costs.to_dicts()} if run.costs is not None else {}
    lines = []
    for r in rows:
        j = Judgement(
            r["base"],
            r["variant"],
            r["label"],
            r["measure"],
            int(r["queries"]),
            r["delta"],
            r["ci_low"],
            r["ci_high"],
            r.get("equivalence_margin", Statistics().equivalence_margin),  # (a folder from before the margin)
            r["verdict"],
            _cost(costs.get(r["base"])),
            _cost(costs.get(r["variant"])),
        )
        lines.append(variant_sentence(j, labels, run.settings.statistics.confidence))
    return lines, rows


def build_card(
    results_dir: str | Path,
    system: str,
    labels: Labels | None = None,
    model_name: str | None = None,
    names: dict[str, str] | None = None,
    rivals: list[str] | None = None,
    known: BootstrapStore | None = None,
) -> Card:
    """The card of `system` from a results folder (`terazi run` or `terazi analyze`). `labels`: tr or en (default:
    the run's own); `model_name`: the name in `model-index` (default: the system's); `names`: how rows are called
    (system -> display name); `rivals`: the systems the comparison counts and cells list (default: all); `known`: where
    intervals computed before are found (terazi.store.bootstraps; a run publishing its own card passes its cache's)."""
    run = read_folder(results_dir)
    if system not in run.order:
        raise DatasetError(run.path / "leaderboard.csv", None, f"no system {system!r}; systems: {', '.join(run.order)}")
    unknown = [r for r in rivals or [] if r not in run.order or r == system]
    if unknown:
        raise DatasetError(run.path / "leaderboard.csv", None, f"rival(s) {unknown} are not other systems of the run")
    labels = labels or run.settings.labels
    if labels not in ("tr", "en"):
        raise ValueError(f"labels must be tr or en, got {labels!r}")
    s, st = run.settings, run.settings.statistics
    shown = tables.display_names(run, system, labels, names)
    ranks = rank_intervals(run.per_query, run.ranked, st.bootstrap_resamples, st.seed, st.confidence)
    counts, caption = tables.comparisons(run, system, shown, labels, rivals)
    variant_text, variant_rows = variant_lines(run, system, labels)
    suffix = f" ({model_label(s.encoder)} top-{s.rerank_depth})" if s.encoder and s.rerank_depth else ""
    ranked = set(run.ranked)
    datasets = [hub.hub_dataset(d, s.benchmark, suffix) for d in run.datasets if d.name in ranked]
    keep = [
        c
        for c in run.board.columns
        if c in ("system", "group", "mean_task", "ci_low", "ci_high", "borda_votes", "borda_rank")
        or c in [d.name for d in run.datasets]
        or c in run.corrupted
        or c in [f"{x} retention" for x in run.corrupted]
    ]
    numbers = {
        "results": run.board.select(keep).to_dicts(),
        "params": tables.params(run),
        "comparisons": pairwise_summary(tables.cells_of(run, system)).to_dicts(),
        "significant_cells": tables.cells_of(run, system).filter(pl.col("verdict") != "no difference").to_dicts(),
        "variants": variant_rows,
        "ranks": ranks.to_dicts(),
    }
    return Card(
        system=system,
        model_name=model_name or system,
        labels=labels,
        headline=s.headline,
        confidence=st.confidence,
        method=method.sentences(run, labels),
        results=tables.results(run, system, shown, labels),
        per_dataset=tables.per_dataset(run, system, shown, labels),
        comparisons=counts,
        comparisons_caption=caption,
        significant=tables.significant(run, system, shown, labels, rivals),
        variants=variant_text,
        ranks=tables.rank_table(ranks, system, shown, labels, st.confidence),
        rank_line=tables.rank_line(ranks, system, shown, labels, st.confidence),
        cells=cells(run, system, known),
        datasets=datasets,
        source=f"terazi ({s.benchmark})",
        date=run.started[:10],
        resamples=st.bootstrap_resamples,
        seed=st.seed,
        contract=run.contract.model_dump() if run.contract else None,
        numbers=numbers,
    )
