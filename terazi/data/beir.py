"""Reading BEIR-format datasets strictly: every problem names the file, the line and what is wrong."""

from __future__ import annotations

import codecs
import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import polars as pl
from pydantic import BaseModel, ValidationError

from terazi.base import fingerprint
from terazi.base.errors import DatasetError, describe, utf8_line_error
from terazi.data.trec import read_qrels
from terazi.schemas.records import Document, Query

ID_BLOCK = 65536  # corpus ids gathered into a column this many at a time


@dataclass(frozen=True)
class Dataset:
    """A validated dataset. The corpus is checked (and hashed) in a stream and kept as its ids only: stages that
    need the texts read them from the corpus table in the cache (`terazi.data.corpus`); `docs` reads the file on first
    use."""

    name: str
    root: Path
    split: str
    doc_ids: pl.Series = field(repr=False)
    queries: dict[str, Query]
    qrels: dict[str, dict[str, int]]
    files: tuple[Path, ...] = field(repr=False)
    corpus_hash: fingerprint.Records = field(repr=False, compare=False)

    @cached_property
    def docs(self) -> dict[str, Document]:
        return _read_jsonl(self.files[0], Document, "corpus")

    @property
    def n_docs(self) -> int:
        return self.doc_ids.len()

    @cached_property
    def fingerprint(self) -> str:
        """Hash of the content that is evaluated, not of file bytes: the corpus (id, title, text) in order, the
        judged queries (id, text) and the judgments (query, document, grade), both sorted by id, and, where any judged
        query lists them, the documents each one excludes (`excluded_ids`, sorted). A BEIR folder and the same dataset
        from Hugging Face, MTEB or ir_datasets therefore share one fingerprint. Texts are hashed as they are read, in
        Unicode NFC (`terazi.schemas.records`): a dataset and its NFD copy share one fingerprint, and one already in
        NFC (nearly every one) keeps the fingerprint, and so the caches, it had before."""
        h = self.corpus_hash.copy().section()
        for q in sorted(self.judged_query_ids):
            h.add([q, self.queries[q].text])
        h.section()
        for q in sorted(self.qrels):
            for d, g in sorted(self.qrels[q].items()):
                h.add([q, d, g])
        excluded = {
            q: sorted(set(self.queries[q].excluded_ids))
            for q in sorted(self.judged_query_ids)
            if self.queries[q].excluded_ids
        }
        if excluded:
            h.section()
            for q, docs in excluded.items():
                h.add([q, docs])
        return h.hexdigest()

    def dropped(self, identical_ids: bool = False) -> pl.DataFrame:
        """(query_id, doc_id): the corpus documents no ranking of a judged query may hold, each first stage leaving
        them out before it cuts its list to depth: the query's `excluded_ids` (BRIGHT's) and, with `identical_ids`
        (BEIR's and MTEB's `ignore_identical_ids`), the document whose id is the query's own."""
        judged = self.judged_query_ids
        pairs = [(q, d) for q in judged for d in self.queries[q].excluded_ids]
        if identical_ids:
            pairs += [(q, q) for q in judged]
        frame = pl.DataFrame(pairs, schema={"query_id": pl.Utf8, "doc_id": pl.Utf8}, orient="row")
        return frame.filter(pl.col("doc_id").is_in(self.doc_ids.implode())).unique(maintain_order=True)

    @cached_property
    def corpus_fingerprint(self) -> str:
        # corpus order is kept: it is the row order of the first-stage index, which breaks exact score ties
        return self.corpus_hash.hexdigest()

    @property
    def judged_query_ids(self) -> list[str]:
        """Queries that are evaluated: those with judgments in this split, in file order."""
        return [q for q in self.queries if q in self.qrels]


