"""Scores without the queries a leakage check found in training data (`leakage`): the headline on the kept queries
equals scoring the filtered qrels and runs directly (terazi.score and pytrec_eval, to 1e-12); the difference's
interval comes from the leaderboard's own paired bootstrap (the full means of its draws give the leaderboard's
interval exactly); bad leakage folders are one line each, before any results folder exists."""

from __future__ import annotations

import json
import shutil

import numpy as np
import polars as pl
import pytest
import pytrec_eval
from typer.testing import CliRunner

import terazi
from terazi.cli import app
from terazi.data.beir import load_beir, write_beir
from terazi.leakage import TrainSource, check, write
from tests.conftest import tiny_config
from tests.leakage_inputs import jsonl

SEED, RESAMPLES, HEADLINE = 5, 1000, "nDCG@10"
WORDS = [f"söz{i}" for i in range(400)]


def _benchmark(root, rng, name: str, n: int):
    """A BEIR dataset of n ten-word queries, three judged passages each (grades 2, 1, 0), and its TREC runs."""
    queries = [(f"{name}-q{k:02d}", " ".join(rng.choice(WORDS, 10))) for k in range(n)]
    docs = [(f"{q}-d{j}", " ".join(rng.choice(WORDS, 12))) for q, _ in queries for j in range(3)]
    qrels = [(q, f"{q}-d{j}", 2 - j) for q, _ in queries for j in range(3)]
    write_beir(
        root / "data" / name,
        [{"_id": i, "text": t} for i, t in docs],
        [{"_id": i, "text": t} for i, t in queries],
        qrels,
    )
    runs = root / "runs"
    (runs / "qrels").mkdir(parents=True, exist_ok=True)
    (runs / "qrels" / f"{name}.tsv").write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels))
    ids = [d for d, _ in docs]
    for condition in ("clean", "upper"):
        for system in ("a", "b"):
            lines = []
            for q, _ in queries:
                pool = list(dict.fromkeys([f"{q}-d{j}" for j in range(3)] + list(rng.choice(ids, 9))))
                for rank, d in enumerate(rng.permutation(pool)):
                    lines.append(f"{q} Q0 {d} {rank + 1} {100 - rank}.5 {system}\n")
            path = runs / "runs" / name / condition / f"{system}.trec"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(lines))
    return queries, docs


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """Two datasets, their runs, and a leakage check against training text copying some queries and passages."""
    root = tmp_path_factory.mktemp("deco")
    rng = np.random.default_rng(1)
    qa, da = _benchmark(root, rng, "alpha", 40)
    qb, db = _benchmark(root, rng, "beta", 25)
    copied = [t for _, t in qa[:8]] + [t for _, t in qb[:3]]  # queries copied: n-gram hits and exact repeats
    passages = [t for d, t in da if d.endswith("-d0")][10:14] + [t for d, t in db if d.endswith("-d1")][5:7]
    train = jsonl(
        root / "train.jsonl",
        [{"text": p, "query": None} for p in passages] + [{"text": None, "query": q} for q in copied],
    )
    result = check(
        [load_beir(root / "data" / n) for n in ("alpha", "beta")],
        [TrainSource(path=str(train), fields=("text", "query"))],
    )
    write(result, root / "leak")
    return root


def _filtered_score(root, dataset: str, system: str, excluded: set[str]) -> tuple[float, float]:
    """The headline of one run on the kept queries, scored from filtered files: terazi.score and pytrec_eval."""
    qrels = [
        x for x in (root / "runs" / "qrels" / f"{dataset}.tsv").read_text().splitlines() if x.split()[0] not in excluded
    ]
    run = [
        x
        for x in (root / "runs" / "runs" / dataset / "clean" / f"{system}.trec").read_text().splitlines()
        if x.split()[0] not in excluded
    ]
    (root / "fq.txt").write_text("\n".join(qrels) + "\n")
    (root / "fr.trec").write_text("\n".join(run) + "\n")
    ours = terazi.score(root / "fq.txt", root / "fr.trec", [HEADLINE]).aggregate[HEADLINE]
    with open(root / "fq.txt") as fq, open(root / "fr.trec") as fr:
        ref = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(fq), {"ndcg_cut.10"}).evaluate(
            pytrec_eval.parse_run(fr)
        )
    return ours, float(np.mean([v["ndcg_cut_10"] for v in ref.values()]))


