"""Datasets by name: Hugging Face (`hf:`), MTEB tasks (`mteb:`) and `ir_datasets:` ids, read into a BEIR folder.

A dataset `path` may be one of

    hf:ORG/NAME[@REVISION][#SUBSET]    a BEIR-style dataset on the Hugging Face hub: configs `corpus`, `queries` and
                                       `default` (or `qrels`) holding the judgments per split, as MTEB publishes its
                                       retrieval tasks; `#SUBSET` reads `SUBSET-corpus`, `SUBSET-queries`,
                                       `SUBSET-qrels` (multilingual repositories)
    hf:/abs/folder, hf:./folder        the same layout in a local folder (a clone of such a repository, or parquet/
                                       json files with the README's `configs:`)
    mteb:TASK[#SUBSET]                 an MTEB retrieval task (package `mteb`), at the revision MTEB pins
    ir_datasets:ID                     an ir_datasets id, e.g. `beir/scifact/test` (package `ir-datasets`)

Each is read once into terazi's cache as a BEIR folder (`<cache>/datasets/<name>-<key>/`) that every later stage
reads like any local dataset. The copy is reused without contacting anyone when its source cannot change (a
40-hex commit revision, an MTEB task's pinned revision, an ir_datasets id); otherwise it is read again each run.
The dataset fingerprint is computed from the content (terazi.data), so a named dataset and its BEIR export share
it. Offline (HF_HUB_OFFLINE=1), a dataset missing from the local Hugging Face cache is a one-line error.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from terazi.base import fingerprint
from terazi.base.errors import DatasetError
from terazi.base.outside import shown
from terazi.base.paths import write_atomic
from terazi.schemas.sources import Source
from terazi.store.layout import CacheLayout

log = logging.getLogger("terazi.sources")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
SOURCE_FILE = "source.json"


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes") or os.environ.get(
        "HF_DATASETS_OFFLINE", ""
    ).lower() in ("1", "true", "yes")


def _unreachable(source: Source, exc: BaseException) -> Exception:
    """Offline, a missing dataset is the user's to fix (one line, never retried); online, a network error may pass."""
    reason = shown(str(exc).splitlines()[0], 200) if str(exc) else type(exc).__name__
    if _offline():
        return DatasetError(
            source.text,
            None,
            f"not in the local Hugging Face cache and the hub is offline "
            f"(HF_HUB_OFFLINE=1): load it once with network access ({reason})",
        )
    return ConnectionError(f"{source.text}: cannot load the dataset ({reason})")


def _pick_split(available: list[str], wanted: str, where: str, source: Source) -> str:
    if wanted in available:
        return wanted
    if len(available) == 1:
        return available[0]
    raise DatasetError(source.text, None, f"{where} has no split {wanted!r} (splits: {', '.join(available)})")


def _hf_tables(source: Source, split: str) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, str | None]:
    import datasets

    datasets.disable_progress_bars()
    repo = str(Path(source.name).expanduser().resolve()) if source.local else source.name
    if source.local and not Path(repo).is_dir():
        raise DatasetError(repo, None, "dataset folder not found")
    try:
        configs = datasets.get_dataset_config_names(repo, revision=source.revision)
        prefix = f"{source.subset}-" if source.subset else ""
        names = {
            "corpus": prefix + "corpus",
            "queries": prefix + "queries",
            "qrels": prefix + "qrels" if source.subset or "default" not in configs else "default",
        }
        missing = [n for n in names.values() if n not in configs]
        if missing:
            raise DatasetError(
                source.text,
                None,
                f"not a BEIR-style dataset: no config(s) {missing} (configs: "
                f"{', '.join(configs)}); expected corpus, queries and default/qrels",
            )
        tables = {}
        with tempfile.TemporaryDirectory(prefix="terazi-hf-") as scratch:
            # a local folder is read afresh each time (datasets' own cache would keep a stale copy of edited files);
            # a hub dataset goes through the Hugging Face cache, where an offline run finds it
            local = {"cache_dir": scratch, "download_mode": "force_redownload"} if source.local else {}
            for part, config in names.items():
                splits = datasets.get_dataset_split_names(repo, config, revision=source.revision)
                chosen = _pick_split(splits, split if part == "qrels" else part, f"config {config!r}", source)
                tables[part] = datasets.load_dataset(
                    repo, config, split=chosen, revision=source.revision, **local
                ).to_polars()
    except DatasetError:
        raise
    except (ConnectionError, OSError) as e:
        raise _unreachable(source, e) from None
    return tables["corpus"], tables["queries"], tables["qrels"], source.revision


