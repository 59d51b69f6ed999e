"""Parity with MTEB itself (mteb 2.x, installed by the test extra) on a local set where every relevant passage has an
exact copy under another id: the same bi-encoder in both, MTEB's `evaluate` against terazi's first stage, per query;
MTEB's saved predictions as terazi's first stage (figures then equal to 1e-12); the results folder's MTEB result files,
loaded by `mteb` and read back by `terazi leaderboard` to the run's own table."""

from __future__ import annotations

import json
import math
import subprocess

import numpy as np
import polars as pl
import pytest

from terazi.data.beir import write_beir
from terazi.data.loading import load_dataset
from terazi.metrics.engine import evaluate
from tests.conftest import TERAZI
from tests.mteb_local import mteb_per_query, run_mteb
from tests.rescore import disagreements

TOPICS = [
    "Çay Rize'de yetişir ve mayısta toplanır.",
    "Ağrı Dağı Türkiye'nin en yüksek dağıdır.",
    "İstanbul 1453'te fethedildi.",
    "Ispanak demir bakımından zengindir.",
    "Satrançta amaç şahı mat etmektir.",
    "Kapadokya peri bacalarıyla ünlüdür.",
    "Van Gölü sodalı bir göldür.",
    "Türk kahvesi cezvede pişirilir.",
    "Efes antik kenti İzmir yakınındadır.",
    "Boğaz Karadeniz'i Marmara'ya bağlar.",
    "Simit susamlı bir halkadır.",
    "Pamukkale travertenleriyle bilinir.",
    "Erciyes Kayseri'dedir, kayak merkezi vardır.",
    "Baklava fıstıkla yapılır.",
    "Kız Kulesi Üsküdar açıklarındadır.",
    "Nemrut Dağı heykelleriyle ünlüdür.",
]
QUERIES = [
    "çay nerede yetişir",
    "en yüksek dağ hangisi",
    "istanbul ne zaman fethedildi",
    "ıspanakta demir var mı",
    "satrancın amacı ne",
    "peri bacaları nerede",
    "sodalı göl",
    "kahve nasıl pişirilir",
    "efes nerede",
    "boğaz neyi bağlar",
    "simit nedir",
    "pamukkale neyle bilinir",
    "erciyes nerede",
    "baklava neyle yapılır",
    "kız kulesi nerede",
    "nemrut neyle ünlü",
]


def duplicated(root):
    """Every passage twice, as p<i> and c<i>; the judged one is p<i> for odd i, c<i> for even i, so under the
    field's rule (document id descending: p before c) the relevant copy ranks first for odd queries, second for
    even ones, wherever the two tie."""
    docs = [{"_id": f"{k}{i}", "text": t} for i, t in enumerate(TOPICS) for k in ("p", "c")]
    qrels = [(f"q{i}", f"p{i}" if i % 2 else f"c{i}", 1) for i in range(len(TOPICS))]
    return write_beir(root, docs, [{"_id": f"q{i}", "text": q} for i, q in enumerate(QUERIES)], qrels)


def alike(a: dict[str, float], b: dict[str, float]) -> bool:
    """Two scorings of the same documents order every pair alike, ties included (as float32, the models' own)."""
    docs = sorted(a)
    x, y = (np.array([np.float32(s[d]) for d in docs]) for s in (a, b))
    return bool((np.sign(x[:, None] - x[None, :]) == np.sign(y[:, None] - y[None, :])).all())


