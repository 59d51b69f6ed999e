"""The leakage check as `terazi leakage` and the `terazi-leakage` flow run it: every input checked first (datasets
loaded, a named one through its BEIR copy in the cache as an evaluation loads it; every training source opened; the
output folder neither an input nor inside one), then the check, its output folder and the small manifest.

Outputs never overlap inputs (`LeakageConfig.folders`, checked by `terazi.base.paths.disjoint` as every command checks
its folders): the output folder (and the cache, when a named dataset is copied into it) may not be, hold or lie inside
a dataset's folder or a training file or folder, so nothing the check writes can land on an input.
"""

from __future__ import annotations

import time

from terazi.base.paths import disjoint, writable_folder
from terazi.data.loading import load_dataset, open_dataset
from terazi.leakage.output import folders, write
from terazi.leakage.overlap import check
from terazi.leakage.training_sources import Reader
from terazi.schemas import DatasetManifest
from terazi.schemas.leakage import DatasetCounts, LeakageConfig, LeakageManifest
from terazi.schemas.sources import parse as parse_source
from terazi.version import __version__


def check_inputs(config: LeakageConfig, files: list[tuple[str, str]] = ()) -> list[DatasetManifest]:
    """Check the folders (outputs never overlap inputs, nor input `files` such as the config file), load every
    dataset, open every training source, before any work: a bad input is one line naming its file, line or field."""
    outputs, inputs = config.folders()
    disjoint(outputs, [*inputs, *files])  # before anything is written, a named dataset's copy in the cache included
    if any(parse_source(d.path) for d in config.datasets):
        writable_folder(config.cache_dir, "cache folder")  # named datasets are copied into it
    datasets = [load_dataset(spec, config.cache_dir, announce=False) for spec in config.datasets]
    for source in config.train:
        Reader(source)  # opens it and reads its first record: a missing file or field fails here
    return datasets


def check_folder(config: LeakageConfig, datasets: list[DatasetManifest]) -> LeakageManifest:
    """The check of `datasets` (loaded by `check_inputs`) against the training sources, written to `config.out`."""
    started = time.perf_counter()
    disjoint(*config.folders())
    result = check([open_dataset(d) for d in datasets], config.train, config.options)
    root = write(result, config.out)
    counts = [
        DatasetCounts(
            name=d.name,
            folder=f,
            queries=d.queries,
            contaminated_queries=len(d.contaminated_queries),
            query_hits=len(d.query_hits),
            repeats=len(d.repeats),
            passages=d.passages,
            passage_hits=len(d.passage_hits),
            judged_queries=d.judged_queries,
            relevant_hit_queries=len(d.relevant_hit_queries),
            train_hits=len(d.train_hits),
        )
        for d, f in zip(result.datasets, folders(result))
    ]
    return LeakageManifest(
        terazi_version=__version__,
        out=str(root),
        seconds=round(time.perf_counter() - started, 2),
        datasets=counts,
        train_hits=len(result.train_hits),
    )
