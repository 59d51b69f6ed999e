"""The card's tables in the Kalbur card's layout, as text (terazi.present.table.Table), from full-precision inputs.

- results: Grup | Model | Param | Temiz | each condition | Koruma: each condition (Param only where the run
  measured parameters);
- per dataset: the headline on clean queries, out-of-ranking datasets marked `*`;
- comparison counts: the featured system against each rival over the dataset × condition cells;
- the significant cells with their deltas, and the rank intervals.
"""

from __future__ import annotations

import polars as pl

from terazi.analysis.intervals import featured_cells, pairwise_summary
from terazi.present.card.inputs import RunFolder
from terazi.present.card.method import model_label
from terazi.present.card.words import DIGITS, condition, span, word
from terazi.present.labels import level, params_text, percent, score, signed
from terazi.present.table import Table
from terazi.schemas import FIRST_STAGE
from terazi.schemas.statistics import CORRECTIONS, Statistics


def display_names(run: RunFolder, system: str, labels: str, names: dict[str, str] | None = None) -> dict[str, str]:
    """What each row is called: `names` where given, the first stage of a run with frozen candidates by its encoder
    ("bge-m3 (rerank yok)"), every other system by its name."""
    out = {}
    for s in run.order:
        if names and s in names:
            out[s] = names[s]
        elif s == FIRST_STAGE and not run.imported and run.settings.encoder:
            out[s] = f"{model_label(run.settings.encoder)} ({word('no_rerank', labels)})"
        else:
            out[s] = s
    return out


def params(run: RunFolder) -> dict[str, int | None] | None:
    """Parameters per system from costs.csv; None when the run measured none (runs made elsewhere)."""
    if run.costs is None or "params" not in run.costs.columns or run.costs["params"].is_null().all():
        return None
    return dict(zip(run.costs["system"], run.costs["params"]))


def results(run: RunFolder, system: str, shown: dict[str, str], labels: str) -> Table:
    sizes = params(run)
    conds = run.corrupted
    ret = word("retention", labels)
    cols = (
        [word("group", labels), word("model", labels)]
        + ([word("params", labels)] if sizes else [])
        + [
            condition("clean", labels),
            *(condition(c, labels) for c in conds),
            *(f"{ret}: {condition(c, labels)}" for c in conds),
        ]
    )
    rows = []
    for r in run.board.iter_rows(named=True):
        name = shown[r["system"]] + (f" ({word('this', labels)})" if r["system"] == system else "")
        rows.append(
            ["–" if r.get("group") is None else str(r["group"]), name]
            + ([params_text(sizes.get(r["system"]))] if sizes else [])
            + [score(r["mean_task"], DIGITS), *(score(r[c], DIGITS) for c in conds)]
            + [percent(r.get(f"{c} retention"), labels) for c in conds]
        )
    return Table(cols, rows)


def out_notes(run: RunFolder, labels: str) -> list[str]:
    return [
        word("note_out", labels, name=d.name) + (f" ({d.reason})" if d.reason else "")
        for d in run.datasets
        if not d.in_ranking
    ]


def per_dataset(run: RunFolder, system: str, shown: dict[str, str], labels: str) -> Table:
    cols = [word("model", labels)] + [d.name if d.in_ranking else f"{d.name} *" for d in run.datasets]
    rows = [
        [shown[r["system"]] + (f" ({word('this', labels)})" if r["system"] == system else "")]
        + [score(r.get(d.name), DIGITS) for d in run.datasets]
        for r in run.board.iter_rows(named=True)
    ]
    return Table(cols, rows, out_notes(run, labels))


def cells_of(run: RunFolder, system: str) -> pl.DataFrame:
    """Every compared cell from `system`'s side (delta = system − rival), rivals in the leaderboard's order."""
    mine = featured_cells(run.comparisons, system)
    rank = {s: i for i, s in enumerate(run.order)}
    return (
        mine.with_columns(pl.col("versus").replace_strict(rank, default=len(rank), return_dtype=pl.Int64).alias("_o"))
        .sort("_o", maintain_order=True)
        .drop("_o")
    )


def comparisons(
    run: RunFolder, system: str, shown: dict[str, str], labels: str, rivals: list[str] | None = None
) -> tuple[Table, str]:
    """(counts table, its caption `20 hücre = 5 veri seti × 4 koşul`)."""
    cells = cells_of(run, system)
    if rivals is not None:
        cells = cells.filter(pl.col("versus").is_in(rivals))
    counts = pairwise_summary(cells)
    head = shown[system]
    rows = [
        [f"{head} vs {shown.get(r['versus'], r['versus'])}", str(r["better"]), str(r["no_difference"]), str(r["worse"])]
        for r in counts.iter_rows(named=True)
    ]
    first = cells.filter(pl.col("versus") == cells["versus"][0]) if cells.height else cells
    d, c = first["dataset"].n_unique(), first["condition"].n_unique()
    caption = word("cells", labels, n=first.height, d=d, c=c, ds="" if d == 1 else "s", cs="" if c == 1 else "s")
    caption += f"; {verdict_rule(run.settings.statistics, labels)}"
    table = Table([word("versus", labels), word("better", labels), word("same", labels), word("worse", labels)], rows)
    return table, caption