def analyze_leak_free(checked, out, *more: str):
    """`terazi analyze` of the checked runs with the leakage check's lists, the tests' resamples and seed."""
    runs, leak = str(checked / "runs"), str(checked / "leak")
    flags = ["--resamples", str(RESAMPLES), "--seed", str(SEED), "--leakage", leak, *more]
    return CliRunner().invoke(app, ["analyze", runs, "--out", str(out), *flags])


@pytest.mark.parametrize("by", ["queries", "relevant"])
def test_the_clean_subset_headline_is_the_score_of_the_filtered_files(prefect_server, checked, tmp_path, by):
    out = tmp_path / "analysed"
    res = analyze_leak_free(checked, out, "--leakage-by", by)
    assert res.exit_code == 0, res.output
    excluded = {}
    for d in ("alpha", "beta"):
        ids = set((checked / "leak" / d / "queries.txt").read_text().split())
        relevant = set((checked / "leak" / d / "relevant_hit.txt").read_text().split())
        assert ids and relevant and not relevant <= ids  # both lists matter
        excluded[d] = ids | relevant if by == "relevant" else ids
    assert len(excluded["alpha"]) == (12 if by == "relevant" else 8)
    deco = pl.read_csv(out / "leak_free.csv")
    board = pl.read_csv(out / "leaderboard.csv")
    for system in ("a", "b"):
        rows = {r["dataset"]: r for r in deco.filter(pl.col("system") == system).iter_rows(named=True)}
        kept = {}
        for d in ("alpha", "beta"):
            ours, ref = _filtered_score(checked, d, system, excluded[d])
            assert abs(ours - ref) < 1e-12
            assert abs(rows[d]["leak_free"] - ours) < 1e-12 and rows[d]["excluded"] == len(excluded[d])
            assert abs(rows[d]["full"] - board.filter(pl.col("system") == system)[d][0]) < 1e-12
            kept[d] = ours
        overall = rows[None]
        assert abs(overall["leak_free"] - np.mean(list(kept.values()))) < 1e-12
        assert abs(overall["full"] - board.filter(pl.col("system") == system)["mean_task"][0]) < 1e-12
        assert abs(overall["delta"] - (overall["leak_free"] - overall["full"])) < 1e-12
        assert overall["queries"] == 65 and overall["excluded"] == len(excluded["alpha"]) + len(excluded["beta"])
    config = json.loads((out / "manifest.json").read_text())["config"]
    assert config["leakage"] == str(checked / "leak") and config["leakage_by"] == by
    tables = json.loads((out / "tables.json").read_text())
    notes = " ".join(tables["leak_free"]["notes"])
    n = len(excluded["alpha"]) + len(excluded["beta"])
    assert f"{n} of 65 queries of the ranked datasets left out" in notes
    assert ("relevant_hit.txt" in notes) == (by == "relevant")
    md = (out / "leaderboard.md").read_text()
    assert "## Without the queries found in training data" in md and "- excluded: " in md
    assert "id='leak_free'" in (out / "report.html").read_text().replace('"', "'")


def test_the_interval_of_the_difference_is_drawn_with_the_leaderboards_resamples(prefect_server, checked, tmp_path):
    out = tmp_path / "analysed"
    res = analyze_leak_free(checked, out, "--confidence", "0.9")
    assert res.exit_code == 0, res.output
    pq = pl.read_parquet(out / "per_query.parquet").filter(
        (pl.col("condition") == "clean") & (pl.col("measure") == HEADLINE)
    )
    board, deco = pl.read_csv(out / "leaderboard.csv"), pl.read_csv(out / "leak_free.csv")
    excluded = {d: set((checked / "leak" / d / "queries.txt").read_text().split()) for d in ("alpha", "beta")}
    for system in ("a", "b"):
        # the documented scheme written out: one generator, datasets sorted, queries sorted by id, one chunk of
        # draws per dataset (RESAMPLES × queries indexes, within stats' 4,000,000), the same indexes for v and m
        rng = np.random.default_rng(SEED)
        full, kept = np.zeros(RESAMPLES), np.zeros(RESAMPLES)
        for d in ("alpha", "beta"):
            part = pq.filter((pl.col("system") == system) & (pl.col("dataset") == d)).sort("query_id")
            v = part["value"].to_numpy()
            m = ~np.isin(part["query_id"].to_numpy(), sorted(excluded[d]))
            idx = rng.integers(0, v.size, size=(RESAMPLES, v.size))
            full += v[idx].mean(axis=1)
            kept += (v[idx] * m[idx]).sum(axis=1) / m[idx].sum(axis=1)
        full, kept = full / 2, kept / 2
        row = board.filter(pl.col("system") == system)
        assert np.allclose(np.quantile(full, [0.05, 0.95]), [row["ci_low"][0], row["ci_high"][0]], rtol=0, atol=1e-12)
        overall = deco.filter((pl.col("system") == system) & pl.col("dataset").is_null())
        assert np.allclose(
            np.quantile(kept - full, [0.05, 0.95]),
            [overall["delta_low"][0], overall["delta_high"][0]],
            rtol=0,
            atol=1e-12,
        )
        assert overall["delta_low"][0] < overall["delta"][0] < overall["delta_high"][0]


