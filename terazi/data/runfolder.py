"""A folder of TREC runs with its judgments: what `terazi run` writes beside its results and `terazi analyze` reads.

Layout (every part a safe name):

    qrels/<dataset>.tsv                          TREC (`qid 0 docid grade`) or BEIR (`query-id corpus-id score`) qrels
    runs/<dataset>/<condition>/<system>.trec      one TREC run per system; `clean` is the reference condition
    runs/<dataset>/<condition>/sample-<k>/<system>.trec
                                                  a condition with several samples: one ranking per sample (k = 0, 1, …)
    changed/<dataset>/<condition>.txt             optional: the query ids the condition changed, one a line (an empty
                                                  file: none); without it every query of a non-clean condition counts
    datasets.yaml                                 optional: per dataset `in_ranking`, `reason`, `task_type`

Runs of several first stages: every run file named `<first stage>~<system>.trec` (each part a safe name), e.g.
`runs/<dataset>/clean/bm25~ce.trec` (the cross-encoder reranking BM25's candidates) and `bm25~first-stage.trec` (BM25's
own ranking); each first stage is then analysed as a folder of its runs alone would be, and compared (protocol.md).

terazi's run files carry the systems' own scores (the shortest text that reads back as the same 64-bit float), in
the order terazi ranked them: score descending, then document id descending, the rule by which every TREC reader
(trec_eval, pytrec_eval, ranx, MTEB's evaluator) ranks a run, so each gives terazi's figure. A reranked list is a
rescored head above the first stage's tail in first-stage order; its tail's first-stage scores, on another scale,
are moved below the head's lowest score (`run_scores`: a shift, so the tail keeps its order and its ties). The
scores as the systems gave them, tail included, stay in `rankings/<dataset>/<system>.parquet`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from terazi.base.errors import DatasetError
from terazi.base.paths import is_slug
from terazi.data.trec_writer import trec_id, write_run
from terazi.schemas.layout import RunLayout
from terazi.schemas.tables import CLEAN, VARIANT

SAMPLE = re.compile(r"^sample-(\d+)$")
STAGE_MARK = "~"  # `<first stage>~<system>.trec`


def run_scores(ranking: pl.DataFrame, head: int | None) -> pl.DataFrame:
    """A ranking's scores as its run file carries them. Without a rescored head (`head` None: a first stage's own
    list, runs made elsewhere) they are the system's own. With one (ranks ≤ `head`), the tail below it, ranked by
    first-stage scores on another scale, is moved below the head: where the tail's highest score reaches the head's
    lowest, every tail score is lowered by (tail's highest − head's lowest + 1), so the tail starts one below the head
    and keeps its order and its ties. Where that subtraction would merge two different first-stage scores (float
    precision, scales ~10⁸ apart), that list's tail is scored head's lowest − its place below the head (1, 2, …)."""
    if head is None:
        return ranking
    ranking = ranking.sort(*VARIANT, "rank")
    tail, score = pl.col("rank") > head, pl.col("score").fill_nan(None)
    low, high = score.filter(~tail).min().over(VARIANT), score.filter(tail).max().over(VARIANT)
    moved = score - pl.when(high >= low).then(high - low + 1.0).otherwise(0.0)
    merged = (
        (tail & (pl.col("rank") > head + 1) & (score.shift(1) > score) & (moved.shift(1) <= moved)).any().over(VARIANT)
    )
    by_place = low - (pl.col("rank") - head).cast(pl.Float64)
    return ranking.with_columns(
        pl.when(~tail).then(pl.col("score")).when(merged).then(by_place).otherwise(moved).alias("score")
    )


def write_rankings(
    ranking: pl.DataFrame | Iterable[pl.DataFrame],
    root: str | Path,
    dataset: str,
    system: str,
    samples: dict[str, int],
    head: int | None = None,
) -> list[Path]:
    """A ranking table (condition, sample, query_id, rank, doc_id, score) as TREC files, one per (condition,
    sample), scored as `run_scores` says (`head`: the rescored head's depth, None without one), so that ranking by
    score and document id, as every TREC reader does, gives back the ranks exactly. `ranking`: the table, or its
    blocks of whole variants in order (`terazi.data.blocks`), each (condition, sample)'s rows in consecutive blocks,
    appended to its file."""
    written: dict[tuple[str, int], Path] = {}
    for block in [ranking] if isinstance(ranking, pl.DataFrame) else ranking:
        for (cond, smp), part in run_scores(block, head).group_by(["condition", "sample"], maintain_order=True):
            path = RunLayout(root).run_file(dataset, cond, system, smp, samples.get(cond, 1))
            written[cond, smp] = write_run(part, path, system, append=(cond, smp) in written)
    return list(written.values())


def write_qrels(qrels: dict[str, dict[str, int]], path: Path) -> Path:
    """TREC qrels, which trec_eval, ranx and `terazi score` read as they are; ids written as the run files write
    them (whitespace inside an id percent-encoded), so that both sides still match."""
    rows = [(q, "0", d, g) for q, docs in qrels.items() for d, g in docs.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows, schema=["query_id", "iter", "doc_id", "grade"], orient="row").with_columns(
        trec_id("query_id"), trec_id("doc_id")
    ).write_csv(path, separator=" ", include_header=False, quote_style="never")
    return path


def write_changed(query_ids: list[str], path: Path) -> Path:
    """One query id a line, written as the qrels and run files write it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    ids = pl.DataFrame({"query_id": query_ids}, schema={"query_id": pl.Utf8}).select(trec_id("query_id"))["query_id"]
    path.write_text("".join(f"{q}\n" for q in ids), encoding="utf-8")
    return path


@dataclass
class DatasetRuns:
    """What the folder holds for one dataset: its qrels file and, per condition, per sample, system → run file."""

    name: str
    qrels: Path
    runs: dict[str, dict[int, dict[str, Path]]] = field(default_factory=dict)
    changed: dict[str, Path] = field(default_factory=dict)

    @property
    def systems(self) -> list[str]:
        return sorted({s for by_sample in self.runs.values() for files in by_sample.values() for s in files})

    def of_stage(self, stage: str) -> DatasetRuns:
        """The runs of one first stage (`<stage>~<system>.trec`), named by their system alone."""
        mark = stage + STAGE_MARK
        runs = {
            c: {
                k: {s.removeprefix(mark): f for s, f in files.items() if s.startswith(mark)}
                for k, files in by_sample.items()
            }
            for c, by_sample in self.runs.items()
        }
        return DatasetRuns(self.name, self.qrels, runs, self.changed)


def first_stages(datasets: list[DatasetRuns], order: list[str] | None) -> list[str] | None:
    """The first stages of a folder whose run files are all named `<first stage>~<system>.trec`, in `order` (the
    first one fills the results folder) or sorted; None when no file is. A mix, or an `order` naming other first
    stages than the files, is an error naming a file or the stages."""
    names = {s: d for d in datasets for s in d.systems}
    marked = {s.split(STAGE_MARK)[0] for s in names if STAGE_MARK in s}
    if not marked and order is None:
        return None
    plain = next((s for s in names if STAGE_MARK not in s), None)
    if plain is not None:
        raise DatasetError(
            names[plain].qrels.parents[1] / "runs" / names[plain].name,
            None,
            f"system {plain!r} has no first stage: with several first stages every run file is "
            "named <first stage>~<system>.trec",
        )
    if order is not None and sorted(order) != sorted(marked):
        raise DatasetError(
            datasets[0].qrels.parents[1] / "runs",
            None,
            f"first_stages {order} do not match the run files' first stages {sorted(marked)}",
        )
    return list(order) if order is not None else sorted(marked)


def _slug(path: Path, what: str) -> str:
    name = path.stem if path.is_file() else path.name
    parts = name.split(STAGE_MARK, 1) if what == "system" else [name]  # `<first stage>~<system>`
    if not all(is_slug(x) for x in parts):
        raise DatasetError(path, None, f"{what} name {name!r} is not a safe name (letters, digits, '.', '_', '-')")
    return name


def scan(folder: str | Path) -> list[DatasetRuns]:
    """Inventory of a runs folder, checked: every dataset has qrels and a clean condition, every condition has the
    same systems in every sample, samples are numbered 0…n−1. Errors name the file or folder."""
    folder = Path(folder).resolve()
    runs_dir = folder / "runs"
    if not runs_dir.is_dir():
        raise DatasetError(folder, None, "no runs/ folder (expected runs/<dataset>/<condition>/<system>.trec)")
    out = []
    for ds_dir in sorted(p for p in runs_dir.iterdir() if p.is_dir()):
        name = _slug(ds_dir, "dataset")
        qrels = folder / "qrels" / f"{name}.tsv"
        if not qrels.is_file():
            raise DatasetError(qrels, None, f"missing qrels file for dataset {name!r} (runs are in {ds_dir})")
        ds = DatasetRuns(name, qrels)
        for cond_dir in sorted(p for p in ds_dir.iterdir() if p.is_dir()):
            cond = _slug(cond_dir, "condition")
            by_sample: dict[int, dict[str, Path]] = {}
            direct = sorted(cond_dir.glob("*.trec"))
            subs = sorted(p for p in cond_dir.iterdir() if p.is_dir())
            if direct and subs:
                raise DatasetError(cond_dir, None, "holds both run files and sample folders: use one or the other")
            if direct:
                by_sample[0] = {_slug(f, "system"): f for f in direct}
            for sub in subs:
                m = SAMPLE.match(sub.name)
                if not m:
                    raise DatasetError(sub, None, "expected a sample folder named sample-<k> (k = 0, 1, …)")
                by_sample[int(m[1])] = {_slug(f, "system"): f for f in sorted(sub.glob("*.trec"))}
            if not by_sample or not any(by_sample.values()):
                raise DatasetError(cond_dir, None, "no .trec run files")
            if sorted(by_sample) != list(range(len(by_sample))):
                raise DatasetError(
                    cond_dir, None, f"samples must be numbered 0…{len(by_sample) - 1}, got {sorted(by_sample)}"
                )
            ds.runs[cond] = by_sample
            changed = folder / "changed" / name / f"{cond}.txt"
            if changed.is_file():
                ds.changed[cond] = changed
        if CLEAN not in ds.runs:
            raise DatasetError(ds_dir, None, "no clean/ condition: the reference condition is required")
        systems = set(ds.systems)
        for cond, by_sample in ds.runs.items():
            for smp, files in by_sample.items():
                if set(files) != systems:
                    where = runs_dir / name / cond / (f"sample-{smp}" if len(by_sample) > 1 else "")
                    raise DatasetError(
                        where,
                        None,
                        f"missing run files for system(s) {sorted(systems - set(files))}: "
                        "every condition needs every system",
                    )
        out.append(ds)
    if not out:
        raise DatasetError(runs_dir, None, "no dataset folders (expected runs/<dataset>/<condition>/<system>.trec)")
    return out


def read_changed(path: Path, known: set[str]) -> set[str]:
    """Query ids listed in a changed/ file; an id without judgments is an error naming the line."""
    ids: set[str] = set()
    for n, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):
        q = line.strip()
        if not q:
            continue
        if q not in known:
            raise DatasetError(path, n, f"query id {q!r} has no judgments in the dataset's qrels")
        ids.add(q)
    return ids
