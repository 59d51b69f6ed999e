"""Stage 6: the leaderboard, written as files (csv, md, parquet) and published as Prefect artifacts."""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl
from prefect import task

from schemas import CandidateSet, DatasetManifest, EvalConfig, LeaderboardRow, ScoreSet, VariantSet
from terazi import analysis, leaderboard, report, summary

log = logging.getLogger("terazi.aggregate")


def ranked_datasets(datasets: list[DatasetManifest]) -> list[str]:
    """Datasets in the ranking (all of them if every one was marked out)."""
    return [d.name for d in datasets if d.in_ranking] or [d.name for d in datasets]


def leaderboard_table(per_query: pl.DataFrame, datasets: list[DatasetManifest], headline: str,
                      conditions: list[str], retention: pl.DataFrame, borda: str = "per-task") -> pl.DataFrame:
    """Wide leaderboard: Borda and means on clean queries, then each condition and its retention."""
    ranked = ranked_datasets(datasets)
    types = {d.name: d.task_type for d in datasets}
    clean = summary.cell_means(per_query.filter((pl.col("condition") == "clean") & (pl.col("measure") == headline)))
    long = clean.select("system", pl.col("dataset").alias("task"),
                        pl.col("dataset").replace_strict(types).alias("task_type"), pl.col("mean").alias("score"))
    board = leaderboard.aggregate(long, out_of_ranking={d.name for d in datasets if not d.in_ranking}, borda=borda)
    wide = clean.pivot(on="dataset", index="system", values="mean")
    board = board.join(wide, on="system", how="left")
    conds = summary.condition_means(per_query, headline, ranked).filter(pl.col("condition") != "clean")
    if conds.height:
        board = board.join(conds.pivot(on="condition", index="system", values="mean"), on="system", how="left")
    if retention.height:
        ret_w = retention.pivot(on="condition", index="system", values="retention")
        ret_w = ret_w.rename({c: f"{c} retention" for c in ret_w.columns if c != "system"})
        board = board.join(ret_w, on="system", how="left")
    ordered = [c for cond in conditions if cond != "clean" for c in (cond, f"{cond} retention") if c in board.columns]
    return board.select([c for c in board.columns if c not in ordered] + ordered)


def markdown(board: pl.DataFrame, headline: str, conditions: pl.DataFrame, contract: dict,
             candidates: list[CandidateSet]) -> str:
    cols = [c for c in board.columns if c not in ("mean_task_complete", "mean_task_type_complete", "tasks", "ci_low", "ci_high")]
    fmt = report.fmt
    lines = [f"# terazi leaderboard: {headline}", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r[c]) for c in cols) + " |" for r in board.iter_rows(named=True)]
    lines += ["", "Borda count and means over datasets in the ranking, clean queries; condition columns are "
              "dataset-balanced means; retention = corrupted / clean over the queries a condition changed.", "",
              "## Conditions", "", "| dataset | condition | samples | queries | changed | share changed |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {r['dataset']} | {r['condition']} | {r['samples']} | {r['queries']} | {r['changed']} | {r['share_changed']:.1%} |"
              for r in conditions.iter_rows(named=True)]
    lines += ["", "## First stage", ""]
    lines += [f"- {c.dataset}: candidates `{c.fingerprint}` ({c.encoder}, {c.index.get('type')}, depth {c.depth}); "
              f"recall@{c.depth} " + ", ".join(f"{k} {v:.3f}" for k, v in c.recall.items()) for c in candidates]
    lines += ["", "## Metric contract", ""] + [f"- {k}: {v}" for k, v in contract.items()]
    return "\n".join(lines) + "\n"


