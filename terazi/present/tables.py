"""The tables people read, built once and shown everywhere (terminal, leaderboard.md, report.html, Prefect
artifacts): human column names, one system order, out-of-ranking datasets marked `*` with their reason,
English or Turkish display labels (the Kalbur card's Temiz, BÜYÜK HARF, …, Koruma).

Numbers stay full precision in the CSV and parquet files; these tables are text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from terazi.schemas import FIRST_STAGE, EvalConfig

TR_CONDITIONS = {"clean": "Temiz", "upper": "BÜYÜK HARF", "ascii_full": "Türkçe karaktersiz",
                 "ascii_partial": "Kısmen karaktersiz", "mobile": "Mobil", "typo": "Yazım hatası",
                 "colloquial": "Gündelik yazım"}
WORDS = {
    "en": {"group": "Group", "system": "System", "borda_rank": "Borda rank", "borda_votes": "Borda votes",
           "ci": "{level} CI", "retention": "Retention", "end_to_end": "End to end", "reranker_only": "Reranker only",
           "recall": "First-stage recall@{k}", "condition": "Condition", "queries": "queries (no relevant doc.)",
           "better": "significantly better", "worse": "significantly worse", "none": "none",
           "same": "no difference in {n} of {total} cells", "params": "Param", "size": "Size", "speed": "Pairs/s",
           "cached": "cached", "pairs/s": "pairs/s", "texts/s": "texts/s", "subset": "on a benchmark subset ({n} queries)",
           "difference": "{measure} difference", "speed_word": "speed", "size_word": "size", "variant": "Variant",
           "base": "Base", "queries_n": "Queries", "verdict": "Verdict"},
    "tr": {"group": "Grup", "system": "Model", "borda_rank": "Borda sırası", "borda_votes": "Borda puanı",
           "ci": "{level} GA", "retention": "Koruma", "end_to_end": "Uçtan uca", "reranker_only": "Yalnız reranker",
           "recall": "İlk aşama recall@{k}", "condition": "Koşul", "queries": "sorgu (ilgili belgesiz)",
           "better": "anlamlı üstün", "worse": "anlamlı geride", "none": "yok", "same": "fark yok: {n}/{total} hücre",
           "params": "Param", "size": "Boyut", "speed": "Çift/sn", "cached": "önbellekten", "pairs/s": "çift/sn",
           "texts/s": "metin/sn", "subset": "benchmark alt kümesinde ({n} sorgu)", "difference": "{measure} farkı",
           "speed_word": "hız", "size_word": "boyut", "variant": "Sürüm", "base": "Taban", "queries_n": "Sorgu",
           "verdict": "Sonuç"},
}


@dataclass
class Table:
    """A display table: column names and rows of text, with notes printed under it."""

    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        def esc(text: str) -> str:
            return text.replace("|", "\\|")

        lines = ["| " + " | ".join(map(esc, self.columns)) + " |", "|" + "---|" * len(self.columns)]
        lines += ["| " + " | ".join(map(esc, r)) + " |" for r in self.rows]
        notes = [("\\" + n if n.startswith("*") else n) for n in self.notes]  # a leading * is not a list item
        return "\n".join(lines) + "".join("\n\n" + n for n in notes)

    def dicts(self) -> list[dict[str, str]]:
        """Rows as records; a repeated column name (an interval after each value) names its value column."""
        keys = [c if c not in self.columns[:i] else f"{c} ({self.columns[i - 1]})" for i, c in enumerate(self.columns)]
        return [dict(zip(keys, r)) for r in self.rows]

    def without(self, *names: str) -> Table:
        """The same table without the named columns."""
        keep = [i for i, c in enumerate(self.columns) if c not in names]
        return Table([self.columns[i] for i in keep], [[r[i] for i in keep] for r in self.rows], list(self.notes))

    def to_json(self) -> dict:
        return {"columns": self.columns, "rows": self.rows, "notes": self.notes}

    @classmethod
    def from_json(cls, body: dict) -> Table:
        return cls(body["columns"], body["rows"], body.get("notes", []))


def word(key: str, labels: str = "en", **kw) -> str:
    return WORDS[labels][key].format(**kw)


def level(confidence: float, labels: str = "en") -> str:
    """An interval's level as printed: 95%, 97.5% (en) or %95 (tr, as the card prints it)."""
    return f"%{100 * confidence:g}" if labels == "tr" else f"{100 * confidence:g}%"


def ci_label(labels: str = "en", confidence: float = 0.95) -> str:
    """The interval's column name at the run's level: `95% CI`, `%99 GA`."""
    return word("ci", labels, level=level(confidence, labels))


def condition_label(condition: str, labels: str = "en") -> str:
    """`mobile` -> Mobil (tr); composites label each part (`upper+typo` -> BÜYÜK HARF + Yazım hatası)."""
    base, _, setting = condition.partition("~")
    text = base if labels == "en" else " + ".join(TR_CONDITIONS.get(p, p) for p in base.split("+"))
    return f"{text} ({setting})" if setting else text


