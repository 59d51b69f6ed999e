"""The one label table and the number formats: what every output calls a column, a condition or a verdict, in
English or Turkish (the Kalbur card's Temiz, BÜYÜK HARF, …, Koruma), and how it writes a score, a percentage, an
interval, a size or a speed.

Numbers stay full precision in the CSV and parquet files; these are the texts people read.
"""

from __future__ import annotations

TR_CONDITIONS = {
    "clean": "Temiz",
    "upper": "BÜYÜK HARF",
    "ascii_full": "Türkçe karaktersiz",
    "ascii_partial": "Kısmen karaktersiz",
    "mobile": "Mobil",
    "typo": "Yazım hatası",
    "colloquial": "Gündelik yazım",
}
WORDS = {
    "en": {
        "group": "Group",
        "system": "System",
        "borda_rank": "Borda rank",
        "borda_votes": "Borda votes",
        "mean_task": "Mean (Task)",
        "mean_task_type": "Mean (TaskType)",
        "mean_task_complete": "Mean (Task), complete only",
        "mean_task_type_complete": "Mean (TaskType), complete only",
        "tasks": "Tasks",
        "ci_low": "CI low",
        "ci_high": "CI high",
        "ranks": "Rank intervals",
        "rank_mean": "Rank (Mean (Task))",
        "rank_borda": "Rank (Borda)",
        "p_rank1": "P(rank 1)",
        "rank_range": "{level} range",
        "ci": "{level} CI",
        "retention": "Retention",
        "end_to_end": "End to end",
        "reranker_only": "Reranker only",
        "recall": "First-stage recall@{k}",
        "condition": "Condition",
        "queries": "queries (no relevant doc.)",
        "better": "significantly better",
        "worse": "significantly worse",
        "none": "none",
        "same": "no difference in {n} of {total} cells",
        "params": "Param",
        "size": "Size",
        "speed": "Pairs/s",
        "cached": "cached",
        "pairs/s": "pairs/s",
        "texts/s": "texts/s",
        "subset": "on a benchmark subset ({n} queries)",
        "difference": "{measure} difference",
        "speed_word": "speed",
        "size_word": "size",
        "variant": "Variant",
        "base": "Base",
        "queries_n": "Queries",
        "verdict": "Verdict",
        "equivalent within δ": "equivalent within δ = {margin:g}",
        "not shown equivalent": "not shown equivalent within δ = {margin:g}",
        "setting": "Setting",
        "samples": "Samples",
        "ci_queries": "{level} CI, queries",
        "ci_two_level": "{level} CI, queries and samples",
        "samples_share": "Samples' share of variance",
    },
    "tr": {
        "group": "Grup",
        "system": "Model",
        "borda_rank": "Borda sırası",
        "borda_votes": "Borda puanı",
        "mean_task": "Mean (Task)",
        "mean_task_type": "Mean (TaskType)",
        "mean_task_complete": "Mean (Task), yalnız tam",
        "mean_task_type_complete": "Mean (TaskType), yalnız tam",
        "tasks": "Görev",
        "ci_low": "GA alt",
        "ci_high": "GA üst",
        "ranks": "Sıra aralıkları",
        "rank_mean": "Sıra (Mean (Task))",
        "rank_borda": "Sıra (Borda)",
        "p_rank1": "P(1.)",
        "rank_range": "{level} aralık",
        "ci": "{level} GA",
        "retention": "Koruma",
        "end_to_end": "Uçtan uca",
        "reranker_only": "Yalnız reranker",
        "recall": "İlk aşama recall@{k}",
        "condition": "Koşul",
        "queries": "sorgu (ilgili belgesiz)",
        "better": "anlamlı üstün",
        "worse": "anlamlı geride",
        "none": "yok",
        "same": "fark yok: {n}/{total} hücre",
        "params": "Param",
        "size": "Boyut",
        "speed": "Çift/sn",
        "cached": "önbellekten",
        "pairs/s": "çift/sn",
        "texts/s": "metin/sn",
        "subset": "benchmark alt kümesinde ({n} sorgu)",
        "difference": "{measure} farkı",
        "speed_word": "hız",
        "size_word": "boyut",
        "variant": "Sürüm",
        "base": "Taban",
        "queries_n": "Sorgu",
        "verdict": "Sonuç",
        "equivalent within δ": "δ = {margin:g} içinde eşdeğer",
        "not shown equivalent": "δ = {margin:g} içinde eşdeğerliği gösterilmedi",
        "setting": "Düzen",
        "samples": "Örnek",
        "ci_queries": "{level} GA, sorgular",
        "ci_two_level": "{level} GA, sorgular ve örnekler",
        "samples_share": "Örneklerin varyans payı",
    },
}


def column_label(column: str, labels: str = "en") -> str:
    """A leaderboard.csv column as every table names it (a dataset or condition column keeps its own name)."""
    return WORDS[labels].get(column, column)


def word(key: str, labels: str = "en", **kw) -> str:
    return WORDS[labels][key].format(**kw)


def level(confidence: float, labels: str = "en") -> str:
    """An interval's level as printed: 95%, 97.5% (en) or %95 (tr, as the card prints it)."""
    return f"%{100 * confidence:g}" if labels == "tr" else f"{100 * confidence:g}%"


def ci_label(labels: str, confidence: float) -> str:
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


def signed(v: float, digits: int = 4) -> str:
    return f"{v:+.{digits}f}"


def ratio_text(before: float | None, after: float | None, fmt, unit: str = "") -> str:
    """`3 → 2 pairs/s (×0.7)`."""
    if not before or not after:
        return "–"
    return f"{fmt(before)} → {fmt(after)}{unit} (×{after / before:.2g})"
