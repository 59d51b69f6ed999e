"""Short, stable content hashes that name datasets, candidate sets, models and (query, document) pairs."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

LENGTH = 16
ROWS_PER_SLICE = 200_000


def of_json(obj: Any) -> str:
    """Hash of a JSON-able object, independent of key order."""
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:LENGTH]


def of_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:LENGTH]


def of_files(paths: Iterable[Path]) -> str:
    """Hash of file names (relative to their common folder order) and contents."""
    h = hashlib.sha256()
    for p in sorted(Path(x) for x in paths):
        h.update(p.name.encode() + b"\0")
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:LENGTH]


class Records:
    """A content hash of records (JSON-able lists), section by section: no file layout, key order, spacing or
    encoding detail can change it. Built incrementally, so a corpus can be hashed while it streams by."""

    def __init__(self) -> None:
        self._h, self._sections = hashlib.sha256(), 0

    def section(self) -> Records:
        self._h.update(f"\x1e{self._sections}\n".encode())
        self._sections += 1
        return self

    def add(self, record: Any) -> None:
        self._h.update(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")

    def copy(self) -> Records:
        twin = Records()
        twin._h, twin._sections = self._h.copy(), self._sections
        return twin

    def hexdigest(self) -> str:
        return self._h.hexdigest()[:LENGTH]


def of_records(*sections: Iterable[Any]) -> str:
    """Hash of records, section by section (see `Records`)."""
    h = Records()
    for records in sections:
        h.section()
        for rec in records:
            h.add(rec)
    return h.hexdigest()


def of_file(path: Path | str) -> str:
    """Full SHA-256 of one file's bytes (frozen files are checked against it before use)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def of_rows(frame: pl.DataFrame) -> str:
    """Hash of a table's rows in order (tab-separated cells, one row a line), as `str()` writes each cell."""
    return Rows().add(frame).hexdigest()


class Rows:
    """`of_rows` of a table given as its consecutive parts (a table written a block at a time): the same hash.

    Built with polars in slices (no Python object per row); string and integer columns give exactly the bytes of the
    row-by-row definition, other types fall back to it."""

    def __init__(self) -> None:
        self._h, self._rows = hashlib.sha256(), 0

    def add(self, frame: pl.DataFrame) -> Rows:
        if not all(dt == pl.Utf8 or dt.is_integer() for dt in frame.dtypes) or any(frame.null_count().row(0)):
            parts = ["\n".join("\t".join(map(str, row)) for row in frame.iter_rows())]
        else:
            lines = frame.select(pl.concat_str([pl.col(c).cast(pl.Utf8) for c in frame.columns], separator="\t"))
            parts = (
                lines.slice(start, ROWS_PER_SLICE).to_series().str.join("\n").item()
                for start in range(0, frame.height, ROWS_PER_SLICE)
            )
        for part in parts if frame.height else []:
            self._h.update((("\n" if self._rows else "") + part).encode())
            self._rows += 1
        return self

    def hexdigest(self) -> str:
        return self._h.hexdigest()[:LENGTH]


def text_keys(texts: Iterable[str]) -> np.ndarray:
    """64-bit keys of texts: the first 8 bytes of SHA-256 (the 16 hex digits of `of_text`) as int64."""
    raw = b"".join(hashlib.sha256(t.encode()).digest()[:8] for t in texts)
    return np.frombuffer(raw, dtype=">u8").astype(np.uint64).view(np.int64)


def doc_keys(doc_ids: Iterable[str], text_hashes: np.ndarray) -> np.ndarray:
    """64-bit keys of documents: BLAKE2b of the id and the text's key, so that a changed text or id is a new key."""
    raw = b"".join(
        hashlib.blake2b(d.encode() + b"\0" + int(k).to_bytes(8, "big", signed=True), digest_size=8).digest()
        for d, k in zip(doc_ids, text_hashes)
    )
    return np.frombuffer(raw, dtype=">u8").astype(np.uint64).view(np.int64)


def hex_keys(hexes: Iterable[str]) -> np.ndarray:
    """`of_text` hex digests as the int64 keys `text_keys` gives (to carry old cache rows over)."""
    raw = bytes.fromhex("".join(hexes))
    return np.frombuffer(raw, dtype=">u8").astype(np.uint64).view(np.int64)


def key64(text: str) -> int:
    """A signed 64-bit key of a short text (model identities)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True)