def score(v: float | None, digits: int = 4) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def percent(v: float | None, labels: str = "en") -> str:
    """93.7% (en) or %93.7 (tr, as the card prints it)."""
    if v is None:
        return "–"
    return f"%{100 * v:.1f}" if labels == "tr" else f"{100 * v:.1f}%"


def interval(low: float | None, high: float | None, fmt=score) -> str:
    return "–" if low is None or high is None else f"[{fmt(low)}, {fmt(high)}]"


def votes(v: float | None) -> str:
    """Borda votes as people write them: 2, 1.5."""
    return "–" if v is None else f"{v:g}"


def dataset_label(name: str, in_ranking: bool) -> str:
    return name if in_ranking else f"{name} *"


def out_of_ranking_notes(datasets: list) -> list[str]:
    """`* msmarco-tr: out of the ranking (reason)` for each dataset out of the ranking."""
    return [f"* {d.name}: out of the ranking" + (f" ({d.reason})" if d.reason else "") for d in datasets if not d.in_ranking]


def leaderboard(board: pl.DataFrame, conditions: list[str], labels: str, compact: bool = False,
                task_types: int = 2, costs: dict | None = None, confidence: float = 0.95) -> Table:
    """The card's table: group, system, its parameters (with `costs`), Borda rank and votes, Mean (Task) with its
    interval, Mean (TaskType) (only with more than one task type: otherwise it repeats Mean (Task)), the headline
    under each condition, then retention per condition, then size and warm pairs/s (with `costs`: system ->
    ModelCost or None). `compact` (terminal): each condition's score and retention in one cell."""
    corrupted = [c for c in conditions if c != "clean" and c in board.columns]
    by_type = task_types > 1
    cols = [word("group", labels), word("system", labels)] + ([word("params", labels)] if costs is not None else []) + [
        word("borda_rank", labels), word("borda_votes", labels), "Mean (Task)", ci_label(labels, confidence)] + (
        ["Mean (TaskType)"] if by_type else [])
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


def params_text(n: int | None) -> str:
    """Parameters as the card prints them: 4.0B, 568M, 22.7M; – for none."""
    if not n:
        return "–"
    if n >= 1e9:
        return f"{n / 1e9:.1f}B"
    if n >= 1e8:
        return f"{n / 1e6:.0f}M"
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}K"


def size_text(n: int | None) -> str:
    """Bytes on disk in decimal units (570 MB, 2.3 GB); – for none."""
    if not n:
        return "–"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}" if n < 100 * scale else f"{n / scale:.0f} {unit}"
    return f"{n} B"


def rate(v: float) -> str:
    """Items per second: 1,234 / 56 / 3.2."""
    return f"{v:,.0f}" if v >= 10 else f"{v:.1f}"


def speed_text(cost, labels: str = "en", short: bool = False) -> str:
    """`1,234 pairs/s (cpu fp32)`; texts/s for the first stage; prefixed `cached:` when this run scored nothing and
    the figure is from the runs that did; – when nothing was ever timed (fusion rows). `short` (terminal): the
    number, the unit only when it is texts, `(cached)` after it."""
    if cost is None or not cost.per_second:
        return word("cached", labels) if cost is not None and cost.cached else "–"
    if short:
        unit = f" {word('texts/s', labels)}" if cost.unit == "texts" else ""
        return f"{rate(cost.per_second)}{unit}" + (f" ({word('cached', labels)})" if cost.cached else "")
    where = " ".join(x for x in (cost.device, cost.precision) if x)
    text = f"{rate(cost.per_second)} {word(cost.unit + '/s', labels)}" + (f" ({where})" if where else "")
    return f"{word('cached', labels)}: {text}" if cost.cached else text


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
                     "–" if not c or not c.items else f"{c.items} in {c.seconds:.2f}s"])
    return Table([word("system", labels), "Kind", "Device", "Precision", "Batch", word("params", labels),
                  word("size", labels), word("speed", labels), "p50 ms/query", "p95 ms/query", "Timed"], rows,
                 [COST_NOTE, "p50/p95 ms/query: one query's rerank_depth candidates scored as one call, for up to 20 "
                             "queries after the run's scoring (the first stage: –). Timed: items and seconds inside "
                             "the timer, summed over datasets (and over earlier runs, when cached)."])


def signed(v: float) -> str:
    return f"{v:+.4f}"


def ratio_text(before: float | None, after: float | None, fmt, unit: str = "") -> str:
    """`3 → 2 pairs/s (×0.7)`."""
    if not before or not after:
        return "–"
    return f"{fmt(before)} → {fmt(after)}{unit} (×{after / before:.2g})"


def variant_sentence(j, labels: str = "en", confidence: float = 0.95) -> str:
    """The card's sentence: `int8 sürüm: benchmark alt kümesinde (1000 sorgu) nDCG@10 farkı +0.0000 (%95 GA
    [-0.0035, +0.0035])`, then the speed and size ratios."""
    text = (f"{j.label}: {word('subset', labels, n=j.queries)} {word('difference', labels, measure=j.measure)} "
            f"{signed(j.delta)} ({ci_label(labels, confidence)} {interval(j.low, j.high, signed)})")
    b, v = j.base_cost, j.variant_cost
    if j.speed_ratio is not None:
        text += f"; {word('speed_word', labels)} " + ratio_text(b.per_second, v.per_second, rate, " " + word(b.unit + "/s", labels))
    if j.size_ratio is not None:
        text += f"; {word('size_word', labels)} " + ratio_text(b.size_bytes, v.size_bytes, size_text)
    return text + "."


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


