"""The leakage check as `terazi leakage` and the `terazi-leakage` flow run it: every input checked first (datasets
loaded, a named one through its BEIR copy in the cache as an evaluation loads it; every training source opened; the
output folder neither an input nor inside one), then the check, its output folder and the small manifest.

Outputs never overwrite inputs: the output folder and each dataset's subfolder of it may not be a dataset's folder,
a training folder or inside one, and no file written may be a training file.
"""

from __future__ import annotations

import time
from pathlib import Path

from terazi.data.leakage.core import check
from terazi.data.leakage.report import folders, write
from terazi.data.leakage.sources import Reader
from terazi.data.loading import load_dataset, open_dataset
from terazi.errors import OutputPathError
from terazi.paths import slugify, unique, within, writable_folder
from terazi.schemas import DatasetManifest
from terazi.schemas.layout import LeakageLayout
from terazi.schemas.leakage import LOCAL_HF, DatasetCounts, LeakageConfig, LeakageManifest
from terazi.schemas.sources import parse as parse_source
from terazi.version import __version__


def check_inputs(config: LeakageConfig) -> list[DatasetManifest]:
    """Load every dataset, open every training source and check the output folder, before any work: a bad input
    is one line naming its file, line or field."""
    if any(parse_source(d.path) for d in config.datasets):
        writable_folder(config.cache_dir, "cache folder")  # named datasets are copied into it
    datasets = [load_dataset(spec, config.cache_dir, announce=False) for spec in config.datasets]
    readers = [Reader(s) for s in config.train]
    _refuse_overlap(Path(config.out), datasets, [r.source.path for r in readers])
    return datasets


def _local(path: str) -> Path | None:
    """A training source's place on this machine (None for a hub dataset)."""
    if path.startswith("hf:"):
        return Path(path[3:]).expanduser() if path[3:].startswith(LOCAL_HF) else None
    return Path(path).expanduser()


def _refuse_overlap(out: Path, datasets: list[DatasetManifest], sources: list[str]) -> None:
    layout = LeakageLayout(out.expanduser().resolve())
    names = unique([slugify(d.name) for d in datasets])  # the subfolders `write` makes (report.folders)
    written = [layout.root, *(layout.dataset(n) for n in names)]
    inputs = [(f"dataset {d.name}'s folder", Path(d.path)) for d in datasets]
    places = [(s, _local(s)) for s in sources]
    inputs += [(f"training source {s}", p) for s, p in places if p is not None and p.is_dir()]
    for folder in written:
        for what, path in inputs:
            if within(folder, path):
                raise OutputPathError(f"leakage output folder {layout.root}: {folder} would be inside {what} "
                                      f"({path.resolve()}); outputs never overwrite inputs: choose another --out")
    files = {layout.summary_json, layout.report_md, layout.report_html, layout.train_hits}
    files |= {f(n) for n in names for f in (layout.queries, layout.passages, layout.relevant_hit,
                                           layout.dataset_train_hits, layout.repeats)}
    for s, p in places:
        if p is not None and p.is_file() and p.resolve() in files:
            raise OutputPathError(f"leakage output folder {layout.root} would overwrite training source {s}: "
                                  "choose another --out")


def check_folder(config: LeakageConfig, datasets: list[DatasetManifest]) -> LeakageManifest:
    """The check of `datasets` (loaded by `check_inputs`) against the training sources, written to `config.out`."""
    started = time.perf_counter()
    _refuse_overlap(Path(config.out), datasets, [s.path for s in config.train])
    result = check([open_dataset(d) for d in datasets], config.train, config.options)
    root = write(result, config.out)
    counts = [DatasetCounts(name=d.name, folder=f, queries=d.queries, contaminated_queries=len(d.contaminated_queries),
                            query_hits=len(d.query_hits), repeats=len(d.repeats), passages=d.passages,
                            passage_hits=len(d.passage_hits), judged_queries=d.judged_queries,
                            relevant_hit_queries=len(d.relevant_hit_queries), train_hits=len(d.train_hits))
              for d, f in zip(result.datasets, folders(result))]
    return LeakageManifest(terazi_version=__version__, out=str(root), seconds=round(time.perf_counter() - started, 2),
                           datasets=counts, train_hits=len(result.train_hits))
