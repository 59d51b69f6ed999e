"""Per-query values of a system's rankings, every (condition, sample), samples of one query averaged; the table that
every statistic and every leaderboard is computed from. `terazi run` and `terazi analyze` both compute here."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import polars as pl

from terazi.data.blocks import BLOCK_ROWS, blockwise, write_blocks
from terazi.data.loading import open_dataset, read_variants
from terazi.metrics.contracts import Policies, metric_contracts
from terazi.metrics.engine import Evaluation, evaluate
from terazi.metrics.frames import qrels_frame
from terazi.schemas import DatasetManifest, RerankResult, ScoreSet, VariantSet
from terazi.schemas.layout import RunLayout
from terazi.store import derived


def changed_flags(variants: pl.DataFrame) -> pl.DataFrame:
    """(condition, query_id, changed): a query counts as changed when any of its samples changed."""
    return variants.group_by("condition", "query_id").agg(pl.col("changed").any())


def per_query_values(
    qrels,
    ranked: pl.DataFrame | Iterable[pl.DataFrame],
    changed: pl.DataFrame,
    measures: list[str],
    policies: Policies = Policies(),
    order: str = "rank",
) -> pl.DataFrame:
    """(condition, query_id, measure, value, changed) of every (condition, sample) ranking, samples of one query
    averaged; `changed` holds (condition, query_id, changed). `ranked` is one table or blocks of whole variants in
    order (`terazi.data.blocks`). All the rows of `query_values`."""
    return query_values(qrels, ranked, changed, measures, policies, order).rows()


@dataclass(frozen=True)
class Values:
    """Per-query values kept as numbers: row i is condition `conditions[c]`, query `query_ids[at]`, measure
    `measures[m]`, in `table` (c, at, m, value, changed); the names are put in a slice of rows at a time (`rows`), so
    that a table with every condition × measure × query is never held with its strings (a few bytes a value instead
    of the five names' hundred)."""

    table: pl.DataFrame
    conditions: list[str]
    query_ids: pl.Series
    measures: list[str]
    samples: pl.DataFrame  # (c, s, at, m, value) of each sample of the conditions that have several, else empty

    def rows(self, start: int = 0, length: int | None = None) -> pl.DataFrame:
        """(condition, query_id, measure, value, changed) of rows `start` to `start + length` (all from `start`)."""
        part = self.table.slice(start, length)
        return part.select(
            pl.col("c").replace_strict(dict(enumerate(self.conditions)), return_dtype=pl.Utf8).alias("condition"),
            self.query_ids.gather(part["at"]).alias("query_id"),
            pl.col("m").replace_strict(dict(enumerate(self.measures)), return_dtype=pl.Utf8).alias("measure"),
            "value",
            "changed",
        )

    def sample_rows(self) -> pl.DataFrame:
        """(condition, sample, query_id, measure, value) of each sample of the conditions that have several: what
        retention's two-level bootstrap resamples (terazi.analysis.two_level); no rows when every condition has one."""
        return self.samples.select(
            pl.col("c").replace_strict(dict(enumerate(self.conditions)), return_dtype=pl.Utf8).alias("condition"),
            pl.col("s").cast(pl.Int64).alias("sample"),
            self.query_ids.gather(self.samples["at"]).alias("query_id"),
            pl.col("m").replace_strict(dict(enumerate(self.measures)), return_dtype=pl.Utf8).alias("measure"),
            "value",
        )

    def slices(self, rows: int = BLOCK_ROWS) -> Iterator[pl.DataFrame]:
        """`rows` in order, `rows` rows at a time."""
        for start in range(0, self.table.height, rows):
            yield self.rows(start, rows)


def query_values(
    qrels,
    ranked: pl.DataFrame | Iterable[pl.DataFrame],
    changed: pl.DataFrame,
    measures: list[str],
    policies: Policies = Policies(),
    order: str = "rank",
) -> Values:
    """`per_query_values` as numbers (`Values`). A query's values are its own, so each block is evaluated against its
    queries' judgments alone, then each ranking's judged queries it lacks as `evaluate` counts them; the rows come in
    the order one `evaluate` of each whole ranking gives. `terazi run` and `terazi analyze` both compute here."""
    judgments = qrels_frame(qrels)
    judged = judgments.select(pl.col("query_id").unique(maintain_order=True)).with_row_index("at")  # evaluate's order
    rankings: dict[tuple[str, int], int] = {}  # (condition, sample) → its place, in order of appearance
    values, ranked_queries = [], []
    for block in [ranked] if isinstance(ranked, pl.DataFrame) else ranked:
        for (cond, smp), part in block.group_by(["condition", "sample"], maintain_order=True):
            g = rankings.setdefault((cond, smp), len(rankings))
            queries = part.select(pl.col("query_id").unique())
            mine = judgments.join(queries, on="query_id", how="semi", maintain_order="left")
            ev = evaluate(mine, part.drop("condition", "sample"), measures, policies, order=order)
            values += _values(g, measures, ev, judged)
            ranked_queries.append(queries.join(judged, on="query_id").select("at", pl.lit(g, pl.UInt32).alias("g")))
    seen = pl.concat(ranked_queries) if ranked_queries else pl.DataFrame(schema={"at": pl.UInt32, "g": pl.UInt32})
    for g in rankings.values():
        lacking = judged.join(seen.filter(pl.col("g") == g), on="at", how="anti", maintain_order="left")
        if lacking.height:
            mine = judgments.join(lacking, on="query_id", how="semi", maintain_order="left")
            values += _values(g, measures, evaluate(mine, NO_ROWS, measures, policies, order=order), judged)
    # ranking g, measure m, query at (the judgments' order); a condition is c, its first place
    conditions = list(dict.fromkeys(c for c, _ in rankings))
    of_ranking = {g: conditions.index(c) for (c, _), g in rankings.items()}
    flags = (
        changed.join(pl.DataFrame({"condition": conditions}).with_row_index("c"), on="condition")
        .join(judged, on="query_id")
        .select("c", "at", "changed")
    )
    ranked_values = (
        pl.concat(values)
        .sort("g", "m", "at", maintain_order=True)
        .with_columns(pl.col("g").replace_strict(of_ranking, return_dtype=pl.UInt32).alias("c"))
    )
    several = Counter(c for c, _ in rankings)
    sample_of = {g: s for (c, s), g in rankings.items() if several[c] > 1}
    samples = ranked_values.filter(pl.col("g").is_in(list(sample_of))).select(
        "c", pl.col("g").replace_strict(sample_of, return_dtype=pl.UInt32).alias("s"), "at", "m", "value"
    )
    table = (
        ranked_values.select("c", "at", "m", "value")
        .group_by("c", "at", "m", maintain_order=True)
        .agg(pl.col("value").mean())
        .join(flags, on=["c", "at"], how="left", maintain_order="left")
        .with_columns(pl.col("changed").fill_null(False))
    )
    return Values(table, conditions, judged["query_id"], measures, samples)


NO_ROWS = pl.DataFrame(schema={"query_id": pl.Utf8, "doc_id": pl.Utf8, "rank": pl.Int64, "score": pl.Float64})


def _values(g: int, measures: list[str], ev: Evaluation, judged: pl.DataFrame) -> list[pl.DataFrame]:
    """(g, m, at, value) of each measure: ranking `g`'s values, measure `m` the m-th of `measures`, query `at` the
    at-th of `judged`."""
    return [
        pl.DataFrame(
            {
                "query_id": pl.Series(ev.query_ids[m], dtype=pl.Utf8),
                "value": pl.Series(ev.per_query[m], dtype=pl.Float64),
            }
        )
        .join(judged, on="query_id", how="left", maintain_order="left")
        .select(pl.lit(g, pl.UInt32).alias("g"), pl.lit(i, pl.UInt32).alias("m"), "at", "value")
        for i, m in enumerate(measures)
    ]


def ranking_values(
    qrels, ranking: str | Path, changed: pl.DataFrame, measures: list[str], policies: Policies | None = None
) -> Values:
    """`query_values` of a ranking file (`policies`: the default ones when None), read a block of whole variants at
    a time (whole when it is not in (condition, sample, query_id, rank) order)."""
    return blockwise(
        ranking, COLUMNS, lambda blocks: query_values(qrels, blocks, changed, measures, policies or Policies())
    )


COLUMNS = ["condition", "sample", "query_id", "doc_id", "rank", "score"]


def score_system(
    dataset: DatasetManifest,
    ranking: RerankResult,
    variant_sets: list[VariantSet],
    measures: list[str],
    out_dir: str,
    policies: Policies = Policies(),
    cache_dir: str | None = None,
    ties: str = "trec",
) -> ScoreSet:
    """Evaluate each (condition, sample) ranking; samples of one query are averaged. Linked from the stored outputs
    when the same ranking was scored before against the same judgments and variants (terazi.store.derived). `ties`: the
    tie rule the ranking was made under, as its contract states it (the values follow the ranking's own ranks)."""

    def write(root: Path) -> dict:
        changed = changed_flags(read_variants(variant_sets, ["condition", "query_id", "changed"]))
        values = ranking_values(open_dataset(dataset).qrels, ranking.path, changed, measures, policies)

        def named(rows: pl.DataFrame) -> pl.DataFrame:
            return rows.select(pl.lit(dataset.name).alias("dataset"), pl.lit(ranking.system).alias("system"), pl.all())

        path = RunLayout(root).per_query_part(dataset.name, ranking.system)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_blocks(path, map(named, values.slices()), lambda: named(values.rows()))  # never the whole table
        if values.samples.height:  # each sample's values beside the per-query means, for retention's two levels
            samples = RunLayout(root).per_sample_part(dataset.name, ranking.system)
            samples.parent.mkdir(parents=True, exist_ok=True)
            named(values.sample_rows()).write_parquet(samples)
        return {}

    key = derived.key(
        "per-query",
        dataset.name,
        dataset.fingerprint,
        ranking.system,
        measures,
        asdict(policies),
        Path(ranking.path),
        [Path(v.path) for v in variant_sets],
        maker=__name__,
    )
    derived.reuse(cache_dir, key, out_dir, write)
    return ScoreSet(
        system=ranking.system,
        dataset=dataset.name,
        path=str(RunLayout(out_dir).per_query_part(dataset.name, ranking.system)),
        contracts=metric_contracts(measures, policies, ties),
    )
