"""Tables of query variants (candidates, rankings) read and written a block of whole variants at a time, so that the
stages after the model (rankings, fusion, per-query metrics, run files) hold a block, never a whole benchmark: memory
set by the block's size, not by queries × conditions × candidates.

The layout blocks need, which every candidate and ranking file terazi writes has: each condition's rows in one
stretch, its variants in (sample, query_id) order, each variant's ranks increasing. A file sorted by (condition,
sample, query_id, rank) has it, and so has the isolated setting's pool (the frozen candidates, then each
pseudo-condition's). A file is read in its own order (`variant_blocks`) or in (condition, sample, query_id) order
(`sorted_blocks`: a condition at a time, from the row groups that hold it). A file without the layout raises
`Unsorted` where it breaks it, and the reader takes it whole instead (a file written elsewhere).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import TypeVar

import polars as pl
import pyarrow.parquet as pq

from terazi.base.paths import write_atomic
from terazi.schemas.tables import VARIANT

log = logging.getLogger("terazi.blocks")
T = TypeVar("T")

BLOCK_ROWS = 131_072
NEW_VARIANT = pl.any_horizontal([pl.col(c) != pl.col(c).shift(1) for c in VARIANT]).fill_null(True)


class Unsorted(Exception):
    """The file is not in the layout blocks need; read it whole."""


class _Layout:
    """The layout check of one reader: each block's variants whole and in order after the last one seen, a
    condition's stretch never resumed once another began."""

    def __init__(self) -> None:
        self.last: tuple | None = None
        self.left: set[str] = set()

    def check(self, part: pl.DataFrame) -> None:
        firsts = part.filter(NEW_VARIANT).select(VARIANT)
        if self.last is not None:
            firsts = pl.concat([pl.DataFrame([self.last], schema=firsts.schema, orient="row"), firsts])
        runs = firsts.with_columns(pl.col("condition").rle_id().alias("run"))
        conds = runs.unique("run", maintain_order=True)["condition"].to_list()
        new = conds[1:] if self.last is not None else conds
        ok = (
            len(set(new)) == len(new)
            and not self.left.intersection(new)
            and runs.equals(runs.sort("run", "sample", "query_id"))
            and not firsts.is_duplicated().any()
            and part.select((pl.col("rank").diff() > 0) | NEW_VARIANT).to_series().all()
        )
        if not ok:
            raise Unsorted
        self.left.update(conds[:-1])
        self.last = part.select(VARIANT).row(-1)


def _whole_variants(frames: Iterable[pl.DataFrame]) -> Iterator[pl.DataFrame]:
    """Consecutive rows regrouped into blocks of whole variants (a variant cut by a frame's end is carried on)."""
    carry, layout = None, _Layout()
    for piece in frames:
        frame = piece if carry is None else pl.concat([carry, piece])
        cut = frame.select(pl.arg_where(NEW_VARIANT).max()).item()  # where the last variant starts
        carry = frame.slice(cut)  # it may go on in the next frame
        if cut:
            layout.check(part := frame.slice(0, cut))
            yield part
    if carry is not None and carry.height:
        layout.check(carry)
        yield carry


def variant_blocks(path: str | Path, columns: list[str], rows: int | None = None) -> Iterator[pl.DataFrame]:
    """The file's rows (`columns`, which include the variant's and `rank`) in blocks of whole variants, about `rows`
    (`BLOCK_ROWS`) each, in file order; raises `Unsorted` where the file leaves the layout (blocks before it were
    yielded)."""
    return _whole_variants(_slices(path, columns, rows or BLOCK_ROWS))


def sorted_blocks(path: str | Path, columns: list[str], rows: int | None = None) -> Iterator[pl.DataFrame]:
    """`variant_blocks` in (condition, sample, query_id) order: each condition's rows in turn, conditions sorted (a
    block holds one condition)."""
    conditions = pl.scan_parquet(path).select(pl.col("condition").unique().sort()).collect().to_series().to_list()
    for condition in conditions:
        yield from _whole_variants(condition_rows(path, columns, condition, rows))


def condition_rows(
    path: str | Path, columns: list[str], condition: str, rows: int | None = None
) -> Iterator[pl.DataFrame]:
    """The rows of one condition, in file order, a few row groups at a time: row groups whose statistics leave the
    condition out are not read (in a file with the layout, a condition's rows are a few neighbouring groups)."""
    file = pq.ParquetFile(path)
    at = file.schema_arrow.get_field_index("condition")

    def holds(group: int) -> bool:
        stats = file.metadata.row_group(group).column(at).statistics
        return stats is None or not stats.has_min_max or stats.min <= condition <= stats.max

    for part in _slices(path, columns, rows or BLOCK_ROWS, holds):
        if (part := part.filter(pl.col("condition") == condition)).height:
            yield part


