"""Short, stable content hashes that name datasets, candidate sets and models."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable

LENGTH = 16


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


def of_records(*sections: Iterable[Any]) -> str:
    """Hash of records (JSON-able lists), section by section: a content hash that no file layout, key order,
    spacing or encoding detail can change."""
    h = hashlib.sha256()
    for i, records in enumerate(sections):
        h.update(f"\x1e{i}\n".encode())
        for rec in records:
            h.update(json.dumps(rec, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
    return h.hexdigest()[:LENGTH]


def of_rows(frame) -> str:
    """Hash of a table's rows in order (tab-separated cells, one row a line)."""
    return of_text("\n".join("\t".join(map(str, row)) for row in frame.iter_rows()))
