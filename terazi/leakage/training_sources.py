"""Training sources for the leakage check, read in batches: JSON lines, parquet and plain-text files or folders of
them, a BEIR folder, a folder written by `datasets`' `save_to_disk`, and `hf:ORG/NAME` datasets.

A source says which of its fields hold text (`fields`, default `text`) and which of those are queries (`queries`:
compared with benchmark queries for repeats; by default the fields named query, question, queries, questions or
anchor). A record may lack some of the fields (a file of queries and passages: `--field query --field text`), not
all of them; a field's value may be a text, a list of texts or null (nothing to read). A BEIR folder is read as its
corpus (title and text) and its queries, whatever the fields say; a plain-text file is one text per non-blank line,
read as the field `text`. Each record is named `<file>:<n>`, n being its line in a JSON-lines or text file and its
row (from 1) in a parquet file or a `datasets` table, and <file> is the path as given (a folder's files: the folder
as given, then the path inside it), followed by `(id X)` where the record has an `_id` or `id` of its own. Every
problem is one line naming the file, line or field.
"""

from __future__ import annotations

import codecs
import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from terazi.base.errors import DatasetError, utf8_line_error
from terazi.base.outside import shown
from terazi.schemas.leakage import LOCAL_HF, TrainSource

_KINDS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".txt": "txt",
    ".jsonl.gz": "jsonl",
    ".ndjson.gz": "jsonl",
    ".txt.gz": "txt",
}
_SAVED = ("dataset_dict.json", "state.json")  # what `save_to_disk` leaves in a folder
ID_FIELDS = ("_id", "id")  # a record's own name, where it has one (BEIR's `_id`, most datasets' `id`)


@dataclass(frozen=True)
class Chunk:
    """A batch of records of one file and their texts, as parallel arrays."""

    rows: np.ndarray  # int64: each record's line (JSON lines, text) or row from 1 (parquet, datasets)
    texts: pl.Series  # every text of those records
    record: np.ndarray  # int64: for each text, the index in `rows` of its record
    query: np.ndarray  # bool: whether the text is from a query field
    ids: pl.Series | None = None  # each record's own id (null where it has none); None: no record has one


class _File:
    label: str
    size: int

    def chunks(self, batch: int) -> Iterator[Chunk]:
        raise NotImplementedError

    def check(self) -> None:
        """Fail now, in one line, on what can be seen without reading the whole file."""


