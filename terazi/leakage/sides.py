"""The two sides of a leakage check, each numbering its items 0… in reading order, in groups.

Benchmark side: dataset by dataset, its queries (in file order) then its passages (in corpus order); a group is a
dataset. Training side: source by source, file by file, its records in file order; a group is a source. Both are
read in batches; what is kept per item is a number (a training record's line or row), never its text.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator, Sequence

import numpy as np
import polars as pl

from terazi.data.beir import Dataset
from terazi.leakage.training_sources import Chunk, Reader, nonblank_lines


def _passage(raw: bytes) -> str:
    obj = json.loads(raw)  # the file was validated by load_beir
    title, text = obj.get("title") or "", obj.get("text") or ""
    return f"{title}. {text}" if title else text


class BenchmarkSide:
    def __init__(self, datasets: Sequence[Dataset]):
        self.datasets = list(datasets)
        self.query_ids = [list(ds.queries) for ds in self.datasets]
        sizes = [len(q) + ds.n_docs for q, ds in zip(self.query_ids, self.datasets)]
        # dataset d holds the items starts[d] ≤ item < starts[d+1]
        self.starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    @property
    def group_starts(self) -> np.ndarray:
        return self.starts[:-1]

    def passage_start(self, d: int) -> int:
        return int(self.starts[d]) + len(self.query_ids[d])

    @property
    def size(self) -> int:
        """Bytes of the texts' files: which side is smaller, before reading either."""
        return sum(ds.files[0].stat().st_size + ds.files[1].stat().st_size for ds in self.datasets)

    def query_texts(self, d: int) -> pl.Series:
        qs = self.datasets[d].queries
        return pl.Series([qs[q].text for q in self.query_ids[d]], dtype=pl.Utf8)

    def batches(self, batch: int) -> Iterator[tuple[pl.Series, int, int]]:
        """(texts, item number of the first, dataset), queries then passages, dataset by dataset."""
        for d, ds in enumerate(self.datasets):
            queries = self.query_texts(d)
            for s in range(0, len(queries), batch):
                yield queries.slice(s, batch), int(self.starts[d]) + s, d
            first, texts = self.passage_start(d), []
            for _, raw in nonblank_lines(ds.files[0]):
                texts.append(_passage(raw))
                if len(texts) == batch:
                    yield pl.Series(texts, dtype=pl.Utf8), first, d
                    first, texts = first + batch, []
            if texts:
                yield pl.Series(texts, dtype=pl.Utf8), first, d

    def passages(self, d: int, rows: set[int]) -> dict[int, str]:
        """Some passages' texts by their row in the corpus (from 0), read again."""
        out = {}
        for k, (_, raw) in enumerate(nonblank_lines(self.datasets[d].files[0])):
            if k in rows:
                out[k] = _passage(raw)
                if len(out) == len(rows):
                    break
        return out


class TrainingSide:
    """Training sources read once, in `stream`; their records' places are kept for naming hits afterwards."""

    def __init__(self, readers: Sequence[Reader]):
        self.readers = list(readers)
        self.source_starts = np.zeros(len(self.readers) + 1, np.int64)
        self.texts_read = np.zeros(len(self.readers), np.int64)
        self.queries_read = np.zeros(len(self.readers), np.int64)
        self._file_starts: list[int] = []
        self._files: list[tuple[int, int]] = []  # (source, file in that source)
        self._rows: list[np.ndarray] = []
        self.rows = np.empty(0, np.int64)
        self._id_starts: list[int] = []  # the first record of each chunk whose records have ids of their own
        self._ids: list[pl.Series] = []

    @property
    def size(self) -> int:
        return sum(r.size for r in self.readers)

    @property
    def group_starts(self) -> np.ndarray:
        return self.source_starts[:-1]

    def stream(self, batch: int) -> Iterator[tuple[Chunk, int, int]]:
        """(chunk, number of its first record, source), all sources in order; numbers the records as it goes."""
        records = 0
        for s, reader in enumerate(self.readers):
            self.source_starts[s] = records
            for f, file in enumerate(reader.files):
                self._file_starts.append(records)
                self._files.append((s, f))
                for c in file.chunks(batch):
                    self._rows.append(c.rows)
                    if c.ids is not None:
                        self._id_starts.append(records)
                        self._ids.append(c.ids)
                    self.texts_read[s] += len(c.texts)
                    self.queries_read[s] += int(c.query.sum())
                    yield c, records, s
                    records += len(c.rows)
        self.source_starts[-1] = records
        self.rows = np.concatenate(self._rows) if self._rows else np.empty(0, np.int64)
        self._rows = []

    def _file_of(self, items: np.ndarray) -> np.ndarray:
        return np.searchsorted(np.array(self._file_starts, np.int64), items, side="right") - 1

    def _id_of(self, item: int) -> str | None:
        k = bisect.bisect_right(self._id_starts, item) - 1
        if k < 0 or item - self._id_starts[k] >= len(self._ids[k]):
            return None
        return self._ids[k][item - self._id_starts[k]]

    def refs(self, items: np.ndarray) -> list[str]:
        """`<file>:<line or row>` of each record, with `(id X)` where the record has an id of its own."""
        files = self._file_of(items)
        out = []
        for item, (s, f), row in zip(items.tolist(), (self._files[k] for k in files), self.rows[items].tolist()):
            record_id = self._id_of(item)
            out.append(f"{self.readers[s].files[f].label}:{row}" + (f" (id {record_id})" if record_id else ""))
        return out

    def texts(self, items: Sequence[int]) -> dict[int, list[str]]:
        """Some records' texts (every field read), by record number, read again from their files."""
        out: dict[int, list[str]] = {}
        items = np.asarray(sorted(set(items)), np.int64)
        files = self._file_of(items)
        for k in np.unique(files):
            s, f = self._files[k]
            mine = items[files == k]
            got = self.readers[s].texts(f, set(self.rows[mine].tolist()))
            out.update({int(i): got.get(int(self.rows[i]), []) for i in mine})
        return out