def test_without_leakage_no_file_is_added(prefect_server, checked, tmp_path):
    out = tmp_path / "plain"
    res = CliRunner().invoke(app, ["analyze", str(checked / "runs"), "--out", str(out), "--resamples", "200"])
    assert res.exit_code == 0, res.output
    assert not (out / "leak_free.csv").exists()
    assert "leak_free" not in json.loads((out / "tables.json").read_text())
    assert "leakage" not in json.loads((out / "manifest.json").read_text())["config"]


def test_a_dataset_with_every_query_excluded_has_no_clean_score():
    from terazi.analysis.leak_free import leak_free

    pq = pl.DataFrame(
        {
            "system": ["s"] * 4,
            "dataset": ["x", "x", "y", "y"],
            "condition": ["clean"] * 4,
            "query_id": ["1", "2", "1", "2"],
            "value": [1.0, 0.0, 0.5, 0.25],
        }
    )
    out = leak_free(pq, ["x", "y"], ["x", "y"], {"x": {"1", "2"}, "y": {"2"}}, ["s"], 200, 0, 0.95)
    rows = {r["dataset"]: r for r in out.iter_rows(named=True)}
    assert rows[None]["leak_free"] is None and rows["x"]["leak_free"] is None
    assert rows["y"]["leak_free"] == 0.5 and rows["y"]["full"] == 0.375 and rows["y"]["excluded"] == 1
    assert rows[None]["full"] == pytest.approx((0.5 + 0.375) / 2)


def test_bad_leakage_folders_are_one_line_each_before_any_results(checked, tmp_path):
    (tmp_path / "empty").mkdir()
    other = tmp_path / "other"
    shutil.copytree(checked / "leak", other)
    summary = json.loads((other / "summary.json").read_text())
    summary["datasets"] = [d for d in summary["datasets"] if d["name"] != "beta"]
    (other / "summary.json").write_text(json.dumps(summary))
    cut = tmp_path / "cut"
    shutil.copytree(checked / "leak", cut)
    (cut / "alpha" / "queries.txt").unlink()
    binary = tmp_path / "binary"
    shutil.copytree(checked / "leak", binary)
    (binary / "beta" / "queries.txt").write_bytes(b"beta-q00\n\xff\n")
    cases = {
        str(tmp_path / "nope"): "is not a folder",
        str(tmp_path / "empty"): "summary.json: not found: leakage names the output folder of `terazi leakage",
        str(other): "has no dataset 'beta' (it checked: alpha)",
        str(cut): "alpha/queries.txt: not found",
        str(binary): "beta/queries.txt, line 2: not valid UTF-8 (byte 0xff",
    }
    for folder, expected in cases.items():
        res = CliRunner().invoke(
            app, ["analyze", str(checked / "runs"), "--out", str(tmp_path / "o"), "--leakage", folder]
        )
        lines = [x for x in res.output.splitlines() if x.strip()]
        assert res.exit_code == 2 and len(lines) == 1 and expected in lines[0].replace("\n", ""), res.output
        assert not (tmp_path / "o").exists()