def _records(path: Path, model: type[BaseModel], what: str) -> Iterator[tuple[int, BaseModel]]:
    """(line number, validated record) of each non-blank line."""
    if not path.is_file():
        raise DatasetError(path, None, f"missing {what} file")
    with open(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            if n == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise utf8_line_error(path, n, raw, e) from None
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as e:
                raise DatasetError(path, n, f"not valid JSON ({e.msg})") from None
            if not isinstance(obj, dict):
                raise DatasetError(path, n, "expected a JSON object")
            try:
                yield n, model.model_validate(obj)
            except ValidationError as e:
                raise DatasetError(path, n, describe(e)) from None


def _read_jsonl(path: Path, model: type[BaseModel], what: str) -> dict:
    """id → record."""
    out: dict = {}
    first_line: dict[str, int] = {}
    for n, rec in _records(path, model, what):
        if rec.id in out:
            raise DatasetError(path, n, f"duplicate id {rec.id!r} (first on line {first_line[rec.id]})")
        out[rec.id], first_line[rec.id] = rec, n
    if not out:
        raise DatasetError(path, None, f"no {what} records")
    return out


def _corpus_ids(path: Path, hasher: fingerprint.Records) -> pl.Series:
    """The corpus's ids in file order, each record checked and its (id, title, text) hashed in file order: held as
    one column (a few bytes an id), not as Python strings, a block of lines at a time. A repeated id names its first
    two lines (the file read again to find them)."""
    blocks, block = [], []
    for _, rec in _records(path, Document, "corpus"):
        block.append(rec.id)
        hasher.add([rec.id, rec.title, rec.text])
        if len(block) == ID_BLOCK:
            blocks.append(pl.Series("doc_id", block, dtype=pl.Utf8))
            block = []
    ids = pl.concat([*blocks, pl.Series("doc_id", block, dtype=pl.Utf8)])
    if not ids.len():
        raise DatasetError(path, None, "no corpus records")
    if not (first := ids.is_first_distinct()).all():
        again = ids[int(first.arg_min())]
        lines = [n for n, rec in _records(path, Document, "corpus") if rec.id == again]
        raise DatasetError(path, lines[1], f"duplicate id {again!r} (first on line {lines[0]})")
    return ids


def _check_ids(path: Path, qrels: pl.DataFrame, doc_ids: pl.Series, queries: dict) -> dict[str, dict[str, int]]:
    for col, known, what in (
        ("doc_id", doc_ids, "document id"),
        ("query_id", pl.Series(list(queries), dtype=pl.Utf8), "query id"),
    ):
        unknown = qrels.filter(~pl.col(col).is_in(known.implode()))
        if unknown.height:
            row = unknown.row(0, named=True)
            where = "the corpus" if col == "doc_id" else "queries"
            raise DatasetError(path, row["lineno"], f"unknown {what} {row[col]!r} (not in {where})")
    out: dict[str, dict[str, int]] = {}
    for q, d, g in qrels.select("query_id", "doc_id", "grade").iter_rows():
        out.setdefault(q, {})[d] = g
    return out


def load_beir(root: str | Path, split: str = "test", name: str | None = None) -> Dataset:
    """Load and validate `corpus.jsonl`, `queries.jsonl` and `qrels/<split>.tsv` under `root`."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise DatasetError(root, None, "dataset folder not found")
    corpus_p, queries_p, qrels_p = root / "corpus.jsonl", root / "queries.jsonl", root / "qrels" / f"{split}.tsv"
    corpus_hash = fingerprint.Records().section()
    doc_ids = _corpus_ids(corpus_p, corpus_hash)
    queries = _read_jsonl(queries_p, Query, "queries")
    qrels = _check_ids(qrels_p, read_qrels(qrels_p, keep_lines=True), doc_ids, queries)
    return Dataset(name or root.name, root, split, doc_ids, queries, qrels, (corpus_p, queries_p, qrels_p), corpus_hash)


def write_beir(
    root: Path, docs: list[dict], queries: list[dict], qrels: list[tuple[str, str, int]], split: str = "test"
) -> Path:
    """Write a BEIR folder (used by the SQuAD converter and by tests)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "qrels").mkdir(exist_ok=True)
    for fname, rows in (("corpus.jsonl", docs), ("queries.jsonl", queries)):
        with open(root / fname, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    with open(root / "qrels" / f"{split}.tsv", "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["query-id", "corpus-id", "score"])
        w.writerows(qrels)
    return root
