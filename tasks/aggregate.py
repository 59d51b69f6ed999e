"""Stage 6: the leaderboard, written as files (csv, md, parquet) and published as Prefect artifacts."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import polars as pl
from prefect import task

from terazi.schemas import (
    FIRST_STAGE,
    BenchmarkIdentity,
    CandidateSet,
    DatasetManifest,
    EvalConfig,
    LeaderboardRow,
    RerankResult,
    ScoreSet,
    VariantSet,
)
from terazi.tasks import transient
from terazi.data.loading import open_dataset
from terazi.tasks.score import changed_flags, per_query_values
from terazi.analysis import intervals as analysis
from terazi.models import costs
from terazi.analysis import leaderboard
from terazi.present import tables as presentation
from terazi.present import report
from terazi.analysis import summary
from terazi.analysis import judged
from terazi.retrieval.isolated import isolated

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
    conds = summary.condition_means(per_query, headline, ranked).filter(
        (pl.col("condition") != "clean") & pl.col("condition").is_in(conditions))  # the isolated setting: robustness.csv
    if conds.height:
        board = board.join(conds.pivot(on="condition", index="system", values="mean"), on="system", how="left")
    if retention.height:
        ret_w = retention.pivot(on="condition", index="system", values="retention")
        ret_w = ret_w.rename({c: f"{c} retention" for c in ret_w.columns if c != "system"})
        board = board.join(ret_w, on="system", how="left")
    ordered = [c for cond in conditions if cond != "clean" for c in (cond, f"{cond} retention") if c in board.columns]
    return board.select([c for c in board.columns if c not in ordered] + ordered)


def in_order(df: pl.DataFrame, order: list[str], column: str = "system") -> pl.DataFrame:
    """Rows sorted by the leaderboard's system order (stable within a system)."""
    rank = {s: i for i, s in enumerate(order)}
    return df.with_columns(pl.col(column).replace_strict(rank, default=len(order), return_dtype=pl.Int64).alias("_o")) \
        .sort("_o", maintain_order=True).drop("_o")


def first_stage_recall(datasets: list[DatasetManifest], candidates: list[CandidateSet], variants: pl.DataFrame,
                       k: int) -> pl.DataFrame | None:
    """Per-query recall@k of the frozen first-stage candidates (the pool every reranker reorders), end to end;
    `variants`: the query variants of every dataset (`variant_texts`)."""
    by_name = {c.dataset: c for c in candidates}
    frames = []
    for d in datasets:
        if d.name not in by_name:
            continue
        changed = changed_flags(variants.filter(pl.col("dataset") == d.name))
        values = per_query_values(open_dataset(d).qrels, pl.read_parquet(by_name[d.name].path), changed, [f"R@{k}"])
        frames.append(values.select(pl.lit(d.name).alias("dataset"), pl.lit(FIRST_STAGE).alias("system"), pl.all()))
    return pl.concat(frames) if frames else None


def system_costs(candidates: list[CandidateSet], reranks: list[RerankResult]) -> dict:
    """Per system, its cost over the datasets (costs.combine); the first stage's from the frozen
    candidates (cached when they were reused)."""
    first = [c.cost.model_copy(update={"cached": True}) if c.reused and c.cost else c.cost for c in candidates]
    by: dict[str, list] = {FIRST_STAGE: first}
    for r in reranks:
        if r.system != FIRST_STAGE:
            by.setdefault(r.system, []).append(r.cost)
    return {s: costs.combine(cs) for s, cs in by.items()}


def system_kinds(config: EvalConfig) -> dict[str, str]:
    """What produced each row: kind and backend (with quantisation)."""
    out = {FIRST_STAGE: "dense first stage (torch)"}
    for spec in config.rerankers:
        backend = getattr(spec, "backend", "torch" if hasattr(spec, "model") else None)
        quant = getattr(spec, "quantization", "none")
        out[spec.name] = spec.kind + (f" ({backend}{' ' + quant if quant != 'none' else ''})" if backend else "")
    return out


