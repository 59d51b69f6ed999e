"""The tables of what a run was made of, beside its results (terazi.present.tables): the datasets (sizes, ranking
membership, fingerprints), the systems (what produced each row, where it ran and what it cost) and the conditions
(how many queries each changed, with examples). Each is a `Table` (terazi.present.table) of text cells.
"""

from __future__ import annotations

import polars as pl

from terazi.present.labels import condition_label, dataset_label, params_text, percent, size_text, speed_text, word
from terazi.present.table import Table
from terazi.schemas import FIRST_STAGE, EvalConfig
from terazi.schemas.tables import CLEAN


def out_of_ranking_notes(datasets: list) -> list[str]:
    """`* msmarco-tr: out of the ranking (reason)` for each dataset out of the ranking."""
    return [
        f"* {d.name}: out of the ranking" + (f" ({d.reason})" if d.reason else "") for d in datasets if not d.in_ranking
    ]


def datasets_table(datasets: list, candidates: list) -> Table:
    """Sizes, ranking membership and fingerprints of every dataset."""
    cand = {c.dataset: c for c in candidates}
    rows = []
    for d in datasets:
        c = cand.get(d.name)
        rows.append(
            [
                dataset_label(d.name, d.in_ranking),
                "yes" if d.in_ranking else "no",
                d.task_type,
                str(d.n_docs),
                str(d.n_queries),
                str(d.n_judgments),
                str(d.n_queries_without_relevant),
                d.fingerprint,
                c.fingerprint if c else "–",
            ]
        )
    return Table(
        [
            "Dataset",
            "In ranking",
            "Task type",
            "Documents",
            "Queries",
            "Judgments",
            "Queries with no relevant doc.",
            "Dataset fingerprint",
            "Candidates fingerprint",
        ],
        rows,
        [
            *out_of_ranking_notes(datasets),
            "Queries with no relevant document score 0 under the default contract (they lower every system alike).",
        ],
    )


def systems_table(config, candidates: list, reranks: list) -> Table:
    """Every row of the leaderboard with what produced it: kind, model, identity (as the score cache keys it),
    max_length, depth. Without candidates (runs made elsewhere, `terazi analyze`) the rows are the run files."""
    ids: dict[str, set[str]] = {}
    for r in reranks:
        ids.setdefault(r.system, set()).add(r.identity)
    if not candidates:
        return Table(
            ["System", "Kind", "Identity"],
            [[s, "TREC run", ", ".join(sorted(i))] for s, i in ids.items()],
            ["Identity: a hash of the system's run files."],
        )
    enc, lexical = config.first_stage.encoder or config.encoder, config.first_stage.kind == "bm25"
    rows = [
        [
            FIRST_STAGE,
            "bm25 first stage" if lexical else "dense first stage",
            "–" if lexical else enc.model,
            ", ".join(sorted({c.encoder_identity for c in candidates})) or "–",
            "–" if lexical else str(enc.max_length or "model's own"),
            f"top {config.depth}",
        ]
    ]
    for spec in config.rerankers:
        model = getattr(spec, "model", None) or ("fuses " + " + ".join(spec.fuse) if spec.kind == "rrf" else "–")
        rows.append(
            [
                spec.name,
                spec.kind,
                model,
                ", ".join(sorted(ids.get(spec.name, ()))) or "–",
                str(getattr(spec, "max_length", None) or "–"),
                f"top {config.rerank_depth} reranked",
            ]
        )
    return Table(["System", "Kind", "Model", "Identity", "max_length", "Depth"], rows)


def system_kinds(config: EvalConfig) -> dict[str, str]:
    """What produced each row: kind and backend (with quantisation)."""
    out = {
        FIRST_STAGE: "bm25 first stage (bm25s)" if config.first_stage.kind == "bm25" else "dense first stage (torch)"
    }
    for spec in config.rerankers:
        backend = getattr(spec, "backend", "torch" if hasattr(spec, "model") else None)
        quant = getattr(spec, "quantization", "none")
        out[spec.name] = spec.kind + (f" ({backend}{' ' + quant if quant != 'none' else ''})" if backend else "")
    return out


COST_NOTE = (
    "Param and Size: the model's parameters and its files on disk (the weights, or the ONNX file it runs); "
    "– for BM25 and fusion rows, which have no trained parameters (BM25's term statistics are computed from "
    "the corpus at run time). Pairs/s: warm throughput, timed inside the scoring calls with the model loaded "
    "and warmed up (load, score-cache reads and writes excluded), on the device and precision listed in "
    "costs.csv (and the report's Cost section); for the first stage, texts (queries and documents) encoded "
    "per second; fusion rows score no pairs. 'cached': no pair was scored in this run; the figure is from the "
    "runs that scored them."
)


COST_POINTER = (
    "Param: the model's parameters; – for BM25 and fusion rows, which have no trained parameters. Size, "
    "warm speed and latency per query: the Cost section."
)