def build_leaderboard(datasets: list[DatasetManifest], variant_sets: list[VariantSet], candidates: list[CandidateSet],
                      score_sets: list[ScoreSet], config: EvalConfig, run_dir: str) -> list[LeaderboardRow]:
    run = Path(run_dir)
    per_query = pl.concat([pl.read_parquet(s.path) for s in score_sets])
    per_query.write_parquet(run / "per_query.parquet")
    summary.cell_means(per_query).write_csv(run / "scores.csv")
    conditions = pl.DataFrame([{"dataset": v.dataset, "condition": v.condition, "samples": v.samples,
                                "queries": v.n_queries, "changed": v.n_changed, "share_changed": v.share_changed}
                               for v in variant_sets])
    conditions.write_csv(run / "conditions.csv")
    ranked = ranked_datasets(datasets)
    headline = per_query.filter(pl.col("measure") == config.headline)
    stats_args = (config.bootstrap_resamples, config.seed, config.confidence)
    intervals = analysis.system_intervals(headline, ranked, *stats_args)
    retention = analysis.retention_intervals(headline, ranked, config.conditions, *stats_args)
    retention.write_csv(run / "retention.csv")
    board = leaderboard_table(per_query, datasets, config.headline, config.conditions, retention, config.borda)
    board = board.join(intervals.select("system", "group", "ci_low", "ci_high"), on="system", how="left")
    front = ["system", "borda_votes", "borda_rank", "group", "mean_task", "ci_low", "ci_high", "mean_task_type"]
    board = board.select(front + [c for c in board.columns if c not in front])
    board.write_csv(run / "leaderboard.csv")
    c = score_sets[0].contracts[0].model_dump()
    contract = {"headline": config.headline, **{k: v for k, v in c.items() if k not in ("measure", "cutoff")},
                "leaderboard": leaderboard.describe(config.borda),
                "bootstrap": f"{config.bootstrap_resamples} paired resamples balanced by dataset, seed {config.seed}, "
                             f"{config.confidence:.0%} percentile interval"}
    (run / "leaderboard.md").write_text(markdown(board, config.headline, conditions, contract, candidates))

    pairs = analysis.pairwise(headline, [d.name for d in datasets], config.conditions, *stats_args, correct=config.holm)
    pairs.write_csv(run / "comparisons.csv")
    pair_summary = analysis.pairwise_summary(pairs)
    per_dataset = summary.cell_means(headline).pivot(on="condition", index=["dataset", "system"], values="mean") \
        .sort("dataset", "system")
    per_dataset = per_dataset.select("dataset", "system", *[c for c in config.conditions if c in per_dataset.columns])
    page = report.render(title=f"terazi report: {run.name}", headline=config.headline,
                         board=board.drop("mean_task_complete", "mean_task_type_complete", "tasks"), intervals=intervals,
                         per_dataset=per_dataset, retention=retention, pair_summary=pair_summary, pairs=pairs,
                         conditions=conditions, contract=contract,
                         correction="Holm across each pair's cells" if config.holm else "none")
    (run / "report.html").write_text(page, encoding="utf-8")

    cond_cols = [c for c in config.conditions if c != "clean" and c in board.columns]
    rows = []
    for r in board.iter_rows(named=True):
        rows.append(LeaderboardRow(
            system=r["system"], borda_votes=r["borda_votes"], borda_rank=r["borda_rank"], mean_task=r["mean_task"],
            mean_task_type=r["mean_task_type"], per_dataset={d.name: r[d.name] for d in datasets if r.get(d.name) is not None},
            group=r["group"], ci_low=r["ci_low"], ci_high=r["ci_high"],
            per_condition={"clean": r["mean_task"], **{c: r[c] for c in cond_cols}},
            retention={c: r.get(f"{c} retention") for c in cond_cols}))
    log.info("leaderboard over %d dataset(s) written to %s", len(ranked), run)
    return rows


def publish(board_rows: list[LeaderboardRow], run_dir: str) -> None:
    """The leaderboard as a Prefect table artifact and the markdown report as a markdown artifact."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    table = [{"rank": r.borda_rank, "system": r.system, "borda": r.borda_votes, "group": r.group,
              "mean_task": None if r.mean_task is None else round(r.mean_task, 4),
              **{k: round(v, 4) for k, v in r.per_condition.items() if v is not None},
              **{f"{k} retention": round(v, 4) for k, v in r.retention.items() if v is not None}} for r in board_rows]
    create_table_artifact(table=table, key="terazi-leaderboard", description=f"terazi leaderboard ({run_dir})")
    run = Path(run_dir)
    retention = pl.read_csv(run / "retention.csv")
    create_table_artifact(table=retention.to_dicts(), key="terazi-retention",
                          description="retention per system and condition, over the queries each condition changed")
    pairs = analysis.pairwise_summary(pl.read_csv(run / "comparisons.csv"))
    create_table_artifact(table=pairs.to_dicts(), key="terazi-comparisons",
                          description="pairwise comparisons: cells better / no difference / worse")
    create_markdown_artifact(markdown=(run / "leaderboard.md").read_text(), key="terazi-report",
                             description="leaderboard, conditions and metric contract")


aggregate_task = task(build_leaderboard, name="leaderboard", retries=1, task_run_name="leaderboard")
publish_task = task(publish, name="publish-artifacts", retries=2, retry_delay_seconds=2)
