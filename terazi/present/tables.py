"""The tables people read, built once and shown everywhere (terminal, leaderboard.md, report.html, Prefect
artifacts): human column names, one system order, out-of-ranking datasets marked `*` with their reason, English or
Turkish display labels (terazi.present.labels). Each is a `Table` (terazi.present.table) of text cells.
"""

from __future__ import annotations

import polars as pl

from terazi.present.labels import (
    ci_label,
    condition_label,
    dataset_label,
    interval,
    level,
    params_text,
    percent,
    rate,
    ratio_text,
    score,
    signed,
    size_text,
    speed_text,
    votes,
    word,
)
from terazi.present.table import Table
from terazi.schemas import FIRST_STAGE, EvalConfig
from terazi.schemas.tables import CLEAN


def out_of_ranking_notes(datasets: list) -> list[str]:
    """`* msmarco-tr: out of the ranking (reason)` for each dataset out of the ranking."""
    return [f"* {d.name}: out of the ranking" + (f" ({d.reason})" if d.reason else "") for d in datasets if not d.in_ranking]


def leaderboard(board: pl.DataFrame, conditions: list[str], labels: str, compact: bool = False,
                task_types: int = 2, costs: dict | None = None, confidence: float = 0.95) -> Table:
    """The card's table: group, system, its parameters (with `costs`), Borda rank and votes, Mean (Task) with its
    interval, Mean (TaskType) (only with more than one task type: otherwise it repeats Mean (Task)), the headline
    under each condition, then retention per condition, then size and warm pairs/s (with `costs`: system ->
    ModelCost or None). `compact` (terminal): each condition's score and retention in one cell."""
    corrupted = [c for c in conditions if c != CLEAN and c in board.columns]
    by_type = task_types > 1
    cols = [word("group", labels), word("system", labels)] + ([word("params", labels)] if costs is not None else []) + [
        word("borda_rank", labels), word("borda_votes", labels), word("mean_task", labels), ci_label(labels, confidence)] + (
        [word("mean_task_type", labels)] if by_type else [])
    ret = word("retention", labels)
    if compact:
        cols += [f"{condition_label(c, labels)} ({ret})" for c in corrupted]
    else:
        cols += [condition_label(c, labels) for c in corrupted] + [f"{ret}: {condition_label(c, labels)}" for c in corrupted]
    if costs is not None:
        cols += [word("size", labels), word("speed", labels)]
    rows = []
    for r in board.iter_rows(named=True):
        cost = (costs or {}).get(r["system"])
        row = [str(r["group"]), r["system"]] + ([params_text(cost and cost.params)] if costs is not None else []) + [
            str(r["borda_rank"]), votes(r["borda_votes"]), score(r["mean_task"]),
            interval(r["ci_low"], r["ci_high"], lambda v: score(v, 3))] + ([score(r["mean_task_type"])] if by_type else [])
        if compact:
            row += [f"{score(r[c])} ({percent(r.get(f'{c} retention'), labels)})" for c in corrupted]
        else:
            row += [score(r[c]) for c in corrupted] + [percent(r.get(f"{c} retention"), labels) for c in corrupted]
        if costs is not None:
            row += [size_text(cost and cost.size_bytes), speed_text(cost, labels, short=compact)]
        rows.append(row)
    return Table(cols, rows)


COST_NOTE = ("Param and Size: the model's parameters and its files on disk (the weights, or the ONNX file it runs); "
             "– for BM25 and fusion rows, which have no trained parameters (BM25's term statistics are computed from "
             "the corpus at run time). Pairs/s: warm throughput, timed inside the scoring calls with the model loaded "
             "and warmed up (load, score-cache reads and writes excluded), on the device and precision listed in "
             "costs.csv (and the report's Cost section); for the first stage, texts (queries and documents) encoded "
             "per second; fusion rows score no pairs. 'cached': no pair was scored in this run; the figure is from the "
             "runs that scored them.")


COST_POINTER = ("Param: the model's parameters; – for BM25 and fusion rows, which have no trained parameters. Size, "
                "warm speed and latency per query: the Cost section.")