def costs_frame(costs: dict, kinds: dict[str, str], order: list[str]) -> pl.DataFrame:
    """costs.csv: one row per system, full precision."""
    rows = []
    for s in order:
        c = costs.get(s)
        rows.append({"system": s, "kind": kinds.get(s), "params": c and c.params, "size_bytes": c and c.size_bytes,
                     "device": c and c.device, "precision": c and c.precision, "batch_size": c and c.batch_size,
                     "unit": c and c.unit, "items": c and c.items, "seconds": c and c.seconds,
                     "per_second": c and c.per_second, "latency_p50_ms": c and c.latency_p50_ms,
                     "latency_p95_ms": c and c.latency_p95_ms, "cached": c and c.cached})
    return pl.DataFrame(rows, schema={"system": pl.Utf8, "kind": pl.Utf8, "params": pl.Int64, "size_bytes": pl.Int64,
                                      "device": pl.Utf8, "precision": pl.Utf8, "batch_size": pl.Int64, "unit": pl.Utf8,
                                      "items": pl.Int64, "seconds": pl.Float64, "per_second": pl.Float64,
                                      "latency_p50_ms": pl.Float64, "latency_p95_ms": pl.Float64, "cached": pl.Boolean})


def judge_variants(per_query: pl.DataFrame, ranked: list[str], config: EvalConfig, costs: dict) -> list[judged.Judgement]:
    return [judged.judge(per_query, v.base, v.variant, config.headline, ranked, config.subset, config.seed,
                         config.bootstrap_resamples, config.confidence, v.label, costs) for v in config.variants]


def variants_frame(judgements: list[judged.Judgement]) -> pl.DataFrame:
    """variants.csv: the judged pairs, full precision."""
    return pl.DataFrame([{"variant": j.variant, "base": j.base, "label": j.label, "measure": j.measure,
                          "queries": j.queries, "delta": j.delta, "ci_low": j.low, "ci_high": j.high, "verdict": j.verdict,
                          "speed_ratio": j.speed_ratio, "size_ratio": j.size_ratio} for j in judgements])


def featured_system(config: EvalConfig, order: list[str]) -> str:
    return config.featured if config.featured in order else order[0]


def display_tables(board: pl.DataFrame, clean_means: pl.DataFrame, decomp: pl.DataFrame, pairs: pl.DataFrame,
                   order: list[str], datasets: list[DatasetManifest], variants: pl.DataFrame,
                   candidates: list[CandidateSet], reranks: list[RerankResult], config: EvalConfig,
                   costs: dict | None = None, judgements: list | None = None) -> dict:
    """Every table of the outputs, as text in the leaderboard's order and the configured labels (tables.json)."""
    labels, conds = config.labels, [c for c in config.conditions if c != "clean"]
    n_types = len({d.task_type for d in datasets if d.name in ranked_datasets(datasets)})
    featured = featured_system(config, order)
    cells = analysis.featured_cells(pairs, featured)
    legend = [
        "Rows: significance group (1 = top; a system shares its upper neighbour's group unless their paired bootstrap "
        f"difference on clean queries excludes 0), then Mean (Task). Mean (Task): {config.headline} on clean queries, "
        f"mean over ranked datasets, with its {presentation.level(config.confidence)} interval (paired bootstrap balanced by dataset). "
        "Borda rank and votes: "
        "per ranked dataset, points = N − rank; ranked by total points."
        + ("" if n_types > 1 else " Mean (TaskType) is not shown: with one task type it equals Mean (Task)."),
        "Condition columns: dataset-balanced means over ranked datasets. Retention: over the queries each condition "
        "changed, end to end (" + ("corrupted query through first stage and reranker" if candidates else
                                   "each condition's run files against the clean ones") + f"); {config.retention}: "
        + analysis.AGGREGATION_LABELS[config.retention] + ".",
        *presentation.out_of_ranking_notes(datasets),
    ]
    shown = costs if costs and any(costs.values()) else None  # runs analysed from files carry no costs
    legend += [presentation.COST_NOTE] if shown else []
    level = config.confidence
    board_t = presentation.leaderboard(board, config.conditions, labels, task_types=n_types, costs=shown, confidence=level)
    board_t.notes = legend
    compact = presentation.leaderboard(board, config.conditions, labels, compact=True, task_types=n_types, costs=shown,
                                       confidence=level)
    compact.notes = legend
    robust = presentation.robustness(decomp, order, conds, config.rerank_depth, labels, level)
    # said of what was measured: runs made elsewhere (`terazi analyze`, no candidates) have no reranker-only
    # setting and no first stage of terazi's
    has_iso, has_recall = (decomp[c].is_not_null().any() for c in ("reranker_only", "first_stage_recall"))
    robust.notes = [
        ("End to end: the corrupted query goes through the first stage and the reranker (the card's setting). "
         if candidates else "End to end: each condition's run files against the clean ones. ")
        + ("Reranker only: the reranker reorders the clean query's frozen candidates using the corrupted text. "
           if has_iso else "Reranker only: not run (robustness: end-to-end). " if candidates else "")
        + (f"First-stage recall@{config.rerank_depth}: retention of the share of relevant documents among the "
           "candidates every reranker reorders. " if has_recall else "")
        + f"Each over the queries the condition changed, aggregated {config.retention} "
        f"({analysis.AGGREGATION_LABELS[config.retention]})."]
    return {
        "headline": config.headline, "order": order, "labels": labels, "retention": config.retention,
        "robustness": "both" if has_iso else "end-to-end", "first_stage": bool(candidates),
        "leaderboard": board_t.to_json(), "leaderboard_compact": compact.to_json(),
        "per_dataset": presentation.per_dataset(clean_means, order, datasets, labels).to_json(),
        "robustness_table": robust.to_json(),
        "explanations": presentation.explain(decomp, order, conds, config.rerank_depth, FIRST_STAGE),
        "featured": {"system": featured, "lines": presentation.featured_lines(
            cells, featured, config.conditions, [d.name for d in datasets], labels, [s for s in order if s != featured])},
        "datasets": presentation.datasets_table(datasets, candidates).to_json(),
        "systems": presentation.systems_table(config, candidates, reranks).to_json(),
        "examples": presentation.examples(variants, config.conditions).to_json(),
        "costs": presentation.costs_table(shown, system_kinds(config), order, labels).to_json() if shown else None,
        "variants": {"sentences": [presentation.variant_sentence(j, labels, level) for j in judgements],
                     "table": presentation.variants_table(judgements, labels, level).to_json()} if judgements else None,
    }