def _mteb_tables(source: Source, split: str) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, str | None]:
    try:
        import mteb
    except ImportError:
        raise DatasetError(source.text, None, "needs the mteb package: pip install 'terazi[mteb]'") from None
    try:
        task = mteb.get_task(source.name)
    except KeyError as e:
        raise DatasetError(source.text, None, str(e).strip("\"'")) from None
    if task.metadata.type != "Retrieval":
        raise DatasetError(source.text, None, f"is an MTEB {task.metadata.type} task, not a retrieval task")
    subsets = list(task.hf_subsets)
    subset = source.subset
    if subset is None:
        langs = task.metadata.eval_langs if isinstance(task.metadata.eval_langs, dict) else {}
        turkish = [s for s in subsets if any(lang.startswith("tur") for lang in langs.get(s, []))]
        if len(subsets) == 1 or len(turkish) == 1:
            subset = subsets[0] if len(subsets) == 1 else turkish[0]
        else:
            some = turkish or subsets
            listed = ", ".join(some[:8]) + (f", … ({len(some)} in all)" if len(some) > 8 else "")
            raise DatasetError(source.text, None, f"choose a subset: mteb:{source.name}#SUBSET, e.g. {listed}")
    if subset not in subsets:
        raise DatasetError(source.text, None, f"no subset {subset!r} (subsets: {', '.join(subsets)})")
    split = _pick_split(list(task.metadata.eval_splits), split, "the task", source)
    task = mteb.get_task(source.name, hf_subsets=[subset], eval_splits=[split])
    try:
        task.load_data()
    except (ConnectionError, OSError) as e:
        raise _unreachable(source, e) from None
    data = task.dataset[subset][split]
    corpus = data["corpus"].to_polars()
    queries = data["queries"].to_polars()
    qrels = pl.DataFrame(
        [(q, d, g) for q, docs in data["relevant_docs"].items() for d, g in docs.items()],
        schema={"query-id": pl.Utf8, "corpus-id": pl.Utf8, "score": pl.Int64},
        orient="row",
    )
    return corpus, queries, qrels, task.metadata.dataset.get("revision")


def _ir_tables(source: Source, split: str) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, str | None]:
    try:
        import ir_datasets
    except ImportError:
        raise DatasetError(
            source.text, None, "needs the ir_datasets package: pip install 'terazi[ir-datasets]'"
        ) from None
    try:
        ds = ir_datasets.load(source.name)
    except KeyError:
        raise DatasetError(source.text, None, "no such ir_datasets id (see ir_datasets.registry)") from None
    lacking = [p for p in ("docs", "queries", "qrels") if not getattr(ds, f"has_{p}")()]
    if lacking:
        raise DatasetError(
            source.text,
            None,
            f"has no {', '.join(lacking)}: pick an id with docs, queries and qrels "
            "(usually one that names a split, e.g. beir/scifact/test)",
        )

    def text(rec) -> str:
        return rec.text if hasattr(rec, "text") else rec.default_text()

    try:
        corpus = pl.DataFrame(
            [(d.doc_id, getattr(d, "title", "") or "", text(d)) for d in ds.docs_iter()],
            schema=["_id", "title", "text"],
            orient="row",
        )
        queries = pl.DataFrame([(q.query_id, text(q)) for q in ds.queries_iter()], schema=["_id", "text"], orient="row")
        qrels = pl.DataFrame(
            [(r.query_id, r.doc_id, int(r.relevance)) for r in ds.qrels_iter()],
            schema={"query-id": pl.Utf8, "corpus-id": pl.Utf8, "score": pl.Int64},
            orient="row",
        )
    except (ConnectionError, OSError) as e:
        raise DatasetError(
            source.text,
            None,
            f"cannot read the dataset's files; ir_datasets downloads them on first "
            f"use, which needs network access ({shown(str(e).splitlines()[0], 200)})",
        ) from None
    return corpus, queries, qrels, f"ir_datasets {ir_datasets.__version__}"