def test_first_stage_equals_mteb_per_query_on_duplicated_passages(tmp_path, minilm_path):
    from terazi.corrupt.variants import corrupt_queries
    from terazi.schemas import CorruptionSpec, DatasetSpec, EncoderSpec
    from tests.stages import first_stage

    root = duplicated(tmp_path / "dup")
    _, predictions = run_mteb(root, "TeraziDuplicates", minilm_path, tmp_path / "predictions")
    qrels = {f"q{i}": {f"p{i}" if i % 2 else f"c{i}": 1} for i in range(len(TOPICS))}
    theirs = mteb_per_query(predictions, qrels)

    ds = load_dataset(DatasetSpec(path=str(root), name="dup"), announce=False)
    vs = corrupt_queries(ds, "clean", CorruptionSpec(), 13, str(tmp_path / "out"))
    cand = pl.read_parquet(first_stage(ds, [vs], EncoderSpec(model=minilm_path), 32, str(tmp_path / "cache")).path)
    ours = evaluate(qrels, cand, ["nDCG@10", "RR@10"], order="rank")
    nd, rr = ours.per_query_dict("nDCG@10"), ours.per_query_dict("RR@10")
    scores = {q: dict(part.select("doc_id", "score").iter_rows()) for (q,), part in cand.group_by("query_id")}
    comparable = [q for q in qrels if alike(scores[q], predictions[q])]
    assert len(comparable) >= 0.9 * len(qrels)  # the two batchings order (nearly) every query's documents alike
    for q in comparable:
        assert abs(nd[q] - theirs[q][0]) <= 1e-6 and abs(rr[q] - theirs[q][1]) <= 1e-6, q
    # the ties are real and decide the figures: each passage ties its copy in both, and p<i> sits right above c<i>
    # as the rule says, so the judged copy is first of the two for odd queries, second for even ones (a first-stage
    # or ascending order would move half of them)
    tied = [q for q in comparable if len({scores[q][d] for d in (f"p{q[1:]}", f"c{q[1:]}")}) == 1]
    assert len(tied) >= 0.75 * len(qrels)
    for q in tied:
        rank = dict(cand.filter(pl.col("query_id") == q).select("doc_id", "rank").iter_rows())
        p, c = rank[f"p{q[1:]}"], rank[f"c{q[1:]}"]
        assert p + 1 == c and rr[q] == 1 / (p if int(q[1:]) % 2 else c)
        assert nd[q] == pytest.approx(1 / math.log2(1 + (p if int(q[1:]) % 2 else c)), abs=1e-15)