def markdown(tables: dict, conditions: pl.DataFrame, contract: dict, candidates: list[CandidateSet],
             identity: BenchmarkIdentity) -> str:
    T = presentation.Table.from_json
    featured = tables["featured"]
    lines = [f"# terazi leaderboard: {tables['headline']}", "",
             f"Benchmark `{identity.name}`, fingerprint `{identity.fingerprint}` ("
             + ("hash of every dataset's frozen candidates)." if candidates else
                "hash of the judgments and the changed queries; the systems are TREC runs made elsewhere)."), "",
             T(tables["leaderboard"]).markdown(), "",
             f"## Per dataset ({presentation.condition_label('clean', tables['labels'])})", "",
             T(tables["per_dataset"]).markdown(), "",
             "## Where the loss comes from", "", T(tables["robustness_table"]).markdown(), ""]
    lines += [f"- {e}" for e in tables["explanations"]] + ([""] if tables["explanations"] else [])
    lines += [f"## Significant cells: {featured['system']}", ""] + [f"- {x}" for x in featured["lines"]]
    if tables.get("variants"):
        lines += ["", "## Judged variants", ""] + [f"- {x}" for x in tables["variants"]["sentences"]]
        lines += ["", T(tables["variants"]["table"]).markdown()]
    if tables.get("costs"):
        lines += ["", "## Cost", "", T(tables["costs"]).markdown()]
    lines += ["", "## Datasets", "", T(tables["datasets"]).markdown(), "", "## Systems", "", T(tables["systems"]).markdown(),
              "", "## Conditions", "", presentation.conditions_table(conditions, tables["labels"]).markdown()]
    lines += ["", "Examples, before and after:", "", T(tables["examples"]).markdown()]
    lines += ["", "## First stage", ""]
    lines += [f"- {c.dataset}: candidates `{c.fingerprint}` ({c.encoder}, {c.index.get('type')}, depth {c.depth}); "
              f"recall@{c.depth} " + ", ".join(f"{k} {v:.3f}" for k, v in c.recall.items()) for c in candidates]
    lines += ["", "## Metric contract", ""] + [f"- {k}: {v}" for k, v in contract.items()]
    return "\n".join(lines) + "\n"


