"""The statistics of a run, and every file of its results folder that shows them (all but the runs and the
manifest): per_query.parquet, scores.csv, conditions.csv, retention.csv, retention_datasets.csv, robustness.csv,
leaderboard.csv, comparisons.csv, datasets.csv, ranks.csv, costs.csv, variants.csv, tables.json, leaderboard.md,
report.html (and, with `leakage`, leak_free.csv; with `rerank_depths`, depths.csv and ceiling.csv).

`terazi run` and `terazi analyze` both end here: the per-query values of their systems feed the same leaderboard,
intervals, retention, comparisons and report.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import polars as pl

from terazi.analysis.aggregates import Aggregates
from terazi.analysis.depths import ceiling_table, depth_table
from terazi.analysis.intervals import detectable_differences, pairwise, system_intervals
from terazi.analysis.judged import Judgement, judge_variants
from terazi.analysis.leaderboard import board_of_scores, describe
from terazi.analysis.leak_free import leak_free
from terazi.analysis.ranks import rank_intervals
from terazi.analysis.retention import AGGREGATION_LABELS, decomposition, retention_by_dataset, retention_intervals
from terazi.analysis.summary import cell_means, condition_means, in_order, ranked_datasets
from terazi.data.leaked_queries import read_leaked_queries
from terazi.data.loading import open_dataset, variant_texts
from terazi.metrics.per_query import changed_flags, ranking_values
from terazi.present import report
from terazi.present.display import display_tables
from terazi.present.labels import level
from terazi.present.leakage import leak_free_line
from terazi.present.markdown import leaderboard_markdown
from terazi.present.notes import dropped_line
from terazi.present.setup_tables import system_kinds
from terazi.results.as_mteb import write_mteb_results
from terazi.results.cost_table import costs_frame, system_costs
from terazi.schemas import (
    FIRST_STAGE,
    BenchmarkIdentity,
    CandidateSet,
    DatasetManifest,
    DepthSet,
    EvalConfig,
    LeaderboardRow,
    MetricContract,
    RerankResult,
    ScoreSet,
    VariantSet,
)
from terazi.schemas.layout import RunLayout
from terazi.schemas.tables import CLEAN, END_TO_END, ISOLATED, isolated
from terazi.store import derived
from terazi.store.bootstraps import BootstrapStore, opened

log = logging.getLogger("terazi.aggregate")


def aggregate(
    datasets: list[DatasetManifest],
    variant_sets: list[VariantSet],
    candidates: list[CandidateSet],
    per_query: pl.DataFrame,
    contracts: list[MetricContract],
    config: EvalConfig,
    variants: pl.DataFrame,
    reranks: list[RerankResult],
    depths: list[DepthSet] | None = None,
    cache_dir: str | None = None,
    *,
    known: BootstrapStore | None = None,
    samples: pl.DataFrame | None = None,
) -> tuple[Aggregates, pl.DataFrame]:
    """Every number of the results, in one system order (significance group, then headline), from the headline
    measure's per-query rows (`per_query`; other measures' rows are left out); also the per-dataset retention
    (retention_datasets.csv), which only the files show. `depths`: a depth sweep's per-query values (the
    rerankers' and the first stage's ceiling); `cache_dir`: where intermediates are kept (terazi.store.derived);
    `known`: where intervals computed before are found (terazi.store.bootstraps), passed to every statistic;
    `samples`: the headline's per-sample values of the conditions with several samples (retention's two levels)."""
    conditions = pl.DataFrame(
        [
            {
                "dataset": v.dataset,
                "condition": v.condition,
                "samples": v.samples,
                "queries": v.n_queries,
                "changed": v.n_changed,
                "share_changed": v.share_changed,
                "edit_rate": v.edit_rate,
            }
            for v in variant_sets
        ]
    )
    ranked, names = ranked_datasets(datasets), [d.name for d in datasets]
    stats_args = (config.bootstrap_resamples, config.seed, config.confidence)
    intervals = system_intervals(per_query.filter(pl.col("measure") == config.headline), ranked, config, known=known)
    order = intervals["system"].to_list()
    headline = in_order(per_query.filter(pl.col("measure") == config.headline), order)
    present = set(headline["condition"].unique())
    settings = [*config.conditions, *(c for c in map(isolated, config.conditions[1:]) if c in present)]
    not_first_iso = ~((pl.col("system") == FIRST_STAGE) & (pl.col("setting") == ISOLATED))
    retention = retention_intervals(
        headline, ranked, settings, *stats_args, config.retention, known=known, samples=samples
    ).filter(not_first_iso)
    by_dataset = retention_by_dataset(headline, names, settings).filter(not_first_iso)
    recall_pq = first_stage_recall(datasets, candidates, variants, config.rerank_depth, variant_sets, cache_dir)
    recall = (
        None
        if recall_pq is None
        else retention_intervals(recall_pq, ranked, config.conditions, *stats_args, config.retention, known=known)
    )
    decomp = decomposition(retention, recall)

    end_to_end = retention.filter(pl.col("setting") == END_TO_END)
    board = leaderboard_table(per_query, datasets, config.headline, config.conditions, end_to_end, config.borda)
    board = in_order(
        board.join(intervals.select("system", "group", "ci_low", "ci_high"), on="system", how="left"), order
    )
    front = ["system", "borda_votes", "borda_rank", "group", "mean_task", "ci_low", "ci_high", "mean_task_type"]
    board = board.select(front + [c for c in board.columns if c not in front])
    # the headline's own contract (its gain and relevance threshold), not the first measure's
    c = next((c for c in contracts if c.measure == config.headline), contracts[0]).model_dump()
    contract = {
        "headline": config.headline,
        **{k: v for k, v in c.items() if k not in ("measure", "cutoff")},
        "leaderboard": describe(config.borda),
        "bootstrap": f"{config.bootstrap_resamples} paired resamples balanced by dataset, seed {config.seed}, "
        f"{level(config.confidence)} percentile interval",
        "comparisons": config.contract(),
        "retention": f"{config.retention}: {AGGREGATION_LABELS[config.retention]}; over the queries "
        "each condition changed; its interval from the same bootstrap, resampling the ratio",
        "robustness": "end to end and isolated (reranker only)"
        if decomp["reranker_only"].is_not_null().any()
        else "end to end",
    }
    if (dropped := dropped_line(datasets)) is not None:
        contract["left out of every ranking"] = dropped
    pairs = in_order(pairwise(headline, names, config.conditions, config, known=known), order)
    sizes = [(d.name, d.n_queries, d.n_queries_without_relevant) for d in datasets]
    detectable = pl.DataFrame(sizes, ["dataset", "queries", "no_relevant"], orient="row").join(
        detectable_differences(headline, names, order, config.alpha, known=known), on="dataset", how="left"
    )
    costs = system_costs(candidates, reranks)
    ranks = in_order(rank_intervals(headline, ranked, *stats_args), order)  # the same draws as the intervals
    deco = None
    if config.leakage:  # every headline also without the queries a leakage check found in training data
        excluded = read_leaked_queries(
            config.leakage, config.leakage_by, names, {d.name: d.corpus_fingerprint for d in datasets}
        )
        deco = leak_free(headline, names, ranked, excluded, order, *stats_args)
        contract["excluded"] = leak_free_line(deco, config.leakage, config.leakage_by)
    sweep, ceiling = None, None
    if any(x.system != FIRST_STAGE for x in depths or []):  # a sweep needs a reranker (rerankers: [] has none)
        parts = {
            k: pl.concat([pl.read_parquet(x.path) for x in depths if (x.system == FIRST_STAGE) == k])
            for k in (True, False)
        }
        ceiling = ceiling_table(parts[True], ranked, *stats_args, known=known)
        sweep = depth_table(parts[False], parts[True], ranked, order, costs, *stats_args, known=known)
    agg = Aggregates(
        order=order,
        board=board,
        intervals=intervals,
        retention=retention,
        decomposition=decomp,
        pairs=pairs,
        detectable=detectable,
        clean_means=cell_means(headline.filter(pl.col("condition") == CLEAN)),
        conditions=conditions,
        contract=contract,
        ranks=ranks,
        costs=costs,
        judgements=judge_variants(per_query, ranked, config, costs, known),
        leak_free=deco,
        depths=sweep,
        ceiling=ceiling,
    )
    return agg, by_dataset


def build_leaderboard(
    datasets: list[DatasetManifest],
    variant_sets: list[VariantSet],
    candidates: list[CandidateSet],
    score_sets: list[ScoreSet],
    config: EvalConfig,
    run_dir: str,
    identity: BenchmarkIdentity,
    reranks: list[RerankResult] | None = None,
    depths: list[DepthSet] | None = None,
    cache_dir: str | None = None,
) -> list[LeaderboardRow]:
    """Every file of the results folder but the runs and the manifest: the numbers (csv, parquet), every table as
    text (tables.json), leaderboard.md and report.html; returns the manifest's leaderboard rows. per_query.parquet
    is linked from the cache's stored outputs when its parts are the same as before (terazi.store.derived)."""
    layout, reranks = RunLayout(run_dir), reranks or []
    headline, samples = write_per_query(datasets, score_sets, config, identity, run_dir, cache_dir)
    variants = variant_texts(variant_sets)  # read once: the first stage's changed queries and the examples
    with opened(cache_dir) as known:  # every interval of values seen before is found, not drawn again
        agg, by_dataset = aggregate(
            datasets,
            variant_sets,
            candidates,
            headline,
            score_sets[0].contracts,
            config,
            variants,
            reranks,
            depths,
            cache_dir,
            known=known,
            samples=samples,
        )
    agg.conditions.write_csv(layout.conditions_csv)
    agg.retention.write_csv(layout.retention_csv)
    by_dataset.write_csv(layout.retention_datasets_csv)
    agg.decomposition.write_csv(layout.robustness_csv)
    agg.board.write_csv(layout.leaderboard_csv)
    agg.pairs.write_csv(layout.comparisons_csv)
    agg.detectable.write_csv(layout.datasets_csv)
    agg.ranks.write_csv(layout.ranks_csv)
    if any(agg.costs.values()):
        costs_frame(agg.costs, system_kinds(config), agg.order).write_csv(layout.costs_csv)
    if agg.judgements:
        variants_frame(agg.judgements).write_csv(layout.variants_csv)
    if agg.leak_free is not None:
        agg.leak_free.write_csv(layout.leak_free_csv)
    if agg.depths is not None:
        agg.depths.write_csv(layout.depths_csv)
        agg.ceiling.write_csv(layout.ceiling_csv)
    tables = display_tables(agg, datasets, variants, candidates, reranks, config)
    layout.tables_json.write_text(json.dumps(tables, ensure_ascii=False, indent=1), encoding="utf-8")
    layout.leaderboard_md.write_text(
        leaderboard_markdown(tables, agg.conditions, agg.contract, candidates, identity), encoding="utf-8"
    )
    layout.report_html.write_text(
        report.render(
            title=f"terazi report: {layout.root.name}",
            identity=identity,
            tables=tables,
            agg=agg,
            config=config,
            cache_dir=cache_dir,
        ),
        encoding="utf-8",
    )
    log.info("leaderboard over %d dataset(s) written to %s", len(ranked_datasets(datasets)), layout.root)
    return leaderboard_rows(agg.board, datasets, config.conditions)