def costs_table(costs: dict, kinds: dict[str, str], order: list[str], labels: str) -> Table:
    """Per system: what ran where (kind and backend, device, precision, batch), its size, warm throughput and
    latency per query at rerank_depth (each query's candidates scored as one call, model warm)."""
    rows = []
    for s in order:
        c = costs.get(s)

        def lat(v):
            return "–" if v is None else f"{v:.2f}" if v < 10 else f"{v:,.0f}"

        rows.append(
            [
                s,
                kinds.get(s, "–"),
                (c and c.device) or "–",
                (c and c.precision) or "–",
                str(c.batch_size) if c and c.batch_size else "–",
                params_text(c and c.params),
                size_text(c and c.size_bytes),
                speed_text(c, labels),
                lat(c and c.latency_p50_ms),
                lat(c and c.latency_p95_ms),
                ("–" if not c or not c.items else f"{c.items} in {c.seconds:.2f}s")
                + requests_text(c)
                + listwise_text(c),
            ]
        )
    served = any(c and c.requests for c in costs.values())
    return Table(
        [
            word("system", labels),
            "Kind",
            "Device",
            "Precision",
            "Batch",
            word("params", labels),
            word("size", labels),
            word("speed", labels),
            "p50 ms/query",
            "p95 ms/query",
            "Timed",
        ],
        rows,
        [
            COST_NOTE,
            "p50/p95 ms/query: one query's rerank_depth candidates scored as one call, for up to 20 "
            "queries after the run's scoring (the first stage: –). Timed: items and seconds inside "
            "the timer, summed over datasets (and over earlier runs, when cached).",
        ]
        + ([REQUESTS_NOTE] if served else [])
        + ([LISTWISE_NOTE] if any(c and c.listwise for c in costs.values()) else []),
    )


REQUESTS_NOTE = (
    "A reranker served over HTTP (device remote; Batch: documents per request) is timed over its "
    "requests, retries and waits included, and is not probed per query (each probe would be paid for): "
    "Timed adds its requests answered, the retries (after a 429 or 5xx, a time-out or a dropped "
    "connection) and each request's round trip, p50/p95 ms."
)


def requests_text(c) -> str:
    r = c and c.requests
    if not r:
        return ""
    lat = "" if r.p50_ms is None else f", p50/p95 {r.p50_ms:,.0f}/{r.p95_ms:,.0f} ms per request"
    return f"; {r.requests} requests, {r.retries} retries{lat}"


LISTWISE_NOTE = (
    "A listwise reranker (RankLLM's sliding windows) is timed over the windows it asked for (Timed: the passages in "
    "them); Timed adds its windows (those asked in this run), the answers' prompt and answer tokens, and how many "
    "answers were a whole permutation in the prompt's format (ok), or not: wrong format, repetition, missing "
    "documents, as RankLLM's response analysis counts them."
)
UNUSABLE_SHARE = 0.5  # a listwise row with more answers than this not ok is noted under the leaderboard


def listwise_text(c) -> str:
    a = c and c.listwise
    if not a:
        return ""
    return (
        f"; {a.windows} windows ({a.requests} asked), {a.prompt_tokens:,} prompt + {a.completion_tokens:,} answer "
        f"tokens; {a.ok} ok, {a.wrong_format} wrong format, {a.repetition} repetition, {a.missing_documents} "
        "missing documents"
    )


def unusable_notes(costs: dict, order: list[str]) -> list[str]:
    """A sentence under the leaderboard for each listwise row whose answers were mostly unusable: its order is then
    mostly RankLLM's repair of them (passages not named kept in their first-stage order), not the model's ranking."""
    out = []
    for s in order:
        a = costs.get(s) and costs[s].listwise
        if a and a.windows and a.unusable > UNUSABLE_SHARE:
            out.append(
                f"{s}: {a.windows - a.ok} of {a.windows} window answers ({a.unusable:.0%}) were not a whole "
                f"permutation in the prompt's format ({a.wrong_format} wrong format, {a.repetition} repetition, "
                f"{a.missing_documents} missing documents): its order is mostly the repair of those answers (passages "
                "not named keep their first-stage order), not the model's ranking."
            )
    return out


def conditions_table(conditions: pl.DataFrame, labels: str) -> Table:
    """How many queries each condition changed, per dataset."""
    rows = [
        [
            r["dataset"],
            condition_label(r["condition"], labels),
            str(r["samples"]),
            str(r["queries"]),
            str(r["changed"]),
            percent(r["share_changed"], labels),
            "–" if r.get("edit_rate") is None else f"{r['edit_rate']:.3f}",
        ]
        for r in conditions.iter_rows(named=True)
    ]
    return Table(
        ["Dataset", word("condition", labels), "Samples", "Queries", "Changed", "Share changed", "Edits per letter"],
        rows,
        [
            "Stochastic conditions (typo, mobile, …) draw seeded samples per query; a query's value is the mean "
            "over its samples. Retention counts only the queries a condition changed. Edits per letter: the "
            "effective rate, character edits (case ignored) ÷ letters of the originals."
        ],
    )


def examples(variants: pl.DataFrame, conditions: list[str], k: int = 3) -> Table:
    """Per condition, `k` queries it changed: before and after (first dataset that has them, sample 0)."""
    rows = []
    for c in conditions:
        if c == CLEAN:
            continue
        part = variants.filter((pl.col("condition") == c) & pl.col("changed") & (pl.col("sample") == 0)).head(k)
        rows += [[c, r["dataset"], r["query_id"], r["original"], r["text"]] for r in part.iter_rows(named=True)]
    return Table(["Condition", "Dataset", "Query", "Before", "After"], rows)