def costs_table(costs: dict, kinds: dict[str, str], order: list[str], labels: str) -> Table:
    """Per system: what ran where (kind and backend, device, precision, batch), its size, warm throughput and
    latency per query at rerank_depth (each query's candidates scored as one call, model warm)."""
    rows = []
    for s in order:
        c = costs.get(s)
        lat = (lambda v: "–" if v is None else f"{v:.2f}" if v < 10 else f"{v:,.0f}")
        rows.append([s, kinds.get(s, "–"), (c and c.device) or "–", (c and c.precision) or "–",
                     str(c.batch_size) if c and c.batch_size else "–", params_text(c and c.params),
                     size_text(c and c.size_bytes), speed_text(c, labels),
                     lat(c and c.latency_p50_ms), lat(c and c.latency_p95_ms),
                     ("–" if not c or not c.items else f"{c.items} in {c.seconds:.2f}s") + requests_text(c)])
    served = any(c and c.requests for c in costs.values())
    return Table([word("system", labels), "Kind", "Device", "Precision", "Batch", word("params", labels),
                  word("size", labels), word("speed", labels), "p50 ms/query", "p95 ms/query", "Timed"], rows,
                 [COST_NOTE, "p50/p95 ms/query: one query's rerank_depth candidates scored as one call, for up to 20 "
                             "queries after the run's scoring (the first stage: –). Timed: items and seconds inside "
                             "the timer, summed over datasets (and over earlier runs, when cached)."]
                 + ([REQUESTS_NOTE] if served else []))


REQUESTS_NOTE = ("A reranker served over HTTP (device remote; Batch: documents per request) is timed over its "
                 "requests, retries and waits included, and is not probed per query (each probe would be paid for): "
                 "Timed adds its requests answered, the retries (after a 429 or 5xx, a time-out or a dropped "
                 "connection) and each request's round trip, p50/p95 ms.")


def requests_text(c) -> str:
    r = c and c.requests
    if not r:
        return ""
    lat = "" if r.p50_ms is None else f", p50/p95 {r.p50_ms:,.0f}/{r.p95_ms:,.0f} ms per request"
    return f"; {r.requests} requests, {r.retries} retries{lat}"


def variants_table(judgements: list, labels: str, confidence: float = 0.95) -> Table:
    ci = ci_label(labels, confidence)
    rows = []
    for j in judgements:
        b, v = j.base_cost, j.variant_cost
        rows.append([j.variant, j.base, str(j.queries), signed(j.delta), interval(j.low, j.high, signed), j.verdict,
                     ratio_text(b and b.per_second, v and v.per_second, rate) if j.speed_ratio is not None else "–",
                     ratio_text(b and b.size_bytes, v and v.size_bytes, size_text) if j.size_ratio is not None else "–"])
    measure = judgements[0].measure if judgements else "headline"
    return Table([word("variant", labels), word("base", labels), word("queries_n", labels), f"Δ {measure}", ci,
                  word("verdict", labels), f"{word('speed', labels)} (×)", f"{word('size', labels)} (×)"], rows,
                 ["Δ: variant − base on a seeded subset of the clean queries of the ranked datasets, with its paired "
                  "bootstrap interval over those queries; no difference when the interval includes 0. Speed and size: "
                  "base → variant, warm throughput and files on disk as in the cost table."])


def per_dataset(clean: pl.DataFrame, order: list[str], datasets: list, labels: str) -> Table:
    """Headline per system and dataset on clean queries (`clean`: system, dataset, mean), out-of-ranking datasets
    marked `*`; the last row gives each dataset's queries and how many have no relevant document."""
    means = {(r["system"], r["dataset"]): r["mean"] for r in clean.iter_rows(named=True)}
    cols = [word("system", labels)] + [dataset_label(d.name, d.in_ranking) for d in datasets]
    rows = [[s] + [score(means.get((s, d.name))) for d in datasets] for s in order]
    rows.append([word("queries", labels)] + [f"{d.n_queries} ({d.n_queries_without_relevant})" for d in datasets])
    return Table(cols, rows, out_of_ranking_notes(datasets))