def write_per_query(
    datasets: list[DatasetManifest],
    score_sets: list[ScoreSet],
    config: EvalConfig,
    identity: BenchmarkIdentity,
    run_dir: str,
    cache_dir: str | None,
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """per_query.parquet (linked from the cache's stored outputs when its parts are the same as before,
    terazi.store.derived), scores.csv and the MTEB result files, from every system's per-query values; returns the
    headline measure's rows, all that the statistics read, and their samples' values where a condition has several
    (None where none has). One part (one system on one dataset: its cells are the whole
    table's) is held at a time: the table of every system's values never is."""

    def write(root: Path) -> dict:
        pl.concat([pl.scan_parquet(s.path) for s in score_sets]).sink_parquet(RunLayout(root).per_query)
        return {}

    derived.reuse(
        cache_dir, derived.key("per-query-all", [Path(s.path) for s in score_sets], maker=__name__), run_dir, write
    )
    cells, clean, headline, samples = [], [], [], []
    for s in score_sets:
        part = pl.read_parquet(s.path)
        cells.append(cell_means(part))
        clean.append(part.filter(pl.col("condition") == CLEAN))
        headline.append(part.filter(pl.col("measure") == config.headline))
        if (each := RunLayout(run_dir).per_sample_part(s.dataset, s.system)).is_file():
            samples.append(pl.scan_parquet(each).filter(pl.col("measure") == config.headline).collect())
    pl.concat(cells).write_csv(RunLayout(run_dir).scores_csv)
    write_mteb_results(pl.concat(clean), datasets, config.headline, identity, run_dir)
    return pl.concat(headline), pl.concat(samples) if samples else None


def leaderboard_rows(
    board: pl.DataFrame, datasets: list[DatasetManifest], conditions: list[str]
) -> list[LeaderboardRow]:
    """The leaderboard as the manifest records it."""
    cond_cols = [c for c in conditions if c != CLEAN and c in board.columns]
    return [
        LeaderboardRow(
            system=r["system"],
            borda_votes=r["borda_votes"],
            borda_rank=r["borda_rank"],
            mean_task=r["mean_task"],
            mean_task_type=r["mean_task_type"],
            per_dataset={d.name: r[d.name] for d in datasets if r.get(d.name) is not None},
            group=r["group"],
            ci_low=r["ci_low"],
            ci_high=r["ci_high"],
            per_condition={CLEAN: r["mean_task"], **{c: r[c] for c in cond_cols}},
            retention={c: r.get(f"{c} retention") for c in cond_cols},
        )
        for r in board.iter_rows(named=True)
    ]


def leaderboard_table(
    per_query: pl.DataFrame,
    datasets: list[DatasetManifest],
    headline: str,
    conditions: list[str],
    retention: pl.DataFrame,
    borda: str = "per-task",
) -> pl.DataFrame:
    """Wide leaderboard: Borda and means on clean queries, then each condition and its retention."""
    ranked = ranked_datasets(datasets)
    types = {d.name: d.task_type for d in datasets}
    clean = cell_means(per_query.filter((pl.col("condition") == CLEAN) & (pl.col("measure") == headline)))
    long = clean.select(
        "system",
        pl.col("dataset").alias("task"),
        pl.col("dataset").replace_strict(types).alias("task_type"),
        pl.col("mean").alias("score"),
    )
    board = board_of_scores(long, out_of_ranking={d.name for d in datasets if not d.in_ranking}, borda=borda)
    wide = clean.pivot(on="dataset", index="system", values="mean")
    board = board.join(wide, on="system", how="left")
    conds = condition_means(per_query, headline, ranked).filter(
        (pl.col("condition") != CLEAN) & pl.col("condition").is_in(conditions)
    )  # the isolated setting: robustness.csv
    if conds.height:
        board = board.join(conds.pivot(on="condition", index="system", values="mean"), on="system", how="left")
    if retention.height:
        ret_w = retention.pivot(on="condition", index="system", values="retention")
        ret_w = ret_w.rename({c: f"{c} retention" for c in ret_w.columns if c != "system"})
        board = board.join(ret_w, on="system", how="left")
    ordered = [c for cond in conditions if cond != CLEAN for c in (cond, f"{cond} retention") if c in board.columns]
    return board.select([c for c in board.columns if c not in ordered] + ordered)


def first_stage_recall(
    datasets: list[DatasetManifest],
    candidates: list[CandidateSet],
    variants: pl.DataFrame,
    k: int,
    variant_sets: list[VariantSet] = (),
    cache_dir: str | None = None,
) -> pl.DataFrame | None:
    """Per-query recall@k of the frozen first-stage candidates (the pool every reranker reorders), end to end;
    `variants`: the query variants of every dataset (`variant_texts`), read from `variant_sets`. Kept in the cache's
    stored outputs per candidate set, dataset and variant files; the candidates are read a block at a time."""
    by_name = {c.dataset: c for c in candidates}
    frames = []
    for d in datasets:
        if d.name not in by_name:
            continue
        mine = variants.filter(pl.col("dataset") == d.name)

        def make(d: DatasetManifest = d, mine: pl.DataFrame = mine) -> pl.DataFrame:
            values = ranking_values(open_dataset(d).qrels, by_name[d.name].path, changed_flags(mine), [f"R@{k}"]).rows()
            return values.select(pl.lit(d.name).alias("dataset"), pl.lit(FIRST_STAGE).alias("system"), pl.all())

        key = derived.key(
            "first-stage-recall",
            d.name,
            d.fingerprint,
            k,
            Path(by_name[d.name].path),
            sorted(Path(v.path) for v in variant_sets if v.dataset == d.name),
            maker=__name__,
        )
        frames.append(derived.table(cache_dir, key, make))
    return pl.concat(frames) if frames else None


def variants_frame(judgements: list[Judgement]) -> pl.DataFrame:
    """variants.csv: the judged pairs, full precision."""
    return pl.DataFrame(
        [
            {
                "variant": j.variant,
                "base": j.base,
                "label": j.label,
                "measure": j.measure,
                "queries": j.queries,
                "delta": j.delta,
                "ci_low": j.low,
                "ci_high": j.high,
                "verdict": j.verdict,
                "speed_ratio": j.speed_ratio,
                "size_ratio": j.size_ratio,
                "equivalence_margin": j.margin,
            }
            for j in judgements
        ]
    )
