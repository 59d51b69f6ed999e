"""A reranker's depth sweep on one dataset: its headline on the clean queries at every depth of `rerank_depths`,
each ranked from the scores of the deepest depth (scored once, `ranking.write_sweep`), exactly as a run with that
single `rerank_depth` ranks: the top d rescored, the rest in first-stage order (`ranking.rank_part`)."""

from __future__ import annotations

import polars as pl

from terazi.data.loading import open_dataset
from terazi.metrics.ceiling import UNCHANGED, clean_candidates
from terazi.metrics.per_query import per_query_values
from terazi.rerank.ranking import rank_part
from terazi.schemas import CandidateSet, DatasetManifest, DepthSet, RerankResult
from terazi.schemas.layout import RunLayout
from terazi.schemas.tables import VARIANT


def pairs_per_query(candidates: pl.DataFrame, depth: int) -> pl.DataFrame:
    """(query_id, pairs): the candidates a reranker scores for each clean query at `depth`, samples averaged."""
    return (
        candidates.group_by(VARIANT)
        .agg((pl.col("rank") <= depth).sum().alias("pairs"))
        .group_by("query_id")
        .agg(pl.col("pairs").mean())
    )


def sweep_row(
    dataset: DatasetManifest,
    ranking: RerankResult,
    candidates: CandidateSet,
    depths: list[int],
    measure: str,
    out_dir: str,
    ties: str = "trec",
) -> DepthSet:
    """Per clean query and depth: the headline of the reranked list and the pairs it scored (depths/…)."""
    layout = RunLayout(out_dir)
    scores = pl.read_parquet(layout.sweep_scores(dataset.name, ranking.system)).select(
        *VARIANT, "doc_id", pl.col("score").alias("new")
    )
    cands, qrels = clean_candidates(candidates), open_dataset(dataset).qrels
    frames = []
    for depth in depths:
        head = cands.filter(pl.col("rank") <= depth).join(
            scores, on=[*VARIANT, "doc_id"], how="left", maintain_order="left"
        )
        ranked = rank_part(cands, head["new"].to_numpy(), depth, ties)
        values = per_query_values(qrels, ranked, UNCHANGED, [measure])
        frames.append(
            values.join(pairs_per_query(cands, depth), on="query_id", how="left").select(
                pl.lit(dataset.name).alias("dataset"),
                pl.lit(ranking.system).alias("system"),
                pl.lit(depth).alias("depth"),
                "query_id",
                "value",
                pl.col("pairs").fill_null(0.0),
            )
        )
    path = layout.depths_part(dataset.name, ranking.system)
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.concat(frames).write_parquet(path)
    return DepthSet(system=ranking.system, dataset=dataset.name, path=str(path))