def robustness(decomp: pl.DataFrame, order: list[str], conditions: list[str], k: int, labels: str,
               confidence: float = 0.95) -> Table:
    """Per system and condition: end-to-end, reranker-only and first-stage recall@k retention with intervals."""
    has_iso, has_recall = decomp["reranker_only"].is_not_null().any(), decomp["first_stage_recall"].is_not_null().any()
    ci = ci_label(labels, confidence)
    cols = [word("system", labels), word("condition", labels), word("end_to_end", labels), ci]
    cols += [word("reranker_only", labels), ci] if has_iso else []
    cols += [word("recall", labels, k=k), ci] if has_recall else []
    by = {(r["system"], r["condition"]): r for r in decomp.iter_rows(named=True)}
    rows = []
    for s in order:
        for c in conditions:
            r = by.get((s, c))
            if r is None:
                continue
            pc = lambda v: percent(v, labels)  # noqa: E731
            row = [s, condition_label(c, labels), pc(r["end_to_end"]), interval(r["end_to_end_low"], r["end_to_end_high"], pc)]
            if has_iso:
                row += [pc(r["reranker_only"]), interval(r["reranker_only_low"], r["reranker_only_high"], pc)]
            if has_recall:
                row += [pc(r["first_stage_recall"]), interval(r["first_stage_recall_low"], r["first_stage_recall_high"], pc)]
            rows.append(row)
    return Table(cols, rows)


def datasets_table(datasets: list, candidates: list) -> Table:
    """Sizes, ranking membership and fingerprints of every dataset."""
    cand = {c.dataset: c for c in candidates}
    rows = []
    for d in datasets:
        c = cand.get(d.name)
        rows.append([dataset_label(d.name, d.in_ranking), "yes" if d.in_ranking else "no",
                     d.task_type, str(d.n_docs), str(d.n_queries), str(d.n_judgments), str(d.n_queries_without_relevant),
                     d.fingerprint, c.fingerprint if c else "–"])
    return Table(["Dataset", "In ranking", "Task type", "Documents", "Queries", "Judgments", "Queries with no relevant doc.",
                  "Dataset fingerprint", "Candidates fingerprint"], rows,
                 [*out_of_ranking_notes(datasets),
                  "Queries with no relevant document score 0 under the default contract (they lower every system alike)."])


def systems_table(config, candidates: list, reranks: list) -> Table:
    """Every row of the leaderboard with what produced it: kind, model, identity (as the score cache keys it),
    max_length, depth. Without candidates (runs made elsewhere, `terazi analyze`) the rows are the run files."""
    ids: dict[str, set[str]] = {}
    for r in reranks:
        ids.setdefault(r.system, set()).add(r.identity)
    if not candidates:
        return Table(["System", "Kind", "Identity"], [[s, "TREC run", ", ".join(sorted(i))] for s, i in ids.items()],
                     ["Identity: a hash of the system's run files."])
    enc, lexical = config.first_stage.encoder or config.encoder, config.first_stage.kind == "bm25"
    rows = [[FIRST_STAGE, "bm25 first stage" if lexical else "dense first stage", "–" if lexical else enc.model,
             ", ".join(sorted({c.encoder_identity for c in candidates})) or "–",
             "–" if lexical else str(enc.max_length or "model's own"), f"top {config.depth}"]]
    for spec in config.rerankers:
        model = getattr(spec, "model", None) or ("fuses " + " + ".join(spec.fuse) if spec.kind == "rrf" else "–")
        rows.append([spec.name, spec.kind, model, ", ".join(sorted(ids.get(spec.name, ()))) or "–",
                     str(getattr(spec, "max_length", None) or "–"), f"top {config.rerank_depth} reranked"])
    return Table(["System", "Kind", "Model", "Identity", "max_length", "Depth"], rows)


def conditions_table(conditions: pl.DataFrame, labels: str) -> Table:
    """How many queries each condition changed, per dataset."""
    rows = [[r["dataset"], condition_label(r["condition"], labels), str(r["samples"]), str(r["queries"]), str(r["changed"]),
             percent(r["share_changed"], labels), "–" if r.get("edit_rate") is None else f"{r['edit_rate']:.3f}"]
            for r in conditions.iter_rows(named=True)]
    return Table(["Dataset", word("condition", labels), "Samples", "Queries", "Changed", "Share changed",
                  "Edits per letter"], rows,
                 ["Stochastic conditions (typo, mobile, …) draw seeded samples per query; a query's value is the mean "
                  "over its samples. Retention counts only the queries a condition changed. Edits per letter: the "
                  "effective rate, character edits (case ignored) ÷ letters of the originals."])