def test_a_run_leaves_out_what_the_check_of_its_dataset_found(prefect_server, tmp_path, caplog):
    """`terazi run --leakage`: the lists are read in the preflight (a check of another corpus is refused there) and
    the clean-subset headline is the score of the filtered run files the run exports."""
    from terazi.base.errors import DatasetError
    from terazi.config.preflight import preflight
    from terazi.schemas import EvalConfig
    from tests.conftest import TINY_QUERIES, make_tiny

    data = make_tiny(tmp_path / "tiny")
    train = jsonl(
        tmp_path / "train.jsonl",
        [
            {"text": None, "query": TINY_QUERIES[0][1]},  # q1 repeated exactly
            {"text": "İstanbul'un fethi. İstanbul 1453 yılında II. Mehmed tarafından fethedildi.", "query": None},
        ],
    )  # d7, q3's relevant passage
    write(
        check([load_beir(data, name="tiny")], [TrainSource(path=str(train), fields=("text", "query"))]),
        tmp_path / "leak",
    )
    old_spelling = {"exclude": str(tmp_path / "leak"), "exclude_by": "relevant"}  # read as `leakage`, `leakage_by`
    config = EvalConfig.model_validate(
        tiny_config(tmp_path, data, bootstrap_resamples=300, run_name="r", **old_spelling)
    )
    assert config.leakage == str(tmp_path / "leak") and config.leakage_by == "relevant"
    assert "`exclude` is deprecated, read as `leakage`" in caplog.text
    other = write_beir(
        tmp_path / "other", [{"_id": "d1", "text": "başka"}], [{"_id": "q1", "text": "x"}], [("q1", "d1", 1)]
    )
    write(
        check([load_beir(other, name="tiny")], [TrainSource(path=str(train), fields=("text", "query"))]),
        tmp_path / "leak-other",
    )
    with pytest.raises(DatasetError, match="checked with another corpus"):
        preflight(config.model_copy(update={"leakage": str(tmp_path / "leak-other")}), announce=False)

    from terazi.flows.evaluate import evaluate

    run = evaluate(config).run_dir
    deco = pl.read_csv(f"{run}/leak_free.csv")
    assert deco.filter(pl.col("dataset") == "tiny")["excluded"].to_list() == [2, 2]  # q1 and q3, each system
    for system in ("first-stage", "bm25"):
        lines = open(f"{run}/runs/tiny/clean/{system}.trec").read().splitlines()
        kept = [x for x in lines if x.split()[0] not in ("q1", "q3")]
        (tmp_path / "kept.trec").write_text("\n".join(kept) + "\n")
        qrels = [x for x in open(f"{run}/qrels/tiny.tsv").read().splitlines() if x.split()[0] not in ("q1", "q3")]
        (tmp_path / "kept.qrels").write_text("\n".join(qrels) + "\n")
        value = terazi.score(tmp_path / "kept.qrels", tmp_path / "kept.trec", [HEADLINE]).aggregate[HEADLINE]
        row = deco.filter((pl.col("system") == system) & (pl.col("dataset") == "tiny"))
        assert abs(row["leak_free"][0] - value) < 1e-12


def test_the_leakage_folder_is_checked_before_prefect_and_by_a_served_policy(tmp_path, tiny_dataset):
    from terazi.base.errors import PolicyError
    from terazi.config.policy import ServicePolicy
    from terazi.schemas import EvalConfig

    res = CliRunner().invoke(
        app,
        [
            "run",
            "--dataset",
            str(tiny_dataset),
            "--reranker",
            "bm25",
            "--out",
            str(tmp_path / "out"),
            "--cache",
            str(tmp_path / "cache"),
            "--offline",
            "--leakage",
            str(tmp_path / "nope"),
        ],
    )
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and "is not a folder" in lines[0], res.output
    assert "starting Prefect" not in res.output
    policy = ServicePolicy(
        data_roots=[str(tiny_dataset.parent)], results_root=str(tmp_path / "out"), cache_root=str(tmp_path / "cache")
    )
    config = EvalConfig.model_validate(
        {
            "datasets": [{"path": str(tiny_dataset)}],
            "out_dir": str(tmp_path / "out"),
            "cache_dir": str(tmp_path / "cache"),
        }
    )
    assert policy.apply(config).leakage is None
    inside = tmp_path / "out" / "leak"
    assert policy.apply(config.model_copy(update={"leakage": str(inside)})).leakage == str(inside)
    with pytest.raises(PolicyError, match="leakage '/etc': outside the service's data roots and results root"):
        policy.apply(config.model_copy(update={"leakage": "/etc"}))
