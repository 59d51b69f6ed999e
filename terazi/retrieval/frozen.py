"""Frozen candidate sets in the cache: relocatable, and checked before every use.

A set is a folder `<cache>/candidates/<lookup key>/` holding `candidates.parquet`, one TREC run file
per condition and sample under `runs/`, and `manifest.json`, written last. The manifest names the
files relative to its own folder, with the SHA-256 of each: a copied or moved cache works from its
new place and reads nothing from the old one, and a missing or damaged file is found before use. TREC
files are rebuilt from the parquet (they are derived from it); a damaged parquet means the set must be
computed again, never used as it is.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import polars as pl

from terazi.base import fingerprint
from terazi.base.errors import CacheError, ConfigError
from terazi.base.paths import inside, link, mark_used, write_atomic
from terazi.data.blocks import blockwise, write_blocks
from terazi.data.trec_writer import write_run
from terazi.metrics.ceiling import UNCHANGED
from terazi.metrics.per_query import per_query_values
from terazi.schemas import CandidateSet, DatasetManifest
from terazi.schemas.tables import RANKING, VARIANT
from terazi.store import derived, file_hashes
from terazi.store.layout import CANDIDATES_MANIFEST as MANIFEST
from terazi.store.layout import PARTS, CacheLayout

log = logging.getLogger("terazi.frozen")
# manifest fields that describe where and how fast a set was made, not which candidates it holds (the lookup key
# holds the code that made the set: the same candidates made by a newer terazi keep their fingerprint)
NOT_IN_FINGERPRINT = (
    "lookup_key",
    "path",
    "trec_dir",
    "seconds",
    "queries_encoded",
    "docs_encoded",
    "files",
    "index_recall",
    "index_recall_queries",
    "shards",
    "cost",
)


def candidate_fingerprint(body: dict, ids: str) -> str:
    """A candidate set's fingerprint: its manifest (paths and timings aside) and every candidate id, in order (`ids`:
    the hash of its (condition, sample, query_id, doc_id) rows, `write_set`)."""
    return fingerprint.of_json({k: v for k, v in body.items() if k not in NOT_IN_FINGERPRINT} | {"ids": ids})


RULE = (
    "trec"  # the tie rule every first stage ranks by (`terazi.metrics.contracts.TIES`), in its lookup key and manifest
)


def lookup_key(
    kind: str, dataset: DatasetManifest, variants: pl.DataFrame, depth: int, first_stage: dict, maker: str
) -> str:
    """The key a candidate set is frozen under in the cache (`candidates/<key>/`): everything that decides which
    candidates it holds (the dataset, the first stage's `first_stage` identity and parameters, the depth, the query
    variants' texts, the tie rule) and the code of `maker`, the module that makes it (`derived.key`)."""
    body = {
        "dataset": dataset.fingerprint,
        **first_stage,
        "depth": depth,
        "variants": fingerprint.of_rows(variants.select(*VARIANT, "text")),
        "ties": RULE,
        "ignore_identical_ids": dataset.ignore_identical_ids,
    }
    return derived.key(kind, body, maker=maker)


def allowed(cand: pl.DataFrame, dropped: pl.DataFrame, depth: int) -> pl.DataFrame:
    """A candidate table (in variant and rank order) less the (query_id, doc_id) pairs its dataset leaves out of every
    ranking (`Dataset.dropped`), ranked again from 1 and cut to `depth`: a first stage searches as many documents
    past `depth` as a query can lose, so each keeps its `depth` best allowed ones."""
    if dropped.height:
        cand = cand.join(dropped, on=["query_id", "doc_id"], how="anti", maintain_order="left").with_columns(
            pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("condition", "sample", "query_id").alias("rank")
        )
    return cand.filter(pl.col("rank") <= depth)


def most_dropped(dropped: pl.DataFrame) -> int:
    """The most documents one query loses (`allowed`): how far past `depth` a first stage searches."""
    return int(dropped.group_by("query_id").len()["len"].max() or 0) if dropped.height else 0


def recall_by_condition(qrels: dict[str, dict[str, int]], candidates: Path, depth: int) -> dict[str, float]:
    """Recall@depth of each condition's candidates (its first sample), as the manifest records it: the mean of
    `evaluate`'s per-query values, the file read a block at a time."""
    first = pl.col("sample") == 0
    values = blockwise(
        candidates,
        RANKING,
        lambda blocks: per_query_values(qrels, (b.filter(first) for b in blocks), UNCHANGED, [f"R@{depth}"]),
    )
    return {
        cond: round(part["value"].rechunk().mean(), 6)
        for (cond,), part in values.group_by("condition", maintain_order=True)
    }


def write_set(
    folder: Path, blocks: Iterable[pl.DataFrame], qrels: dict[str, dict[str, int]], depth: int
) -> tuple[str, dict[str, float]]:
    """A candidate table, given as its consecutive blocks (in (condition, sample, query_id, rank) order, so that the
    stages after it read it a block of whole variants at a time), into `folder`: candidates.parquet, then its TREC
    runs; returns the hash of its ids (for `candidate_fingerprint`) and each condition's recall@depth."""
    ids, path = fingerprint.Rows(), folder / "candidates.parquet"

    def hashed() -> Iterator[pl.DataFrame]:
        for block in blocks:
            ids.add(block.select("condition", "sample", "query_id", "doc_id"))
            yield block

    write_blocks(path, hashed(), lambda: pl.DataFrame(schema=CANDIDATES))
    write_runs(path, folder / "runs")
    return ids.hexdigest(), recall_by_condition(qrels, path, depth)


CANDIDATES = {
    "condition": pl.Utf8,
    "sample": pl.Int64,
    "query_id": pl.Utf8,
    "rank": pl.Int64,
    "doc_id": pl.Utf8,
    "score": pl.Float64,
}


def store_candidates(
    target: Path, cand: pl.DataFrame, body: dict, qrels: dict[str, dict[str, int]], started: float
) -> CandidateSet:
    """Freeze a candidate table computed in this process (BM25, or runs made elsewhere) into `target`: parquet,
    TREC copies, then the manifest (`body` and the recall; relative paths, so the cache can be copied or moved)."""
    target.mkdir(parents=True, exist_ok=True)
    ids, recall = write_set(target, [cand], qrels, body["depth"])
    body = {
        **body,
        "path": "candidates.parquet",
        "trec_dir": "runs",
        "recall": recall,
        "seconds": round(time.perf_counter() - started, 3),
    }
    cs = CandidateSet(fingerprint=candidate_fingerprint(body, ids), reused=False, files=set_files(target), **body)
    write_atomic(target / MANIFEST, lambda p: p.write_text(cs.model_dump_json(indent=2, exclude={"reused"})))
    return cs.model_copy(update={"path": str(target / "candidates.parquet"), "trec_dir": str(target / "runs")})


def set_files(folder: Path) -> dict[str, str]:
    """SHA-256 of each file of a set (`candidates.parquet`, `runs/*.trec`), by its path relative to `folder`."""
    return {
        str(p.relative_to(folder)): fingerprint.of_file(p)
        for p in [folder / "candidates.parquet", *sorted((folder / "runs").glob("*.trec"))]
        if p.is_file()
    }


def candidates_file_name(condition: str, sample: int, samples: int) -> str:
    return f"{condition}.trec" if samples == 1 else f"{condition}-{sample}.trec"


def write_runs(candidates: Path, runs: Path, only: set[str] | None = None) -> None:
    """TREC run files of a candidate file, one per condition and sample (or only the ones named `runs/<file>`), read a
    block of whole variants at a time (each (condition, sample)'s rows in consecutive blocks, appended to its file)."""
    runs.mkdir(parents=True, exist_ok=True)
    samples = dict(
        pl.scan_parquet(candidates).group_by("condition").agg(pl.col("sample").n_unique()).collect().iter_rows()
    )

    def write(blocks: Iterable[pl.DataFrame]) -> None:
        started = set()
        for block in blocks:
            for (cond, smp), part in block.group_by(["condition", "sample"], maintain_order=True):
                name = candidates_file_name(cond, smp, samples[cond])
                if only is None or f"runs/{name}" in only:
                    write_run(part, runs / name, "terazi-first-stage", append=name in started)
                    started.add(name)

    blockwise(candidates, RANKING, write)


def load_frozen(folder: Path, rebuild: bool = True, trust_stamps: bool = True) -> CandidateSet | None:
    """The candidate set in `folder`, its files checked against their hashes. A missing or damaged TREC file is
    written again from the parquet; a damaged parquet (or manifest) gives None: the set must be computed again.
    A file unchanged since it was last hashed is taken to have the hash the cache folder's book remembers
    (terazi.store.file_hashes); with `trust_stamps=False` (`terazi cache check`, `repair`) every byte is hashed."""
    in_cache = folder.parent.name == PARTS["candidates"].name
    book = file_hashes.book_in(folder.parent.parent) if in_cache else None
    hashed = (lambda p: file_hashes.file_digest(p, book)) if trust_stamps else fingerprint.of_file
    try:
        body = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    body |= {"path": str(folder / "candidates.parquet"), "trec_dir": str(folder / "runs"), "reused": True}
    files = body.get("files") or set_files(folder)
    if "candidates.parquet" not in files:
        return None
    bad = [name for name, digest in files.items() if not (folder / name).is_file() or hashed(folder / name) != digest]
    if "candidates.parquet" in bad:
        log.warning("frozen candidates %s: candidates.parquet is missing or damaged", folder)
        return None
    if bad:
        if not rebuild:
            raise CacheError(f"frozen candidates {folder}: {', '.join(bad)} missing or damaged")
        log.warning(
            "frozen candidates %s: %s missing or damaged; writing them again from candidates.parquet",
            folder,
            ", ".join(bad),
        )
        write_runs(folder / "candidates.parquet", folder / "runs", only=set(bad))
        still = [n for n in bad if not (folder / n).is_file() or fingerprint.of_file(folder / n) != files[n]]
        if still:
            raise CacheError(
                f"frozen candidates {folder}: {', '.join(still)} could not be rebuilt to the recorded "
                "hash; run `terazi cache repair`"
            )
    if trust_stamps:
        mark_used(folder / MANIFEST)
    return CandidateSet.model_validate(body | {"files": files})


def find_frozen(cache_dir: str, wanted: str, dataset: DatasetManifest) -> CandidateSet:
    """A frozen candidate set named by its fingerprint; it must belong to this very dataset."""
    for path in CacheLayout(cache_dir).candidates.glob(f"*/{MANIFEST}"):
        if path.parent.name.startswith("."):  # being written
            continue
        try:
            body = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if body.get("fingerprint") == wanted:
            if body["dataset_fingerprint"] != dataset.fingerprint:
                raise ConfigError(
                    f"candidates {wanted} were frozen for another version of dataset "
                    f"{body['dataset']} ({body['dataset_fingerprint']}, now {dataset.fingerprint})"
                )
            cs = load_frozen(path.parent)
            if cs is not None and cs.ties != RULE:
                raise ConfigError(
                    f"candidates {wanted} were frozen in FAISS's order, before terazi ranked every list "
                    "by score, then document id descending (trec_eval's rule): run without "
                    "`candidates` to retrieve them afresh under the rule"
                )
            if cs is None:
                raise CacheError(
                    f"frozen candidates {wanted}: {path.parent / 'candidates.parquet'} is missing "
                    "or damaged, and a set named by fingerprint cannot be computed again; run without "
                    "`candidates` to retrieve afresh"
                )
            return cs
    raise ConfigError(f"no frozen candidates with fingerprint {wanted} under {cache_dir}/candidates")


def publish_candidates(cs: CandidateSet, run_dir: str | Path) -> None:
    """The frozen TREC files in the results folder, linked (not copied) when the file system allows, then checked:
    every file present with its recorded hash, nothing else, never an empty folder."""
    target = inside(run_dir, "candidates", cs.dataset)
    target.mkdir(parents=True, exist_ok=True)
    folder = Path(cs.path).parent
    runs = {name.removeprefix("runs/"): digest for name, digest in cs.files.items() if name.startswith("runs/")}
    if not runs:
        raise CacheError(f"frozen candidates {folder} list no TREC files; run `terazi cache repair`")
    for stale in set(p.name for p in target.glob("*.trec")) - set(runs):
        (target / stale).unlink()
    for name, digest in runs.items():
        src, dst = folder / "runs" / name, target / name
        link(src, dst)
        if not (dst.is_file() and (os.path.samefile(src, dst) or fingerprint.of_file(dst) == digest)):
            raise CacheError(f"{dst} does not match the frozen candidates ({src}); run `terazi cache repair`")