def pairs_summary_table(summary: pl.DataFrame, correction: str, confidence: float = 0.95) -> Table:
    rows = [[r["system"], r["versus"], str(r["better"]), str(r["no_difference"]), str(r["worse"]),
             "–" if r["mean_significant_delta"] is None else signed(r["mean_significant_delta"])]
            for r in summary.iter_rows(named=True)]
    return Table(["System", "Versus", "Better", "No difference", "Worse", "Mean significant delta"], rows,
                 [f"Cells (dataset × condition) where the first system is significantly better, not different, worse "
                  f"(paired bootstrap, {level(confidence)}). Correction: {correction}."])


def pairs_table(pairs: pl.DataFrame, labels: str, confidence: float = 0.95) -> Table:
    rows = [[r["system"], r["versus"], r["dataset"], condition_label(r["condition"], labels), signed(r["delta"]),
             interval(r["ci_low"], r["ci_high"], signed), f"{r['p_value']:.3f}", r["verdict"]]
            for r in pairs.iter_rows(named=True)]
    return Table(["System", "Versus", "Dataset", word("condition", labels), "Delta", ci_label("en", confidence), "p", "Verdict"], rows,
                 ["Every cell of every pair: delta = first − second on the same queries, with its paired interval."])


def examples(variants: pl.DataFrame, conditions: list[str], k: int = 3) -> Table:
    """Per condition, `k` queries it changed: before and after (first dataset that has them, sample 0)."""
    rows = []
    for c in conditions:
        if c == CLEAN:
            continue
        part = variants.filter((pl.col("condition") == c) & pl.col("changed") & (pl.col("sample") == 0)).head(k)
        rows += [[c, r["dataset"], r["query_id"], r["original"], r["text"]] for r in part.iter_rows(named=True)]
    return Table(["Condition", "Dataset", "Query", "Before", "After"], rows)


def system_kinds(config: EvalConfig) -> dict[str, str]:
    """What produced each row: kind and backend (with quantisation)."""
    out = {FIRST_STAGE: "bm25 first stage (bm25s)" if config.first_stage.kind == "bm25" else "dense first stage (torch)"}
    for spec in config.rerankers:
        backend = getattr(spec, "backend", "torch" if hasattr(spec, "model") else None)
        quant = getattr(spec, "quantization", "none")
        out[spec.name] = spec.kind + (f" ({backend}{' ' + quant if quant != 'none' else ''})" if backend else "")
    return out


def ranks_table(ranks: pl.DataFrame, labels: str, confidence: float = 0.95) -> Table:
    """Each system's rank by Mean (Task) and by Borda count, with its interval and P(rank 1) over the same paired
    bootstrap resamples as every interval (terazi.analysis.ranks), in the leaderboard's order."""
    rng = word("rank_range", labels, level=level(confidence, labels))
    span = lambda lo, hi: f"[{lo}, {hi}]"  # noqa: E731
    rows = [[r["system"], str(r["rank_mean"]), span(r["rank_mean_low"], r["rank_mean_high"]), percent(r["p_rank1_mean"], labels),
             str(r["rank_borda"]), span(r["rank_borda_low"], r["rank_borda_high"]), percent(r["p_rank1_borda"], labels)]
            for r in ranks.iter_rows(named=True)]
    return Table([word("system", labels), word("rank_mean", labels), rng, word("p_rank1", labels), word("rank_borda", labels),
                  rng, word("p_rank1", labels)], rows,
                 [f"In each of the paired bootstrap resamples behind the intervals, the systems ranked by Mean (Task) and by "
                  f"Borda count (tied systems share the better rank); the range is the central {level(confidence)} of a "
                  "system's ranks, P(rank 1) the share of resamples it ranked first. Groups say whether neighbours "
                  "differ; these say where a system stands."])