def _beir_records(
    source: Source, corpus: pl.DataFrame, queries: pl.DataFrame, qrels: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The three tables in BEIR's columns, with ids as text and integer grades."""

    def ident(df: pl.DataFrame, what: str) -> pl.Expr:
        col = "_id" if "_id" in df.columns else "id" if "id" in df.columns else None
        if col is None or "text" not in df.columns:
            raise DatasetError(source.text, None, f"{what} needs columns _id (or id) and text, has {df.columns}")
        return pl.col(col).cast(pl.Utf8).alias("_id")

    docs = corpus.select(
        ident(corpus, "corpus"),
        (pl.col("title").cast(pl.Utf8).fill_null("") if "title" in corpus.columns else pl.lit("")).alias("title"),
        pl.col("text").cast(pl.Utf8).fill_null(""),
    )
    qs = queries.select(ident(queries, "queries"), pl.col("text").cast(pl.Utf8))
    need = ["query-id", "corpus-id", "score"]
    if any(c not in qrels.columns for c in need):
        raise DatasetError(source.text, None, f"judgments need columns {need}, have {qrels.columns}")
    grades = qrels.select(
        pl.col("query-id").cast(pl.Utf8), pl.col("corpus-id").cast(pl.Utf8), pl.col("score").cast(pl.Float64)
    )
    bad = grades.filter(pl.col("score").is_null() | (pl.col("score") != pl.col("score").round(0)))
    if bad.height:
        q, d, g = bad.row(0)
        raise DatasetError(source.text, None, f"grade {g!r} of query {q!r}, document {d!r} is not an integer")
    return docs, qs, grades.with_columns(pl.col("score").cast(pl.Int64))


def _immutable(source: Source) -> bool:
    return source.scheme in ("mteb", "ir_datasets") or (
        source.scheme == "hf" and not source.local and bool(_COMMIT.match(source.revision or ""))
    )


def copy_folder(source: Source, split: str, cache_dir: str | Path) -> Path:
    """Where terazi keeps its BEIR copy of `source` (one folder per source, subset, split and package version)."""
    versions = {}
    if source.scheme == "mteb":
        import mteb

        versions["mteb"] = getattr(mteb, "__version__", "")
    elif source.scheme == "ir_datasets":
        import ir_datasets

        versions["ir_datasets"] = ir_datasets.__version__
    key = fingerprint.of_json(
        {
            "source": source.text if not source.local else f"hf:{Path(source.name).expanduser().resolve()}",
            "split": split,
            **versions,
        }
    )
    return CacheLayout(cache_dir).part("datasets", f"{source.label}-{key}")


def materialize(source: Source, split: str, cache_dir: str | Path) -> Path:
    """A BEIR folder holding `source`'s corpus, queries and `split` judgments (read once when it cannot change)."""
    folder = copy_folder(source, split, cache_dir)
    if _immutable(source) and (folder / SOURCE_FILE).is_file():
        log.info("%s: using terazi's copy %s", source.text, folder)
        return folder
    loader = {"hf": _hf_tables, "mteb": _mteb_tables, "ir_datasets": _ir_tables}[source.scheme]
    corpus, queries, qrels, revision = loader(source, split)
    docs, qs, judgments = _beir_records(source, corpus, queries, qrels)
    record = {
        "source": source.text,
        "revision": revision,
        "split": split,
        "documents": docs.height,
        "queries": qs.height,
        "judgments": judgments.height,
        "read": datetime.now(UTC).isoformat(timespec="seconds"),
    }

    def fill(tmp: Path) -> None:
        (tmp / "qrels").mkdir()
        docs.write_ndjson(tmp / "corpus.jsonl")
        qs.write_ndjson(tmp / "queries.jsonl")
        judgments.write_csv(tmp / "qrels" / f"{split}.tsv", separator="\t", quote_style="never")
        (tmp / SOURCE_FILE).write_text(json.dumps(record, indent=2))

    write_atomic(folder, fill, folder=True)
    log.info(
        "%s: %d documents, %d queries, %d judgments copied to %s",
        source.text,
        docs.height,
        qs.height,
        judgments.height,
        folder,
    )
    return folder


def described(folder: Path) -> str:
    """`source@revision` as recorded beside a copy."""
    body = json.loads((folder / SOURCE_FILE).read_text())
    return body["source"] + (f" (revision {body['revision']})" if body.get("revision") else "")
