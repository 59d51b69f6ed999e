"""The corpus as a parquet table in the cache: read from `corpus.jsonl` in one stream, then sliced by row
(encoding shards) or looked up by id (reranking), so that no stage holds the whole corpus as Python objects.

Columns: `doc_id`, `text` (title and text as the models see them), `key` (the document's 64-bit key: its
id and a hash of its text, see `terazi.base.fingerprint.doc_keys`) and `chars` (length of `text`). The table
is named by the corpus fingerprint, so a changed corpus gets a new one; it can always be rebuilt from
the dataset, so a damaged one is rebuilt, never trusted.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from terazi.base import fingerprint
from terazi.base.errors import CacheError
from terazi.base.paths import mark_used, write_atomic
from terazi.schemas.records import Document
from terazi.store.layout import CacheLayout

log = logging.getLogger("terazi.corpus")
ROW_GROUP = 8192
SCHEMA = pa.schema(
    [("doc_id", pa.large_string()), ("text", pa.large_string()), ("key", pa.int64()), ("chars", pa.int32())]
)


@dataclass(frozen=True)
class CorpusTable:
    path: Path

    def _read(self, frame: pl.LazyFrame, engine: str = "auto") -> pl.DataFrame:
        try:
            return frame.collect(engine=engine)
        except (pl.exceptions.PolarsError, OSError) as e:
            raise CacheError(
                f"corpus table {self.path} is damaged ({e}); delete it or run `terazi cache repair`: "
                "it is rebuilt from the dataset"
            ) from None

    def rows(self, start: int, stop: int) -> list[str]:
        """Texts of rows [start, stop) (a shard: a contiguous block of documents; its ids are its row numbers)."""
        return self._read(pl.scan_parquet(self.path).slice(start, stop - start).select("text"))["text"].to_list()

    def keys(self, doc_ids: pl.Series | None = None) -> pl.DataFrame:
        """doc_id, key and chars of every document (or of the given ones), in corpus order; no texts are read."""
        frame = pl.scan_parquet(self.path).select("doc_id", "key", "chars")
        if doc_ids is not None:
            frame = frame.filter(pl.col("doc_id").is_in(doc_ids.cast(pl.Utf8).implode()))
        return self._read(frame)

    def ids(self) -> pl.Series:
        return self._read(pl.scan_parquet(self.path).select("doc_id"))["doc_id"]

    def first_rows(self) -> np.ndarray:
        """Each row's first row with the same text (its own, unless it copies an earlier passage): what lets copies
        be searched and scored as one text, so that they tie exactly. The texts are hashed in a stream, and only
        the rows whose hashes repeat are read and compared by their texts."""
        scan = pl.scan_parquet(self.path).with_row_index("row")
        hashes = self._read(scan.select(pl.col("text").hash()), engine="streaming")["text"]
        first = np.arange(hashes.len(), dtype=np.int64)
        repeated = pl.Series(np.flatnonzero(hashes.is_duplicated().to_numpy()), dtype=pl.UInt32)
        if repeated.len():
            texts = self._read(scan.filter(pl.col("row").is_in(repeated.implode())).select("row", "text"))
            groups = texts.select("row", pl.col("row").min().over("text").alias("first"))
            first[groups["row"].to_numpy()] = groups["first"].to_numpy()
        return first

    def texts(self, doc_ids: Iterable[str]) -> dict[str, str]:
        """Texts of the given documents only (the corpus is filtered while it is read)."""
        wanted = pl.Series("doc_id", list(dict.fromkeys(doc_ids)), dtype=pl.Utf8)
        part = self._read(
            pl.scan_parquet(self.path).filter(pl.col("doc_id").is_in(wanted.implode())).select("doc_id", "text")
        )
        return dict(zip(part["doc_id"].to_list(), part["text"].to_list()))

    def batches(self, size: int = ROW_GROUP) -> Iterator[list[str]]:
        """All texts in corpus order, a block at a time."""
        try:
            for batch in pq.ParquetFile(self.path).iter_batches(batch_size=size, columns=["text"]):
                yield batch.column(0).to_pylist()
        except (pa.ArrowException, OSError) as e:
            raise CacheError(f"corpus table {self.path} is damaged ({e}); run `terazi cache repair`") from None


def _documents(path: Path) -> Iterator[tuple[str, str]]:
    """(id, full text) of each corpus line; the file was validated when the dataset was loaded, split on line feeds
    only, as here (a carriage return is whitespace inside a JSON line, not a line end)."""
    with open(path, encoding="utf-8-sig", newline="\n") as f:
        for raw in f:
            if raw.strip():
                doc = Document.model_validate(json.loads(raw))
                yield doc.id, doc.full_text


def _write(path: Path, docs: Iterator[tuple[str, str]]) -> int:
    return write_atomic(path, lambda tmp: _write_to(tmp, docs))


def _write_to(tmp: Path, docs: Iterator[tuple[str, str]]) -> int:
    n = 0
    with pq.ParquetWriter(tmp, SCHEMA, compression="zstd") as w:
        while True:
            block = [d for _, d in zip(range(ROW_GROUP), docs)]
            if not block:
                break
            ids, texts = [i for i, _ in block], [t for _, t in block]
            keys = fingerprint.doc_keys(ids, fingerprint.text_keys(texts))
            chars = np.fromiter((len(t) for t in texts), dtype=np.int32, count=len(texts))
            w.write_table(
                pa.table(
                    [
                        pa.array(ids, pa.large_string()),
                        pa.array(texts, pa.large_string()),
                        pa.array(keys),
                        pa.array(chars),
                    ],
                    schema=SCHEMA,
                ),
                row_group_size=ROW_GROUP,
            )
            n += len(block)
    return n


def corpus_table(corpus_file: str | Path, corpus_fingerprint: str, n_docs: int, cache_dir: str | Path) -> CorpusTable:
    """The corpus table of a dataset, built on first use (or when the one in the cache is unreadable)."""
    path = CacheLayout(cache_dir).part("corpus", f"{corpus_fingerprint}.parquet")
    if path.is_file():
        try:
            if pq.ParquetFile(path).metadata.num_rows == n_docs:
                mark_used(path)
                return CorpusTable(path)
        except (pa.ArrowException, OSError):
            pass
        log.warning("corpus table %s is incomplete or damaged: rebuilding it", path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = _write(path, _documents(Path(corpus_file)))
    if n != n_docs:
        raise CacheError(f"{corpus_file} has {n} documents, the dataset {n_docs}: it changed during the run")
    return CorpusTable(path)
