"""TREC run and qrels files read with polars (vectorised, no per-line Python); written by terazi.data.trec_writer.

A file is read once, as bytes, so a pipe reads like a file (`-` is stdin; `/dev/stdin` and a shell's process
substitution, `<(…)`, are paths). Its text is checked before it is parsed: UTF-8, and no control character but the
tab and line ends, so an id holding one is refused with its line instead of breaking a parser or a file written
later. Fields are separated by spaces and tabs only (as trec_eval splits them): other Unicode spaces belong to ids.
"""

from __future__ import annotations

import codecs
import io
import re
import sys
from pathlib import Path

import polars as pl

from terazi.base.errors import DatasetError, utf8_error

# C0 controls but tab and line feed, a carriage return not ending a line, DEL, and C1 controls (U+0080–U+009F as UTF-8)
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)|\xc2[\x80-\x9f]")
# every byte but those a control character can start with: deleting them leaves (nearly always) nothing to search
_PLAIN = bytes(sorted(set(range(256)) - {*range(0x09), *range(0x0B, 0x20), 0x7F, 0xC2}))


def _control(data: bytes) -> re.Match | None:
    """The first control character, found by the regular expression only when a byte that can start one is there
    (a run file of 35 MB: 0.05 s instead of 0.5 s)."""
    suspects = data.translate(None, _PLAIN)
    if not suspects.strip(b"\r") and data.count(b"\r") == data.count(b"\r\n"):
        return None
    return _CONTROL.search(data)


def read_text(path: str | Path, what: str) -> bytes:
    """A TREC or BEIR file's bytes (stdin for `-`), byte-order mark removed, checked as the module says."""
    path = Path(path)
    if str(path) == "-":
        data = sys.stdin.buffer.read()
    elif not path.exists() or path.is_dir():
        raise DatasetError(path, None, f"missing {what} file")
    else:
        data = path.read_bytes()
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise utf8_error(path, data, e) from None
    if bad := _control(data):
        at = bad.start()
        char = data[at : at + 2].decode() if data[at] == 0xC2 else chr(data[at])
        line, column = data.count(b"\n", 0, at) + 1, at - (data.rfind(b"\n", 0, at) + 1) + 1
        raise DatasetError(
            path,
            line,
            f"control character U+{ord(char):04X} at column {column} (fields are "
            "separated by spaces or tabs, records by line ends): remove it",
        )
    return data


def _lines(path: Path, data: bytes, ncols: int) -> pl.DataFrame:
    """Every line split into columns: on tabs when the file uses tabs (BEIR tsv, whose ids may hold spaces),
    else on runs of spaces and tabs (TREC)."""
    raw = pl.DataFrame({"line": [data.decode("utf-8")]}).select(pl.col("line").str.split("\n")).explode("line")
    raw = raw.with_row_index("lineno", offset=1).filter(pl.col("line").str.strip_chars(" \t\r") != "")
    if raw.height and "\t" in raw["line"][0]:
        split = pl.col("line").str.strip_chars("\r").str.split("\t")
    else:
        split = pl.col("line").str.strip_chars(" \t\r").str.replace_all(r"[ \t]+", " ").str.split(" ")
    parts = raw.with_columns(split.alias("p"))
    bad = parts.filter(pl.col("p").list.len() != ncols)
    if bad.height:
        row = bad.row(0, named=True)
        raise DatasetError(path, row["lineno"], f"expected {ncols} whitespace-separated columns, got {len(row['p'])}")
    return parts


def _fast(data: bytes, names: list[str], types: dict, skip: int = 0) -> pl.DataFrame | None:
    """Files separated by single spaces or tabs parse in one polars call; anything else returns None."""
    sep = "\t" if b"\t" in data[: data.find(b"\n")] else " "
    try:
        df = pl.read_csv(
            io.BytesIO(data),
            separator=sep,
            has_header=False,
            new_columns=names,
            quote_char=None,
            schema_overrides=types,
            truncate_ragged_lines=False,
            skip_rows=skip,
        )
    except (pl.exceptions.PolarsError, ValueError):
        return None
    if df.width != len(names) or any(df[c].null_count() for c in types):
        return None
    return df


RUN_SCHEMA = {
    "query_id": pl.Utf8,
    "q0": pl.Utf8,
    "doc_id": pl.Utf8,
    "rank": pl.Utf8,
    "score": pl.Float64,
    "tag": pl.Utf8,
}