def verdict_rule(statistics: Statistics, labels: str) -> str:
    """What decided the cells' verdicts, as comparisons.csv's were decided (terazi.analysis.hypotheses.significant):
    `verdict: p`, the randomization test's p-values under the configured correction; the older `holm: true`, the
    bootstrap's p-values Holm-adjusted within each pair's cells; else the bootstrap interval, uncorrected."""
    if statistics.verdict == "p":
        test, correction, scope = word("by_randomization", labels), statistics.correction, statistics.correction_scope
    else:
        test = word("by_bootstrap", labels, level=level(statistics.confidence, labels))
        correction, scope = ("holm", "pair") if statistics.holm else ("none", "pair")
    if correction == "none":
        return f"{test}, {word('no_correction', labels)}"
    return f"{test}, {word('correction', labels, name=CORRECTIONS[correction], scope=word(f'scope_{scope}', labels))}"


def significant(
    run: RunFolder, system: str, shown: dict[str, str], labels: str, rivals: list[str] | None = None
) -> list[str]:
    """Per rival, the significantly better and worse cells with their deltas, dataset by dataset in the run's
    order and condition by condition: `seroe ile karşılaştırmada anlamlı üstün: msmarco-tr/Mobil (+0.012), …`."""
    cells = cells_of(run, system)
    if rivals is not None:
        cells = cells.filter(pl.col("versus").is_in(rivals))
    where = {(d.name, c): i for i, (d, c) in enumerate((d, c) for d in run.datasets for c in run.settings.conditions)}
    lines = []
    for (rival,), part in cells.group_by("versus", maintain_order=True):
        for verdict, key in (("better", "against_better"), ("worse", "against_worse")):
            sig = sorted(
                (r for r in part.iter_rows(named=True) if r["verdict"] == verdict),
                key=lambda r: where.get((r["dataset"], r["condition"]), len(where)),
            )
            if sig:
                listed = ", ".join(
                    f"{r['dataset']}/{condition(r['condition'], labels)} ({signed(r['delta'], DIGITS)})" for r in sig
                )
                lines.append(word(key, labels, rival=shown.get(rival, rival), cells=listed))
    return lines or [word("no_cell", labels)]


def rank_table(ranks: pl.DataFrame, system: str, shown: dict[str, str], labels: str, confidence: float) -> Table:
    """Rows in the order of `shown` (the leaderboard's)."""
    order = {s: i for i, s in enumerate(shown)}
    ranks = ranks.sort(pl.col("system").replace_strict(order, default=len(order), return_dtype=pl.Int64))
    rng = word("rank_range", labels, level=level(confidence, labels))
    cols = [
        word("model", labels),
        word("rank_mean", labels),
        rng,
        word("p_rank1", labels),
        word("rank_borda", labels),
        rng,
        word("p_rank1", labels),
    ]
    rows = []
    for r in ranks.iter_rows(named=True):
        name = shown.get(r["system"], r["system"]) + (f" ({word('this', labels)})" if r["system"] == system else "")
        rows.append(
            [
                name,
                str(r["rank_mean"]),
                span(r["rank_mean_low"], r["rank_mean_high"]),
                percent(r["p_rank1_mean"], labels),
                str(r["rank_borda"]),
                span(r["rank_borda_low"], r["rank_borda_high"]),
                percent(r["p_rank1_borda"], labels),
            ]
        )
    return Table(cols, rows, [word("rank_rule", labels, level=level(confidence, labels))])


def rank_line(ranks: pl.DataFrame, system: str, shown: dict[str, str], labels: str, confidence: float) -> str:
    r = ranks.filter(pl.col("system") == system).row(0, named=True)
    return word(
        "rank_line",
        labels,
        system=shown[system],
        rank=r["rank_mean"],
        level=level(confidence, labels),
        span=span(r["rank_mean_low"], r["rank_mean_high"]),
        p1=percent(r["p_rank1_mean"], labels),
        brank=r["rank_borda"],
        bspan=span(r["rank_borda_low"], r["rank_borda_high"]),
        bp1=percent(r["p_rank1_borda"], labels),
    )