def _text_values(path: Path, line: int, name: str, value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if value is None:
        return []
    if isinstance(value, list) and all(isinstance(v, str) or v is None for v in value):
        return [v for v in value if v is not None]
    raise DatasetError(path, line, f"field {name!r} is {type(value).__name__}: expected a text or a list of texts")


def nonblank_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of the non-blank lines, a leading byte-order mark dropped."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            for n, raw in enumerate(f, start=1):
                if n == 1 and raw.startswith(codecs.BOM_UTF8):
                    raw = raw[len(codecs.BOM_UTF8) :]
                if raw.strip():
                    yield n, raw
    except gzip.BadGzipFile:
        raise DatasetError(path, None, "not a gzip file (the name ends in .gz)") from None
    except EOFError:
        raise DatasetError(path, None, "the gzip file is cut short") from None


def _decoded(path: Path, n: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise utf8_line_error(path, n, raw, e) from None


class _Rows:
    """Collects records' texts into a `Chunk`."""

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.texts: list[str] = []
        self.record: list[int] = []
        self.query: list[bool] = []
        self.ids: list[str | None] = []

    def add(self, row: int, texts: list[tuple[str, bool]], record_id: str | None = None) -> None:
        k = len(self.rows)
        self.rows.append(row)
        self.ids.append(record_id)
        for t, q in texts:
            self.texts.append(t)
            self.record.append(k)
            self.query.append(q)

    def chunk(self) -> Chunk:
        ids = pl.Series(self.ids, dtype=pl.Utf8) if any(i is not None for i in self.ids) else None
        return Chunk(
            np.array(self.rows, np.int64),
            pl.Series(self.texts, dtype=pl.Utf8),
            np.array(self.record, np.int64),
            np.array(self.query, bool),
            ids,
        )


def _no_field(where: Path | str, line: int | None, plan: list[tuple[str, bool]], have: list[str]) -> DatasetError:
    wanted = " or ".join(repr(name) for name, _ in plan)
    return DatasetError(where, line, f"no field {wanted} (fields: {', '.join(have[:12]) or 'none'})")


class _Jsonl(_File):
    def __init__(self, path: Path, label: str, plan: list[tuple[str, bool]]):
        self.path, self.label, self.plan, self.size = path, label, plan, path.stat().st_size

    def _record(self, n: int, raw: bytes) -> tuple[list[tuple[str, bool]], str | None]:
        """The record's texts (fields it lacks skipped; one without any of them refused) and its own id."""
        try:
            obj = json.loads(_decoded(self.path, n, raw))
        except json.JSONDecodeError as e:
            raise DatasetError(self.path, n, f"not valid JSON ({e.msg})") from None
        if not isinstance(obj, dict):
            raise DatasetError(self.path, n, "expected a JSON object")
        if not any(name in obj for name, _ in self.plan):
            raise _no_field(self.path, n, self.plan, list(obj))
        out = []
        for name, is_query in self.plan:
            if name in obj:
                out += [(t, is_query) for t in _text_values(self.path, n, name, obj[name])]
        record_id = next(
            (obj[f] for f in ID_FIELDS if isinstance(obj.get(f), (str, int)) and not isinstance(obj.get(f), bool)), None
        )
        return out, None if record_id is None else str(record_id)

    def check(self) -> None:
        for n, raw in nonblank_lines(self.path):
            self._record(n, raw)
            return
        raise DatasetError(self.path, None, "no records (the file is empty)")

    def chunks(self, batch: int) -> Iterator[Chunk]:
        rows = _Rows()
        for n, raw in nonblank_lines(self.path):
            rows.add(n, *self._record(n, raw))
            if len(rows.rows) >= batch:
                yield rows.chunk()
                rows = _Rows()
        if rows.rows:
            yield rows.chunk()


class _Text(_File):
    def __init__(self, path: Path, label: str, is_query: bool):
        self.path, self.label, self.is_query, self.size = path, label, is_query, path.stat().st_size

    def check(self) -> None:
        for n, raw in nonblank_lines(self.path):
            _decoded(self.path, n, raw)
            return
        raise DatasetError(self.path, None, "no text (the file is empty)")

    def chunks(self, batch: int) -> Iterator[Chunk]:
        rows = _Rows()
        for n, raw in nonblank_lines(self.path):
            rows.add(n, [(_decoded(self.path, n, raw).rstrip("\r\n"), self.is_query)])
            if len(rows.rows) >= batch:
                yield rows.chunk()
                rows = _Rows()
        if rows.rows:
            yield rows.chunk()


def _columns(schema, plan: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """The plan's fields the table has (a table may lack some of them, not all)."""
    return [(name, q) for name, q in plan if name in schema.names]


def _id_column(schema) -> str | None:
    return next((f for f in ID_FIELDS if f in schema.names), None)


def _arrow_check(where: str, schema, plan: list[tuple[str, bool]]) -> None:
    """Some field read is a column, and every field read is a text or list-of-texts column."""
    import pyarrow as pa

    if not _columns(schema, plan):
        raise _no_field(where, None, plan, list(schema.names))
    for name, _ in _columns(schema, plan):
        t = schema.field(name).type
        inner = t.value_type if pa.types.is_list(t) or pa.types.is_large_list(t) else t
        if not (pa.types.is_string(inner) or pa.types.is_large_string(inner) or pa.types.is_null(inner)):
            raise DatasetError(where, None, f"field {name!r} is {t}: expected text or a list of texts")


def _table_chunk(df: pl.DataFrame, first_row: int, plan: list[tuple[str, bool]], id_column: str | None) -> Chunk:
    """A chunk from a batch of columns (lists of texts exploded, nulls dropped), all in polars."""
    parts = []
    for name, is_query in plan:
        part = pl.DataFrame({"r": np.arange(df.height, dtype=np.int64), "t": df[name]})
        if isinstance(part.schema["t"], pl.List):
            part = part.explode("t")
        parts.append(part.with_columns(pl.col("t").cast(pl.Utf8)).drop_nulls("t").with_columns(q=pl.lit(is_query)))
    both = pl.concat(parts)
    ids = df[id_column].cast(pl.Utf8) if id_column else None
    return Chunk(
        np.arange(first_row, first_row + df.height, dtype=np.int64),
        both["t"],
        both["r"].to_numpy(),
        both["q"].to_numpy(),
        ids,
    )


class _Parquet(_File):
    def __init__(self, path: Path, label: str, plan: list[tuple[str, bool]]):
        self.path, self.label, self.plan, self.size = path, label, plan, path.stat().st_size

    def _open(self):
        import pyarrow.parquet as pq

        try:
            return pq.ParquetFile(self.path)
        except (OSError, ValueError) as e:  # pyarrow: ArrowInvalid (a ValueError) or an OSError
            reason = str(e).splitlines()[0][:160]
            raise DatasetError(self.path, None, f"not a readable parquet file ({reason})") from None

    def check(self) -> None:
        _arrow_check(str(self.path), self._open().schema_arrow, self.plan)

    def chunks(self, batch: int) -> Iterator[Chunk]:
        row = 1
        table = self._open()
        plan, id_column = _columns(table.schema_arrow, self.plan), _id_column(table.schema_arrow)
        columns = list(dict.fromkeys([*(p[0] for p in plan), *([id_column] if id_column else [])]))
        for b in table.iter_batches(batch_size=batch, columns=columns):
            df = pl.from_arrow(b)
            yield _table_chunk(df, row, plan, id_column)
            row += df.height


class _Table(_File):
    """A `datasets` table (from the hub or `save_to_disk`), read as Arrow batches."""

    def __init__(self, table, label: str, plan: list[tuple[str, bool]]):
        self.table, self.label, self.plan, self.size = table, label, plan, int(table.data.nbytes)

    def check(self) -> None:
        _arrow_check(self.label, self.table.data.schema, self.plan)

    def chunks(self, batch: int) -> Iterator[Chunk]:
        row = 1
        schema = self.table.data.schema
        plan, id_column = _columns(schema, self.plan), _id_column(schema)
        for t in self.table.with_format("arrow").iter(batch_size=batch):
            df = pl.from_arrow(t)
            yield _table_chunk(df, row, plan, id_column)
            row += df.height


def _pick_split(tables, wanted: str | None, where: str):
    """A split of a `datasets` DatasetDict: the one asked for, else `train`, else the only one."""
    if not hasattr(tables, "keys"):
        return tables, None
    names = list(tables.keys())
    split = wanted or ("train" if "train" in names else names[0] if len(names) == 1 else None)
    if split not in names:
        raise DatasetError(where, None, f"choose a split: no {wanted or 'train'!r} among {', '.join(names)}")
    return tables[split], split


def _datasets_module(where: str):
    try:
        import datasets
    except ImportError:
        raise DatasetError(where, None, "reading it needs the datasets package: pip install datasets") from None
    datasets.disable_progress_bars()
    return datasets


def _hub_table(source: TrainSource):
    name, _, config = source.path.removeprefix("hf:").partition("#")
    name, _, revision = name.partition("@")
    if name.count("/") != 1:
        raise DatasetError(source.path, None, "expected hf:ORG/NAME[@REVISION][#CONFIG] or hf:/path/to/folder")
    datasets = _datasets_module(source.path)
    try:
        tables = datasets.load_dataset(name, config or None, revision=revision or None, split=source.split)
    except (ConnectionError, OSError, FileNotFoundError, ValueError) as e:
        reason = shown(str(e).splitlines()[0], 200) if str(e) else type(e).__name__
        raise DatasetError(
            source.path, None, f"cannot load it ({reason}); offline, a dataset must be in the local Hugging Face cache"
        ) from None
    return _pick_split(tables, source.split, source.path)


def _folder_files(root: Path, source: TrainSource) -> list[_File]:
    base = source.path.removeprefix("hf:").rstrip("/")
    if (root / "corpus.jsonl").is_file() and (root / "queries.jsonl").is_file():  # BEIR
        return [
            _Jsonl(root / "corpus.jsonl", f"{base}/corpus.jsonl", [("title", False), ("text", False)]),
            _Jsonl(root / "queries.jsonl", f"{base}/queries.jsonl", [("text", True)]),
        ]
    if any((root / s).is_file() for s in _SAVED):
        datasets = _datasets_module(str(root))
        try:
            table, split = _pick_split(datasets.load_from_disk(str(root)), source.split, str(root))
        except (OSError, ValueError, FileNotFoundError) as e:
            reason = str(e).splitlines()[0][:160]
            raise DatasetError(root, None, f"cannot read what save_to_disk wrote ({reason})") from None
        return [_Table(table, f"{base}/{split}" if split else base, source.plan)]
    found = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and _kind(p) and not any(s.startswith(".") for s in p.relative_to(root).parts)
    )
    if not found:
        raise DatasetError(
            root, None, "no .jsonl, .ndjson, .parquet or .txt files (nor .gz of JSON lines or text) in the folder"
        )
    return [_file(p, f"{base}/{p.relative_to(root).as_posix()}", source) for p in found]


def _kind(path: Path) -> str | None:
    name = path.name.lower()
    return next((k for suffix, k in _KINDS.items() if name.endswith(suffix)), None)


def _file(path: Path, label: str, source: TrainSource) -> _File:
    kind = _kind(path)
    if kind == "jsonl":
        return _Jsonl(path, label, source.plan)
    if kind == "parquet":
        return _Parquet(path, label, source.plan)
    if kind == "txt":
        return _Text(path, label, "text" in source.query_fields)
    raise DatasetError(
        path, None, "unknown kind of file: expected .jsonl, .ndjson, .parquet or .txt (or .gz of JSON lines or text)"
    )


class Reader:
    """A training source opened and checked: its files, in order, each read in chunks."""

    def __init__(self, source: TrainSource):
        self.source = source
        self.files = self._files()
        for f in self.files:
            f.check()

    def _files(self) -> list[_File]:
        src = self.source
        if src.path.startswith("hf:") and not src.path[3:].startswith(LOCAL_HF):
            table, split = _hub_table(src)
            return [_Table(table, f"{src.label}/{split}" if split else src.label, src.plan)]
        path = Path(src.path.removeprefix("hf:")).expanduser()
        if path.is_dir():
            return _folder_files(path, src)
        if not path.is_file():
            raise DatasetError(path, None, "training source not found")
        return [_file(path, src.path.removeprefix("hf:"), src)]

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    def texts(self, file: int, rows: set[int], batch: int = 50_000) -> dict[int, list[str]]:
        """The texts of some records of one file (for examples), read again from the start."""
        out: dict[int, list[str]] = {}
        for c in self.files[file].chunks(batch):
            want = np.isin(c.rows, np.fromiter(rows, np.int64, len(rows)))
            for k in np.flatnonzero(want):
                out[int(c.rows[k])] = c.texts.filter(pl.Series(c.record == k)).to_list()
            if len(out) == len(rows):
                break
        return out