def explain(decomp: pl.DataFrame, order: list[str], conditions: list[str], k: int, first_stage: str) -> list[str]:
    """Sentences read off the decomposition: where a retention above 100% comes from, and where a loss is the
    candidate pool's alone (the reranker keeps 100% on the clean candidates)."""
    by = {(r["system"], r["condition"]): r for r in decomp.iter_rows(named=True)}
    out = []
    for s in order:
        for c in conditions:
            r = by.get((s, c))
            if r is None:
                continue
            iso, rec = r["reranker_only"], r["first_stage_recall"]
            if r["end_to_end"] is not None and r["end_to_end"] < 1 and iso is not None and iso >= 1:
                pool = f" (first-stage recall@{k} retention {percent(rec)})" if rec is not None else ""
                out.append(f"{s}, {c}: {percent(r['end_to_end'])} end to end but {percent(iso)} reranker only. The "
                           f"reranker loses nothing with the corrupted text on the clean candidates: the loss comes "
                           f"from the candidate pool{pool}.")
            for key, label in (("end_to_end", "end to end"), ("reranker_only", "reranker only")):
                v, lo, hi = r[key], r[f"{key}_low"], r[f"{key}_high"]
                if v is None or v <= 1:
                    continue
                why = []
                if key == "reranker_only":
                    why.append("on the same clean candidates the reranker ranks better with the corrupted text")
                elif s == first_stage:
                    why.append("this row is the first stage's own ranking: the encoder matches the corrupted text at "
                               "least as well as the clean text")
                elif iso is not None and iso <= 1:
                    why.append(f"reranker only {percent(iso)}: the gain comes from the candidate pool, not the reranker")
                elif iso is not None:
                    why.append(f"reranker only {percent(iso)}: the reranker itself ranks better with the corrupted text")
                if key == "end_to_end" and rec is not None and rec > 1:
                    why.append(f"first-stage recall@{k} retention {percent(rec)}: the corrupted queries' candidates hold "
                               "more relevant documents")
                if lo is not None and lo <= 1 <= hi:
                    why.append(f"interval {interval(lo, hi, percent)} includes 100%: not a significant gain")
                text = "; ".join(why or ["no cause found in the decomposition"])
                out.append(f"{s}, {c}: {percent(v)} {label}. {text[0].upper()}{text[1:]}.")
    return out


def featured_lines(cells: pl.DataFrame, featured: str, conditions_order: list[str], datasets_order: list[str],
                   labels: str, others: list[str]) -> list[str]:
    """The card's list: for each other system, the significantly better and worse cells with their deltas,
    e.g. `vs seroe: significantly better: msmarco-tr/Mobil (+0.012), …`."""
    lines = []
    rank = {(d, c): i for i, (d, c) in enumerate((d, c) for d in datasets_order for c in conditions_order)}
    for other in others:
        part = cells.filter(pl.col("versus") == other)
        if not part.height:
            continue
        texts = {}
        for verdict in ("better", "worse"):
            sig = sorted((r for r in part.iter_rows(named=True) if r["verdict"] == verdict),
                         key=lambda r: rank.get((r["dataset"], r["condition"]), 1 << 30))
            texts[verdict] = ", ".join(f"{r['dataset']}/{condition_label(r['condition'], labels)} ({r['delta']:+.3f})"
                                       for r in sig) or word("none", labels)
        same = part.filter(pl.col("verdict") == "no difference").height
        lines.append(f"{featured} vs {other}: {word('better', labels)}: {texts['better']}; "
                     f"{word('worse', labels)}: {texts['worse']}; {word('same', labels, n=same, total=part.height)}.")
    return lines


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
    enc = config.encoder
    rows = [[FIRST_STAGE, "dense first stage", enc.model, ", ".join(sorted({c.encoder_identity for c in candidates})) or "–",
             str(enc.max_length or "model's own"), f"top {config.depth}"]]
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
        if c == "clean":
            continue
        part = variants.filter((pl.col("condition") == c) & pl.col("changed") & (pl.col("sample") == 0)).head(k)
        rows += [[c, r["dataset"], r["query_id"], r["original"], r["text"]] for r in part.iter_rows(named=True)]
    return Table(["Condition", "Dataset", "Query", "Before", "After"], rows)


def system_kinds(config: EvalConfig) -> dict[str, str]:
    """What produced each row: kind and backend (with quantisation)."""
    out = {FIRST_STAGE: "dense first stage (torch)"}
    for spec in config.rerankers:
        backend = getattr(spec, "backend", "torch" if hasattr(spec, "model") else None)
        quant = getattr(spec, "quantization", "none")
        out[spec.name] = spec.kind + (f" ({backend}{' ' + quant if quant != 'none' else ''})" if backend else "")
    return out