def _fast_run(data: bytes, rank: bool) -> pl.DataFrame | None:
    """A run separated by single spaces (or single tabs) in one projected polars scan; None for anything else.

    The scan parses only the columns needed, so it cannot see a line's field count: the separator count of
    the whole file (5 per line) checks it instead (cheaper than parsing three more columns), and any doubt
    falls back to the line-by-line reader, which names the line.
    """
    sep = b"\t" if b"\t" in data[: data.find(b"\n")] else b" "
    cols = ["query_id", "doc_id", "score", *(["rank"] if rank else [])]
    try:
        df = (
            pl.scan_csv(
                io.BytesIO(data),
                separator=sep.decode(),
                has_header=False,
                quote_char=None,
                schema={**RUN_SCHEMA, "rank": pl.Int64 if rank else pl.Utf8},
                truncate_ragged_lines=False,
            )
            .select(cols)
            .collect()
        )
    except (pl.exceptions.PolarsError, ValueError):
        return None
    if any(df[c].null_count() for c in cols) or data.count(sep) != 5 * df.height:
        return None
    return df


def read_run(path: str | Path, rank: bool = False) -> pl.DataFrame:
    """`qid Q0 docid rank score tag` → (query_id, doc_id, score). Rank is ignored, as trec_eval does, unless
    `rank` asks for it (an integer column, for the strict contract's repeated-rank check)."""
    data = read_text(path, "run")
    fast = _fast_run(data, rank)
    if fast is not None:
        return fast
    p = _lines(Path(path), data, 6)
    df = p.select(
        pl.col("lineno"),
        pl.col("p").list.get(0).alias("query_id"),
        pl.col("p").list.get(2).alias("doc_id"),
        pl.col("p").list.get(4).cast(pl.Float64, strict=False).alias("score"),
        pl.col("p").list.get(3).alias("_rank"),
    )
    bad = df.filter(pl.col("score").is_null())
    if bad.height:
        raise DatasetError(path, bad["lineno"][0], "score is not a number")
    if rank:
        df = df.with_columns(pl.col("_rank").cast(pl.Int64, strict=False).alias("rank"))
        bad = df.filter(pl.col("rank").is_null())
        if bad.height:
            raise DatasetError(path, bad["lineno"][0], f"rank {bad['_rank'][0]!r} is not an integer")
    return df.drop("lineno", "_rank")


def read_qrels(path: str | Path, keep_lines: bool = False) -> pl.DataFrame:
    """TREC qrels `qid 0 docid grade` or BEIR tsv `query-id corpus-id score` → (query_id, doc_id, grade).

    Tabs or spaces separate columns; a BEIR header line is skipped; `keep_lines` adds `lineno`.
    """
    path, data = Path(path), read_text(path, "qrels")
    line = data[: data.find(b"\n") + 1 or len(data)].decode("utf-8")
    first = line.rstrip("\r\n").split("\t") if "\t" in line else [f for f in line.strip(" \r\n").split(" ") if f]
    header = bool(first) and first[0].lower() in ("query-id", "query_id", "qid")
    ncols = len(first)
    if ncols not in (3, 4):
        raise DatasetError(path, 1, f"expected 3 (BEIR) or 4 (TREC) columns, got {ncols}")
    names = ["query_id", "doc_id", "grade"] if ncols == 3 else ["query_id", "iter", "doc_id", "grade"]
    fast = (
        None
        if keep_lines
        else _fast(data, names, {"query_id": pl.Utf8, "doc_id": pl.Utf8, "grade": pl.Int64}, skip=int(header))
    )
    # duplicates: distinct (query, document) hashes prove there are none; otherwise the line reader decides
    pair = pl.col("query_id").hash(seed=0) + pl.col("doc_id").hash(seed=1) * 0x9E3779B97F4A7C15
    if (
        fast is not None
        and not fast.filter(pl.col("grade") < 0).height
        and fast.select(pair.n_unique()).item() == fast.height
    ):
        if fast.height == 0:
            raise DatasetError(path, None, "no judgments")
        return fast.select("query_id", "doc_id", "grade")
    p = _lines(path, data, ncols)
    if header:
        p = p.filter(pl.col("lineno") > 1)
    doc_i, grade_i = (1, 2) if ncols == 3 else (2, 3)
    df = p.select(
        pl.col("lineno"),
        pl.col("p").list.get(0).alias("query_id"),
        pl.col("p").list.get(doc_i).alias("doc_id"),
        pl.col("p").list.get(grade_i).alias("_g"),
    ).with_columns(pl.col("_g").cast(pl.Int64, strict=False).alias("grade"))
    bad = df.filter(pl.col("grade").is_null())
    if bad.height:
        raise DatasetError(path, bad["lineno"][0], f"grade {bad['_g'][0]!r} is not an integer")
    neg = df.filter(pl.col("grade") < 0)
    if neg.height:
        raise DatasetError(path, neg["lineno"][0], f"negative grade {neg['grade'][0]}")
    dup = df.filter(pl.struct("query_id", "doc_id").is_duplicated())
    if dup.height:
        raise DatasetError(
            path,
            dup["lineno"][1] if dup.height > 1 else dup["lineno"][0],
            f"duplicate judgment for query {dup['query_id'][0]!r}, document {dup['doc_id'][0]!r}",
        )
    if df.height == 0:
        raise DatasetError(path, None, "no judgments")
    return df.select(*(["lineno"] if keep_lines else []), "query_id", "doc_id", "grade")
