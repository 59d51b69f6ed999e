"""Golden files: what terazi writes and prints, pinned file by file, so that moving code cannot change it unseen.

Three runs through the Python API (the demo benchmark as `terazi demo` runs it, a tiny benchmark with a cross-encoder,
a bi-encoder, judged variants, Turkish labels, Holm and a 90% level, and the tiny benchmark again with two first
stages and a depth sweep: depths, ceiling, protocol table, first-stages/bm25/), `terazi analyze` on the demo's runs
(and on a copy with one system's clean run replaced), then `terazi score`, `compare` and `leaderboard` on those
folders as a user runs them (a subprocess each). Every output is normalised first: timings, time stamps and absolute
paths out, floats compared to 1e-12, TREC files by their lines (tests/golden_checks.py).

To write the golden files anew after a deliberate change of an output, run `TERAZI_UPDATE_GOLDEN=1 .venv/bin/python
-m pytest tests/test_golden.py` and review `git diff tests/golden`.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from benchmarks.tiny import cross_encoder
from tests.golden_checks import GOLDEN, check, check_results, cli, golden_paths, protocol_run, tiny_run


@pytest.fixture(scope="module")
def golden_runs(prefect_server, tmp_path_factory, minilm_path):
    from prefect.settings import PREFECT_API_URL

    import terazi
    from terazi.config.config_files import demo_config
    from tests.conftest import make_tiny

    root = tmp_path_factory.mktemp("golden")
    out, cache = root / "results", root / "cache"
    demo = demo_config(str(out), str(cache), "demo")
    terazi.evaluate(demo)

    tiny = make_tiny(root / "tiny")
    ce = cross_encoder(root / "models" / "tiny-ce")
    terazi.evaluate(tiny_run(tiny, ce, minilm_path, out, cache))
    terazi.evaluate(protocol_run(tiny, ce, out, cache))

    # runs made elsewhere: the demo's TREC files, and a copy in which one system's clean ranking is the first stage's
    terazi.analyze(out / "demo", out=out / "analyzed", bootstrap_resamples=1000)
    other = root / "other-runs"
    for part in ("runs", "qrels", "changed", "datasets.yaml"):
        src = out / "demo" / part
        shutil.copytree(src, other / part) if src.is_dir() else shutil.copyfile(src, other / part)
    clean_runs = other / "runs" / "terazi-demo" / "clean"
    (clean_runs / "hybrid-rrf.trec").write_text(
        (clean_runs / "first-stage.trec")
        .read_text()
        .replace("terazi-first-stage", "hybrid-rrf")
        .replace("first-stage", "hybrid-rrf")
    )
    terazi.analyze(other, out=out / "changed-run", bootstrap_resamples=1000, labels="tr", holm=True)

    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1"}
    clean = golden_paths(root, ce, minilm_path)
    return out, clean, env


@pytest.mark.slow
@pytest.mark.parametrize("run", ["demo", "tiny", "protocol", "protocol/first-stages/bm25", "analyzed", "changed-run"])
def test_results_folders(golden_runs, run):
    out, clean, _ = golden_runs
    check_results(run, out / run, clean)


@pytest.mark.slow
def test_score_outputs(golden_runs):
    out, clean, env = golden_runs
    qrels, runs = out / "demo" / "qrels" / "terazi-demo.tsv", out / "demo" / "runs" / "terazi-demo"
    measures = [
        "-m",
        "nDCG@10",
        "-m",
        "RR@10",
        "-m",
        "nDCG(dcg='exp-log2')@10",
        "-m",
        "R@100",
        "-m",
        "P@5",
        "-m",
        "AP",
        "-m",
        "Judged@10",
        "-m",
        "mrr@10",
        "-m",
        "ndcg_cut_5",
    ]
    check(
        "score/bm25-clean.json",
        json.loads(
            cli(
                "score",
                "--qrels",
                str(qrels),
                "--run",
                str(runs / "clean" / "bm25-tr.trec"),
                *measures,
                "--format",
                "json",
                "--per-query",
                clean=clean,
                env=env,
            ).split("\n", 1)[1]
        ),
    )
    check(
        "score/first-stage-typo.txt",
        cli(
            "score",
            "--qrels",
            str(qrels),
            "--run",
            str(runs / "typo" / "sample-1" / "first-stage.trec"),
            "--contract",
            "strict",
            "--unjudged",
            "irrelevant",
            "--per-query",
            clean=clean,
            env=env,
        ),
    )
    check(
        "score/errors.txt",
        cli("score", "--qrels", str(qrels), "--run", str(qrels), clean=clean, env=env)
        + cli(
            "score",
            "--qrels",
            str(qrels),
            "--run",
            str(runs / "clean" / "bm25-tr.trec"),
            "-m",
            "nDCG@0",
            clean=clean,
            env=env,
        ),
    )


@pytest.mark.slow
def test_compare_outputs(golden_runs):
    out, clean, env = golden_runs
    demo, analyzed, changed = (str(out / n) for n in ("demo", "analyzed", "changed-run"))
    check(
        "compare/systems.txt", cli("compare", demo, "--systems", "bm25-tr", "hybrid-rrf", "--all", clean=clean, env=env)
    )
    check(
        "compare/systems.md",
        cli(
            "compare",
            demo,
            "--systems",
            "bm25-tr",
            "first-stage",
            "--format",
            "markdown",
            "--holm",
            "--confidence",
            "0.9",
            clean=clean,
            env=env,
        ),
    )
    check(
        "compare/runs.json",
        json.loads(cli("compare", analyzed, changed, "--format", "json", clean=clean, env=env).split("\n", 1)[1]),
    )
    check("compare/runs.txt", cli("compare", demo, changed, clean=clean, env=env))
    check("compare/same.md", cli("compare", demo, analyzed, "--format", "markdown", clean=clean, env=env))


@pytest.mark.slow
def test_leaderboard_outputs(golden_runs):
    out, clean, env = golden_runs
    inputs = GOLDEN / "inputs"
    for fmt in ("table", "csv", "json", "markdown", "latex"):
        check(
            f"leaderboard/demo.{fmt}.txt", cli("leaderboard", str(out / "demo"), "--format", fmt, clean=clean, env=env)
        )
        check(
            f"leaderboard/long.{fmt}.txt",
            cli(
                "leaderboard", str(inputs / "long.csv"), "--format", fmt, "--out-of-ranking", "t4", clean=clean, env=env
            ),
        )
    check(
        "leaderboard/mteb.markdown.txt",
        cli(
            "leaderboard",
            str(inputs / "mteb"),
            "--format",
            "markdown",
            "--borda",
            "mteb",
            "--task-type",
            "TurQA=retrieval",
            "--task-type",
            "sts",
            "--language",
            "tur",
            clean=clean,
            env=env,
        ),
    )
    check(
        "leaderboard/errors.txt",
        cli("leaderboard", str(inputs / "bad.csv"), clean=clean, env=env)
        + cli("leaderboard", str(out / "demo"), "--borda", "mteb", clean=clean, env=env),
    )
