"""A results folder's tables read back by the commands that show them (`card`, `leaderboard`, `compare`), checked
as user input is: a results folder is a folder of files anyone can edit, copy half-way or receive from elsewhere.

Every column of a results table is text (the names below) or a number; a number column may leave a cell empty (a
missing value, e.g. retention where nothing changed) but may not hold text, NaN or an infinity. A bad cell is one
line naming the file, the line and the column, never a formatting error deep in a table.
"""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl

from terazi.base.errors import DatasetError

# the text (and true/false) columns of every table of a results folder (schemas/layout.py); every other is a number
TEXT = frozenset(
    {
        "system",
        "versus",
        "dataset",
        "condition",
        "verdict",
        "kind",
        "device",
        "precision",
        "unit",
        "cached",
        "query_id",
        "measure",
        "changed",
        "task",
        "task_type",
        "variant",
        "base",
        "label",
        "setting",
        "first_stage",
        "aggregation",
        "enough",
        "reason",
        "name",
        "order",
        "order_versus",
        "holds",
        "sentence",
    }
)


def checked(frame: pl.DataFrame, path: Path | str, text: frozenset[str] = TEXT) -> pl.DataFrame:
    """`frame`, read from the CSV file `path` (numbers where polars recognised them), with every other column but
    the text ones made numbers, or a `DatasetError` naming the first bad cell (its line in the file)."""
    fixed = {}
    for column in (c for c in frame.columns if c not in text):
        series = frame[column]
        if series.dtype.is_numeric():
            bad = series.cast(pl.Float64).is_nan() | series.cast(pl.Float64).is_infinite()
            if bad.any():
                row = int(bad.arg_true()[0])
                raise DatasetError(path, row + 2, f"column {column!r}: '{series[row]}' is not a finite number")
            continue
        values = []
        for row, cell in enumerate(series.cast(pl.Utf8).to_list()):
            try:
                value = float(cell) if cell is not None and cell.strip() else None
            except ValueError:
                raise DatasetError(path, row + 2, f"column {column!r}: {cell!r} is not a number") from None
            if value is not None and not math.isfinite(value):
                raise DatasetError(path, row + 2, f"column {column!r}: {cell!r} is not a finite number")
            values.append(value)
        fixed[column] = pl.Series(column, values, dtype=pl.Float64)  # a column of empty cells: missing numbers
    return frame.with_columns(**fixed) if fixed else frame


def read_csv(path: Path | str, schema: dict | None = None, text: frozenset[str] = TEXT) -> pl.DataFrame:
    """A results table, every number checked (`schema`: the columns' types, for a table that may have no rows)."""
    try:
        frame = (
            pl.read_csv(path, schema=schema) if schema else pl.read_csv(path, schema_overrides={"query_id": pl.Utf8})
        )
    except (OSError, pl.exceptions.PolarsError) as e:
        raise DatasetError(path, None, f"cannot read it as CSV ({str(e).splitlines()[0]})") from None
    return checked(frame, path, text)


def finite_parquet(path: Path | str, column: str = "value") -> None:
    """A parquet table's number column checked: its first NaN or infinity named by its row in the file (from 1)."""
    values = pl.col(column).cast(pl.Float64)
    bad = (
        pl.scan_parquet(path)
        .with_row_index("row")
        .filter(values.is_nan() | values.is_infinite())
        .select("row", column)
        .head(1)
        .collect()
    )
    if bad.height:
        raise DatasetError(
            path, None, f"row {bad['row'][0] + 1}, column {column!r}: {bad[column][0]} is not a finite number"
        )
