"""A results folder's run files scored again by the field's tools, as their users score them (the file as it is: its
scores, its lines in file order), against terazi's own per-query values and leaderboard.

pytrec_eval (trec_eval's code) and MTEB's evaluator rank by score, then document id descending, as terazi does, so
they must agree everywhere. ranx ranks by score alone with numba's unstable sort, so tied documents come out in an
order of its own: it must agree wherever no tie reaches the top 10 (elsewhere its figure is not a function of the
file's scores), and its tie-free queries are counted so that the check is seen to cover something."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import polars as pl
import pytrec_eval

from terazi.data import runfolder
from terazi.schemas.tables import CLEAN

TOOLS = ("pytrec nDCG@10", "mteb nDCG@10", "mteb RR@10", "ranx nDCG@10", "ranx RR@10")


def read_trec(path: Path, columns: int) -> dict[str, dict[str, float]]:
    """A TREC run (6 columns: the score) or qrels file (4: the grade) as {query: {document: value}}, in file order."""
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        out.setdefault(parts[0], {})[parts[2]] = float(parts[4]) if columns == 6 else int(parts[3])
    return out


def tie_in_top10(ranked: dict[str, float]) -> bool:
    """Two documents of the first 11 lines score the same (their order, and so who is in the top 10, is a tie's)."""
    top = list(ranked.values())[:11]
    return any(a == b for a, b in pairwise(top))


def _file(path: Path, judged: dict, qrels_file: Path) -> list[tuple[str, str, float]]:
    from mteb._evaluators.retrieval_metrics import calculate_retrieval_scores, mrr
    from ranx import Qrels, Run, evaluate

    run = read_trec(path, 6)
    trec = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut_10"}).evaluate(run)
    mine = {q: run.get(q, {}) for q in judged}
    theirs = calculate_retrieval_scores(mine, judged, [10]).all_scores
    rr = dict(zip(mine, mrr(judged, mine, [10])["MRR@10"]))
    ranked = Run.from_file(str(path), kind="trec")
    evaluate(Qrels.from_file(str(qrels_file), kind="trec"), ranked, ["ndcg@10", "mrr@10"], make_comparable=True)
    rows = []
    for q in judged:
        rows += [
            (q, "pytrec nDCG@10", trec[q]["ndcg_cut_10"]),
            (q, "mteb nDCG@10", theirs[q]["ndcg_cut_10"]),
            (q, "mteb RR@10", rr[q]),
        ]
        if not tie_in_top10(run.get(q, {})):
            rows += [
                (q, "ranx nDCG@10", float(ranked.scores["ndcg@10"][q])),
                (q, "ranx RR@10", float(ranked.scores["mrr@10"][q])),
            ]
    return rows


def rescored(run_dir: Path) -> pl.DataFrame:
    """(dataset, system, condition, sample, query_id, tool, value) of every run file of `run_dir`'s runs folder."""
    rows = []
    for ds in runfolder.scan(run_dir):
        judged = read_trec(ds.qrels, 4)
        for cond, by_sample in ds.runs.items():
            for smp, files in by_sample.items():
                for system, path in files.items():
                    rows += [(ds.name, system, cond, smp, *r) for r in _file(path, judged, ds.qrels)]
    return pl.DataFrame(
        rows, schema=["dataset", "system", "condition", "sample", "query_id", "tool", "value"], orient="row"
    )


def disagreements(run_dir: Path) -> tuple[dict[str, int], float]:
    """(values compared per tool, the largest difference) between the tools and terazi: each (query, condition,
    sample) value against per_query.parquet (samples of a query averaged as terazi averages them, only where every
    sample was compared), and each leaderboard figure (per dataset, clean nDCG@10) against each tool's mean (ranx's
    where it compared every query); the counts name what was compared, `leaderboard <tool>` the figures."""
    tools = rescored(run_dir)
    per_sample = tools.group_by("dataset", "system", "condition", "query_id", "tool").agg(
        pl.col("value").mean(), pl.len().alias("files")
    )
    samples = tools.group_by("dataset", "condition").agg(pl.col("sample").n_unique().alias("samples"))
    ours = pl.read_parquet(run_dir / "per_query.parquet").filter(pl.col("measure").is_in(["nDCG@10", "RR@10"]))
    joined = (
        per_sample.join(samples, on=["dataset", "condition"])
        .filter(pl.col("files") == pl.col("samples"))
        .with_columns(pl.col("tool").str.split(" ").list.last().alias("measure"))
        .join(ours, on=["dataset", "system", "condition", "query_id", "measure"], how="left", suffix="_terazi")
    )
    assert joined["value_terazi"].null_count() == 0, joined.filter(pl.col("value_terazi").is_null()).head()
    worst = float((joined["value"] - joined["value_terazi"]).abs().max())
    board = pl.read_csv(run_dir / "leaderboard.csv")
    judged = ours.filter(pl.col("condition") == CLEAN).group_by("dataset").agg(pl.col("query_id").n_unique().alias("n"))
    means = (
        joined.filter((pl.col("condition") == CLEAN) & (pl.col("measure") == "nDCG@10"))
        .group_by("dataset", "system", "tool")
        .agg(pl.col("value").mean(), pl.len().alias("queries"))
        .join(judged, on="dataset")
        .filter(pl.col("queries") == pl.col("n"))
    )  # ranx: where no query tied
    for dataset, system, _tool, value, *_ in means.iter_rows():
        worst = max(worst, abs(board.filter(pl.col("system") == system)[dataset].item() - value))
    counts = dict(joined.group_by("tool").len().iter_rows())
    return counts | {f"leaderboard {t}": n for t, n in means.group_by("tool").len().iter_rows()}, worst
