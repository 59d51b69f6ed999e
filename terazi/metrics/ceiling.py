"""The ceiling of a first stage on one dataset's clean queries at every depth of a sweep: recall@depth, and the
oracle's headline, the judged candidates of the top `depth` in their ideal order (grade descending, the tie rule
breaking ties, as a reranker's head breaks them) above the rest in first-stage order, so a reranker's figure reads
as a share of what its candidates allow."""

from __future__ import annotations

import polars as pl

from terazi.base.ties import tie_order
from terazi.data.loading import open_dataset
from terazi.metrics.frames import qrels_frame
from terazi.metrics.per_query import per_query_values
from terazi.schemas import FIRST_STAGE, CandidateSet, DatasetManifest, DepthSet
from terazi.schemas.layout import RunLayout
from terazi.schemas.tables import CLEAN, VARIANT

UNCHANGED = pl.DataFrame(schema={"condition": pl.Utf8, "query_id": pl.Utf8, "changed": pl.Boolean})  # clean only


def clean_candidates(candidates: CandidateSet) -> pl.DataFrame:
    """The frozen candidates of the clean queries (the depth sweep and the ceiling are read on them)."""
    return (
        pl.scan_parquet(candidates.path)
        .filter(pl.col("condition") == CLEAN)
        .select(*VARIANT, "rank", "doc_id", "score")
        .collect()
    )


def oracle_ranking(candidates: pl.DataFrame, grades: pl.DataFrame, depth: int, ties: str = "trec") -> pl.DataFrame:
    """The best ranking a reranker at `depth` can give: the top `depth` candidates of every variant in their ideal
    order (grade descending, unjudged 0, then the tie rule), the candidates below them in first-stage order, as a
    reranker at that depth leaves them (they still count in nDCG@10 when the depth is under 10)."""
    top = candidates.filter(pl.col("rank") <= depth).join(grades, on=["query_id", "doc_id"], how="left")
    top = top.with_columns(pl.col("grade").fill_null(0).cast(pl.Float64).alias("score"))
    by, descending = tie_order(ties)
    top = (
        top.sort([*VARIANT, *by], descending=[False, False, False, *descending], nulls_last=True)
        .with_columns(pl.int_range(1, pl.len() + 1).over(VARIANT).cast(pl.Int64).alias("rank"))
        .drop("grade")
    )
    rest = candidates.filter(pl.col("rank") > depth).with_columns(pl.col("score").cast(pl.Float64))
    return pl.concat([top, rest.select(top.columns)]).sort([*VARIANT, "rank"])


def ceiling_values(
    dataset: DatasetManifest,
    candidates: CandidateSet,
    depths: list[int],
    measure: str,
    out_dir: str,
    ties: str = "trec",
) -> DepthSet:
    """Per clean query and depth: recall@depth of the frozen candidates and the oracle's `measure` (ceiling/…)."""
    qrels = open_dataset(dataset).qrels
    grades, cands = qrels_frame(qrels), clean_candidates(candidates)
    frames = []
    for depth in depths:
        recall = per_query_values(qrels, cands, UNCHANGED, [f"R@{depth}"]).select(
            "query_id", pl.col("value").alias("recall")
        )
        oracle = per_query_values(qrels, oracle_ranking(cands, grades, depth, ties), UNCHANGED, [measure], order="rank")
        frames.append(
            oracle.join(recall, on="query_id", how="left").select(
                pl.lit(dataset.name).alias("dataset"),
                pl.lit(FIRST_STAGE).alias("system"),
                pl.lit(depth).alias("depth"),
                "query_id",
                pl.col("recall").fill_null(0.0),
                pl.col("value").alias("oracle"),
            )
        )
    path = RunLayout(out_dir).ceiling_part(dataset.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.concat(frames).write_parquet(path)
    return DepthSet(system=FIRST_STAGE, dataset=dataset.name, path=str(path))