def variant_texts(variant_sets: list[VariantSet]) -> pl.DataFrame:
    """The query variants with their texts (none for runs imported from TREC files, which carry no texts)."""
    frames = [pl.read_parquet(v.path).with_columns(pl.lit(v.dataset).alias("dataset")) for v in variant_sets
              if v.path.endswith(".parquet") and Path(v.path).is_file()]
    return pl.concat(frames) if frames else pl.DataFrame(schema={
        "condition": pl.Utf8, "sample": pl.Int64, "query_id": pl.Utf8, "text": pl.Utf8, "original": pl.Utf8,
        "changed": pl.Boolean, "dataset": pl.Utf8})


def build_leaderboard(datasets: list[DatasetManifest], variant_sets: list[VariantSet], candidates: list[CandidateSet],
                      score_sets: list[ScoreSet], config: EvalConfig, run_dir: str,
                      identity: BenchmarkIdentity, reranks: list[RerankResult] | None = None) -> list[LeaderboardRow]:
    """Every table of the results folder, in one system order (significance group, then headline)."""
    run = Path(run_dir)
    per_query = pl.concat([pl.read_parquet(s.path) for s in score_sets])
    per_query.write_parquet(run / "per_query.parquet")
    summary.cell_means(per_query).write_csv(run / "scores.csv")
    conditions = pl.DataFrame([{"dataset": v.dataset, "condition": v.condition, "samples": v.samples,
                                "queries": v.n_queries, "changed": v.n_changed, "share_changed": v.share_changed,
                                "edit_rate": v.edit_rate}
                               for v in variant_sets])
    conditions.write_csv(run / "conditions.csv")
    ranked, names = ranked_datasets(datasets), [d.name for d in datasets]
    stats_args = (config.bootstrap_resamples, config.seed, config.confidence)
    intervals = analysis.system_intervals(per_query.filter(pl.col("measure") == config.headline), ranked, *stats_args)
    order = intervals["system"].to_list()
    headline = in_order(per_query.filter(pl.col("measure") == config.headline), order)
    present = set(headline["condition"].unique())
    settings = [*config.conditions, *(c for c in map(isolated, config.conditions[1:]) if c in present)]
    not_first_iso = ~((pl.col("system") == FIRST_STAGE) & (pl.col("setting") == analysis.ISOLATED))
    retention = analysis.retention_intervals(headline, ranked, settings, *stats_args, config.retention).filter(not_first_iso)
    retention.write_csv(run / "retention.csv")
    analysis.retention_by_dataset(headline, names, settings).filter(not_first_iso).write_csv(run / "retention_datasets.csv")
    variants = variant_texts(variant_sets)  # read once: the first stage's changed queries and the examples
    recall_pq = first_stage_recall(datasets, candidates, variants, config.rerank_depth)
    recall = None if recall_pq is None else analysis.retention_intervals(recall_pq, ranked, config.conditions, *stats_args,
                                                                          config.retention)
    decomp = analysis.decomposition(retention, recall)
    decomp.write_csv(run / "robustness.csv")

    end_to_end = retention.filter(pl.col("setting") == analysis.END_TO_END)
    board = leaderboard_table(per_query, datasets, config.headline, config.conditions, end_to_end, config.borda)
    board = in_order(board.join(intervals.select("system", "group", "ci_low", "ci_high"), on="system", how="left"), order)
    front = ["system", "borda_votes", "borda_rank", "group", "mean_task", "ci_low", "ci_high", "mean_task_type"]
    board = board.select(front + [c for c in board.columns if c not in front])
    board.write_csv(run / "leaderboard.csv")
    # the headline's own contract (its gain and relevance threshold), not the first measure's
    c = next((c for c in score_sets[0].contracts if c.measure == config.headline), score_sets[0].contracts[0]).model_dump()
    contract = {"headline": config.headline, **{k: v for k, v in c.items() if k not in ("measure", "cutoff")},
                "leaderboard": leaderboard.describe(config.borda),
                "bootstrap": f"{config.bootstrap_resamples} paired resamples balanced by dataset, seed {config.seed}, "
                             f"{presentation.level(config.confidence)} percentile interval",
                "retention": f"{config.retention}: {analysis.AGGREGATION_LABELS[config.retention]}; over the queries "
                             "each condition changed; its interval from the same bootstrap, resampling the ratio",
                "robustness": "end to end and isolated (reranker only)"
                              if decomp["reranker_only"].is_not_null().any() else "end to end"}

    pairs = in_order(analysis.pairwise(headline, names, config.conditions, *stats_args, correct=config.holm), order)
    pairs.write_csv(run / "comparisons.csv")
    clean_means = summary.cell_means(headline.filter(pl.col("condition") == "clean"))
    costs = system_costs(candidates, reranks or [])
    if any(costs.values()):
        costs_frame(costs, system_kinds(config), order).write_csv(run / "costs.csv")
    judgements = judge_variants(per_query, ranked, config, costs)
    if judgements:
        variants_frame(judgements).write_csv(run / "variants.csv")
    tables = display_tables(board, clean_means, decomp, pairs, order, datasets, variants, candidates, reranks or [], config,
                            costs, judgements)
    (run / "tables.json").write_text(json.dumps(tables, ensure_ascii=False, indent=1), encoding="utf-8")
    (run / "leaderboard.md").write_text(markdown(tables, conditions, contract, candidates, identity), encoding="utf-8")
    page = report.render(title=f"terazi report: {run.name}", identity=identity, tables=tables, intervals=intervals,
                         retention=retention, pair_summary=analysis.pairwise_summary(pairs), pairs=pairs,
                         conditions=conditions, contract=contract, config=config,
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


def publish(run_dir: str, prefix: str) -> None:
    """The results as Prefect artifacts of the run: the leaderboard as the outputs show it (order, labels, `*`
    marks), the robustness decomposition, comparisons, and the markdown report saying where report.html is.
    Keys start with `prefix` (the benchmark)."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    run = Path(run_dir)
    tables = json.loads((run / "tables.json").read_text(encoding="utf-8"))
    # the terminal's compact form (each condition's score and retention in one cell): the wide one does not fit
    # Prefect's table on a 1920-pixel screen
    board = presentation.Table.from_json(tables.get("leaderboard_compact") or tables["leaderboard"])
    create_table_artifact(table=board.dicts(), key=f"{prefix}-leaderboard",
                          description=f"terazi leaderboard ({run}). " + " ".join(board.notes))
    robust = presentation.Table.from_json(tables["robustness_table"])
    create_table_artifact(table=robust.dicts(), key=f"{prefix}-retention",
                          description="retention per system and condition, end to end, reranker only and first-stage "
                                      "recall. " + " ".join(robust.notes))
    per_ds = presentation.Table.from_json(tables["per_dataset"])
    create_table_artifact(table=per_ds.dicts(), key=f"{prefix}-per-dataset",
                          description="headline per system and dataset on clean queries; last row: queries (without a "
                                      "relevant document). " + " ".join(per_ds.notes))
    if tables.get("costs"):
        costs = presentation.Table.from_json(tables["costs"])
        create_table_artifact(table=costs.dicts(), key=f"{prefix}-costs",
                              description="size, warm speed and latency per system. " + " ".join(costs.notes))
    if tables.get("variants"):
        judged_t = presentation.Table.from_json(tables["variants"]["table"])
        create_table_artifact(table=judged_t.dicts(), key=f"{prefix}-variants",
                              description=" ".join(tables["variants"]["sentences"] + judged_t.notes))
    pairs = analysis.pairwise_summary(pl.read_csv(run / "comparisons.csv"))
    create_table_artifact(table=pairs.to_dicts(), key=f"{prefix}-comparisons",
                          description="pairwise comparisons: cells better / no difference / worse")
    report_md = (run / "leaderboard.md").read_text(encoding="utf-8") + (
        f"\n## Files\n\n- full report: `{run / 'report.html'}` (open it in a browser)\n- results folder: `{run}`\n")
    create_markdown_artifact(markdown=report_md, key=f"{prefix}-report",
                             description="leaderboard, conditions, metric contract and where report.html is")


aggregate_task = task(build_leaderboard, name="leaderboard", retries=1, task_run_name="leaderboard", retry_condition_fn=transient)