def _slices(
    path: str | Path, columns: list[str], rows: int, wanted: Callable[[int], bool] = lambda group: True
) -> Iterator[pl.DataFrame]:
    """The file's rows in order, as slices of whole row groups (the `wanted` ones), about `rows` rows each (at least
    one group), read by polars (pyarrow's batch reader keeps several times a batch in its buffers)."""
    meta, start, end = pq.ParquetFile(path).metadata, 0, 0
    for group in range(meta.num_row_groups):
        size = meta.row_group(group).num_rows
        if not wanted(group):
            if end > start:
                yield pl.scan_parquet(path).select(columns).slice(start, end - start).collect()
            start = end = end + size
            continue
        if end > start and end - start + size > rows:
            yield pl.scan_parquet(path).select(columns).slice(start, end - start).collect()
            start = end
        end += size
    if end > start:
        yield pl.scan_parquet(path).select(columns).slice(start, end - start).collect()


def condition_offsets(path: str | Path, counted: pl.Expr) -> dict[str, int]:
    """For each condition, how many of the rows before its stretch `counted` holds for (e.g. the rescored rows before
    it, in file order); raises `Unsorted` when a condition's rows are not one stretch."""
    runs = (
        pl.scan_parquet(path)
        .select("condition", counted.alias("n"))
        .group_by(pl.col("condition").rle_id().alias("run"), maintain_order=True)
        .agg(pl.col("condition").first(), pl.col("n").sum())
        .collect()
    )
    if runs["condition"].is_duplicated().any():
        raise Unsorted
    return dict(zip(runs["condition"].to_list(), (runs["n"].cum_sum() - runs["n"]).to_list()))


def blockwise(path: str | Path, columns: list[str], use: Callable[[Iterable[pl.DataFrame]], T]) -> T:
    """`use(blocks)` of the file's blocks of whole variants; `use([the whole table])` again when the file is not in
    block order (`use` starts anew: what it wrote from the first blocks it writes again)."""
    try:
        return use(variant_blocks(path, columns))
    except Unsorted:
        log.info("%s is not sorted by variant and rank: read whole", path)
        return use([pl.read_parquet(path, columns=columns)])


def aligned_blocks(
    paths: list[str | Path], columns: list[str], rows: int | None = None
) -> Iterator[list[pl.DataFrame]]:
    """Blocks of the same whole variants, in (condition, sample, query_id) order, from files that hold the same
    variants with the same number of rows each (rankings of one candidate pool): one block per file, the first
    file's blocks setting the cut; raises `Unsorted` where a file's variants differ from the first's."""
    others = [_Rows(sorted_blocks(p, columns, rows)) for p in paths[1:]]
    for block in sorted_blocks(paths[0], columns, rows):
        parts, keys = [block, *(r.take(block.height) for r in others)], block.select(VARIANT)
        if any(p.height != block.height or not p.select(VARIANT).equals(keys) for p in parts[1:]):
            raise Unsorted
        yield parts
    if any(r.take(1).height for r in others):  # rows left over
        raise Unsorted


class _Rows:
    """Consecutive rows given as frames, taken n at a time."""

    def __init__(self, frames: Iterator[pl.DataFrame]):
        self.frames, self.buffer = frames, None

    def take(self, n: int) -> pl.DataFrame:
        while (self.buffer is None or self.buffer.height < n) and (frame := next(self.frames, None)) is not None:
            self.buffer = frame if self.buffer is None else pl.concat([self.buffer, frame])
        if self.buffer is None:
            return pl.DataFrame()
        out, self.buffer = self.buffer.slice(0, n), self.buffer.slice(n)
        return out


DICTIONARY = ["condition", "query_id"]  # few distinct values a block; the documents' ids are mostly distinct (a
# dictionary tried and dropped on every page: a quarter of the writer's time)


def write_blocks(path: Path, blocks: Iterable[pl.DataFrame], whole: Callable[[], pl.DataFrame]) -> None:
    """The blocks, in order, as one parquet file, written under a temporary name and then renamed. A block is encoded
    and compressed by a writer thread while the next one is made (pyarrow releases the GIL there): one block in
    flight. When `blocks` raise `Unsorted` (their input is not in block order), or yield nothing, the file is
    `whole()` instead, made in memory."""
    write_atomic(path, lambda tmp: _write_blocks(tmp, blocks, whole))


def _write_blocks(tmp: Path, blocks: Iterable[pl.DataFrame], whole: Callable[[], pl.DataFrame]) -> None:
    writer, pending, in_order = None, None, True
    with ThreadPoolExecutor(1, thread_name_prefix="terazi-blocks") as pool:
        try:
            for block in blocks:
                table = block.to_arrow()
                writer = writer or pq.ParquetWriter(
                    tmp,
                    table.schema,
                    compression="zstd",
                    use_dictionary=[c for c in DICTIONARY if c in table.column_names],
                )
                if pending is not None:
                    pending.result()
                pending = pool.submit(writer.write_table, table.cast(writer.schema))
            if pending is not None:
                pending.result()
        except Unsorted:
            in_order = False
        finally:
            wait([pending] if pending else [])
            if writer is not None:
                writer.close()
    if not in_order:
        log.info("its input is not sorted by variant and rank: made in memory")
    if writer is None or not in_order:
        whole().write_parquet(tmp)