def test_mteb_predictions_as_first_stage_and_mteb_result_files(prefect_server, tmp_path, minilm_path):
    """MTEB's saved predictions frozen as the first stage: the first-stage row equals MTEB's evaluator per query to
    1e-12 and its result to its printed precision; a BM25 row reranks those very candidates. The results folder's
    MTEB files load with mteb and `terazi leaderboard` reads them back to the run's leaderboard; every run file,
    rescored with pytrec_eval and ranx, gives terazi's figures."""
    import mteb
    from mteb.results import TaskResult

    import terazi
    from terazi.data.mteb_results import read_mteb_results
    from terazi.results.board import load_board

    root = duplicated(tmp_path / "dup")
    task = tmp_path / "predictions"
    scores, predictions = run_mteb(root, "TeraziDuplicates", minilm_path, task)
    qrels = {f"q{i}": {f"p{i}" if i % 2 else f"c{i}": 1} for i in range(len(TOPICS))}
    theirs = mteb_per_query(predictions, qrels)
    out = tmp_path / "results"
    manifest, _ = terazi.evaluate(
        {
            "datasets": [{"path": str(root), "name": "dup", "first_stage_runs": str(task)}],
            "rerankers": [
                {"name": "bm25", "kind": "bm25"},
                {"name": "fused", "kind": "rrf", "fuse": ["first-stage", "bm25"]},
            ],
            "conditions": ["clean"],
            "depth": 20,
            "rerank_depth": 10,
            "metrics": ["nDCG@10", "RR@10", "R@20"],
            "bootstrap_resamples": 200,
            "out_dir": str(out),
            "cache_dir": str(tmp_path / "cache"),
            "run_name": "run",
            "offline": True,
        }
    )
    run = out / "run"
    assert manifest.candidates[0].encoder_identity.startswith("mteb-predictions:")
    pq = pl.read_parquet(run / "per_query.parquet").filter(pl.col("system") == "first-stage")
    for measure, i in (("nDCG@10", 0), ("RR@10", 1)):
        ours = dict(pq.filter(pl.col("measure") == measure).select("query_id", "value").iter_rows())
        assert ours.keys() == theirs.keys()
        assert max(abs(ours[q] - theirs[q][i]) for q in ours) <= 1e-12
    board = pl.read_csv(run / "leaderboard.csv")
    figure = board.filter(pl.col("system") == "first-stage")["dup"].item()
    assert figure == pytest.approx(scores["ndcg_at_10"], abs=5e-6)  # MTEB rounds its means to 5 decimals

    # the MTEB result files: loaded by mteb, and read back by `terazi leaderboard` as the run's own table
    files = sorted((run / "mteb" / "results").glob("*/*/dup.json"))
    assert {f.parent.parent.name for f in files} == set(board["system"])
    for f in files:
        result = TaskResult.from_disk(f)
        entry = result.scores["test"][0]
        system = f.parent.parent.name
        assert result.get_score() == board.filter(pl.col("system") == system)["dup"].item()
        means = (
            pl.read_parquet(run / "per_query.parquet")
            .filter(pl.col("system") == system)
            .group_by("measure")
            .agg(pl.col("value").mean())
        )
        assert {k: entry[k] for k in ("ndcg_at_10", "mrr_at_10", "recall_at_20")} == dict(
            zip(
                ["ndcg_at_10", "mrr_at_10", "recall_at_20"],
                [means.filter(pl.col("measure") == m)["value"].item() for m in ("nDCG@10", "RR@10", "R@20")],
            )
        )
    loaded = mteb.ResultCache(run / "mteb").load_results(include_remote=False)
    assert {r.model_name for r in loaded.model_results} == set(board["system"])
    again, _ = load_board(run / "mteb", task_types={"dup": "retrieval"})
    cols = ["system", "borda_votes", "borda_rank", "mean_task", "mean_task_type"]
    assert again.sort("system").select(cols).equals(board.sort("system").select(cols))
    long = read_mteb_results(run / "mteb").select("system", pl.col("score").alias("dup"))
    assert long.sort("system").equals(board.sort("system").select("system", "dup"))
    printed = subprocess.run(
        [
            *TERAZI,
            "leaderboard",
            str(run / "mteb"),
            "--format",
            "csv",
            "--task-type",
            "dup=retrieval",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert printed.returncode == 0 and "first-stage" in printed.stdout

    compared, worst = disagreements(run)
    assert worst <= 1e-12 and compared["pytrec nDCG@10"] == 3 * len(qrels) and compared["ranx RR@10"] > 0
    assert json.loads((run / "manifest.json").read_text())["datasets"][0]["ignore_identical_ids"] is False


def test_mteb_predictions_files_are_read_or_refused_by_file(tmp_path):
    from terazi.base.errors import DatasetError
    from terazi.data.mteb_predictions import predictions_file, read_predictions

    meta = {"mteb_model_meta": {"model_name": "m", "revision": "r"}}
    path = tmp_path / "T_predictions.json"
    path.write_text(json.dumps({**meta, "default": {"test": {"q1": {"d1": 0.5, "d2": 0.25}}}}))
    run, model = read_predictions(predictions_file(tmp_path), "test")
    assert model == "m@r" and run.rows() == [("q1", "d1", 0.5), ("q1", "d2", 0.25)]
    for body, problem in (
        ({**meta, "a": {"test": {}}, "b": {"test": {}}}, "holds subsets a, b"),
        ({**meta, "default": {"dev": {}}}, "has no split 'test' \\(it has: dev\\)"),
        ({**meta, "default": {"test": {"q1": {"d1": "x"}}}}, "is not a number"),
        ({"default": {}}, "no mteb_model_meta"),
    ):
        path.write_text(json.dumps(body))
        with pytest.raises(DatasetError, match=problem):
            read_predictions(path, "test")
    (tmp_path / "U_predictions.json").write_text("{}")
    with pytest.raises(DatasetError, match="MTEB predictions of 2 tasks"):
        predictions_file(tmp_path)
    from terazi.retrieval.external import read_candidates

    path.write_text(json.dumps({**meta, "default": {"test": {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.75}}}}))
    variants = pl.DataFrame({"condition": ["clean", "upper"], "sample": [0, 0], "query_id": ["q1", "q1"]})
    none = pl.DataFrame(schema={"query_id": pl.Utf8, "doc_id": pl.Utf8})
    docs = pl.Series(["d1", "d2", "d3"])
    cand, _ = read_candidates(path, variants.head(1), docs, 2, none)
    assert cand["doc_id"].to_list() == ["d3", "d2"]  # d2 and d1 tie: the larger id makes the cut
    with pytest.raises(DatasetError, match="MTEB predictions hold the clean queries only for condition 'upper'"):
        read_candidates(path, variants, docs, 2, none)
