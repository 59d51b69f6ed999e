"""Rerankers served over HTTP (`kind: http`), tested against a real rerank server: Infinity (`infinity-emb` from the
registry, in a virtual environment of its own, tests/rerank_server.py) serving the tiny test cross-encoder, with an
API key. Its scores are checked against terazi's in-process cross-encoder on the same model; the requests it
answered are counted at its Prometheus `/metrics`. A proxy between terazi and the server injects a service's faults:
429 with Retry-After, 5xx, a time-out, a dropped connection, a refusal, a malformed answer.

The tests skip, saying why, where the server cannot be installed; tests/test_http_contract.py tests the dialects,
the Retry-After reading, the spec's checks and the service policy without it.
"""

from __future__ import annotations

import json
import logging
import math
import os
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from terazi.base.errors import ServiceError
from terazi.rerank.backends import make_scorer
from terazi.rerank.pairs import Pair, PartlyScored
from terazi.rerank.store import ModelKey, Scores
from terazi.schemas import EvalConfig
from tests.conftest import tiny_config
from tests.rerank_server import KEY_ENV, FaultProxy, Infinity, http_spec, infinity_executable
from tests.stages import rerank_row
from tests.test_rerank import inputs

KEY = "tz-key-" + secrets.token_hex(12)  # the server requires it; no file, log or message may ever hold it


# ---------------------------------------------------------------- against the real server


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """Everything this module's runs write (results, caches, logs): the key is looked for in all of it at the end."""
    return tmp_path_factory.mktemp("http-reranker")


@pytest.fixture(scope="module")
def log_file(work):
    """Every log record of terazi (INFO and up) and of httpx and httpcore (DEBUG and up: they see the requests and
    their headers) in the module's tests, in one file. Their own levels (pytest resets the root logger's after each
    phase); httpx's and httpcore's records go to this file only, not to the console handlers of other tests."""
    handler = logging.FileHandler(work / "logs.txt", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    wanted = {"terazi": (logging.INFO, True), "httpx": (logging.DEBUG, False), "httpcore": (logging.DEBUG, False)}
    saved = {n: (logging.getLogger(n).level, logging.getLogger(n).propagate) for n in wanted}
    for name, (level, propagate) in wanted.items():
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
    yield work / "logs.txt"
    for name, (level, propagate) in saved.items():
        logger = logging.getLogger(name)
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
    handler.close()


@pytest.fixture(scope="module")
def server(work, tiny_cross_encoder, log_file):
    executable = infinity_executable()
    os.environ[KEY_ENV] = KEY
    infinity = Infinity(executable, tiny_cross_encoder, "tiny-ce", KEY, work / "infinity.log")
    yield infinity
    infinity.stop()
    os.environ.pop(KEY_ENV, None)


@pytest.fixture
def proxy(server):
    p = FaultProxy(server.url)
    yield p
    p.stop()


def flow_config(work: Path, rows: list[dict], run: str, tiny_dataset: Path, **kw) -> EvalConfig:
    fields = {"rerankers": rows, "corruption": {"samples": 1}, "run_name": run, **kw}
    return EvalConfig.model_validate(tiny_config(work, tiny_dataset, **fields))


def rankings(manifest, system: str) -> pl.DataFrame:
    return pl.read_parquet(Path(manifest.run_dir) / "rankings" / "tiny" / f"{system}.parquet")


def values(manifest, system: str) -> pl.DataFrame:
    board = pl.read_parquet(Path(manifest.run_dir) / "per_query.parquet").filter(pl.col("system") == system)
    return board.drop("system").sort(board.drop("system", "value").columns)


@pytest.fixture(scope="module")
def clean_run(prefect_server, server, work, tiny_cross_encoder):
    """The in-process cross-encoder and the same model served by Infinity, side by side in one run."""
    from terazi.flows.evaluate import evaluate
    from tests.conftest import make_tiny

    dataset = make_tiny(work / "tiny")
    rows = [
        {"name": "tiny-ce", "kind": "cross-encoder", "model": tiny_cross_encoder, "max_length": 512},
        {
            "name": "served",
            "kind": "http",
            "url": f"{server.url}/rerank",
            "model": "tiny-ce",
            "api_key_env": KEY_ENV,
            "batch_size": 4,
            "concurrency": 2,
        },
    ]
    before = server.requests()
    manifest = evaluate(flow_config(work, rows, "r1", dataset))
    return manifest, server.requests() - before, rows, dataset


def test_a_served_cross_encoder_ranks_as_the_in_process_one_and_a_rerun_sends_nothing(server, work, clean_run):
    from terazi.flows.evaluate import evaluate

    m1, sent, rows, dataset = clean_run
    local, served = rankings(m1, "tiny-ce"), rankings(m1, "served")
    assert local.select("condition", "sample", "query_id", "rank", "doc_id").equals(
        served.select("condition", "sample", "query_id", "rank", "doc_id")
    )
    head = local.filter(pl.col("rank") <= 5)
    diff = np.abs(head["score"].to_numpy() - served.filter(pl.col("rank") <= 5)["score"].to_numpy())
    assert head.height == 60 and diff.max() < 1e-6  # 4 queries × 3 settings (clean, upper, upper~isolated) × 5
    a, b = values(m1, "tiny-ce"), values(m1, "served")
    assert a.drop("value").equals(b.drop("value")) and np.allclose(a["value"], b["value"], atol=1e-12)
    cost = next(r.cost for r in m1.reranks if r.system == "served")
    # the distinct (query text, document) pairs: upper~isolated is the upper text on the clean query's candidates;
    # each text's documents go 4 a request (one more where a text straddles two scoring blocks of 32 pairs)
    texts = (
        head.with_columns(
            pl.when(pl.col("condition") == "clean").then(pl.lit("clean")).otherwise(pl.lit("upper")).alias("text")
        )
        .select("text", "query_id", "doc_id")
        .unique()
    )
    per_text = texts.group_by("text", "query_id").len()["len"].to_list()
    least = sum(-(-n // 4) for n in per_text)
    assert cost.items == texts.height == next(r.pairs_scored for r in m1.reranks if r.system == "served")
    assert sent == cost.requests.requests and least <= sent <= least + 1 and cost.requests.retries == 0
    assert cost.device == "remote" and cost.requests.p50_ms > 0
    csv = pl.read_csv(Path(m1.run_dir) / "costs.csv").filter(pl.col("system") == "served")
    assert csv.select("requests", "retries").row(0) == (sent, 0)
    assert (
        next(r.identity for r in m1.reranks if r.system == "served") == f"http:cohere:tiny-ce@{server.url}/rerank:rev=-"
    )

    before = server.requests()
    m2 = evaluate(flow_config(work, rows, "r2", dataset))  # a warm rerun
    m3 = evaluate(flow_config(work, rows, "r3", dataset, rerank_depth=3))  # another depth: pairs it shares
    assert server.requests() == before  # counted at the server: not one request
    assert rankings(m2, "served").equals(served)
    assert all(r.pairs_scored == 0 for m in (m2, m3) for r in m.reranks if r.system == "served")
    assert next(r.cost for r in m2.reranks if r.system == "served").cached


def test_a_run_through_429s_and_500s_ends_as_a_clean_one_and_counts_its_retries(server, proxy, work, clean_run):
    from terazi.flows.evaluate import evaluate

    m1, sent, rows, dataset = clean_run
    proxy.inject(
        ("status", 429, {"Retry-After": "1"}, {"message": "slow down"}),
        ("status", 500, {}, {"message": "boom"}),
        ("status", 503, {"Retry-After": "0"}, {"detail": "warming up"}),
        ("status", 429, {"Retry-After": "1"}, {"message": "slow down"}),
    )
    faulty = [{**rows[1], "url": f"{proxy.url}/rerank"}]  # another endpoint: every pair is asked for again
    m = evaluate(flow_config(work, faulty, "faults", dataset))
    assert rankings(m, "served").equals(rankings(m1, "served"))
    assert values(m, "served").equals(values(m1, "served"))
    cost = next(r.cost for r in m.reranks if r.system == "served")
    assert (cost.requests.requests, cost.requests.retries) == (sent, 4) and len(proxy.seen) == sent + 4
    csv = pl.read_csv(Path(m.run_dir) / "costs.csv").filter(pl.col("system") == "served")
    assert csv.select("requests", "retries").row(0) == (sent, 4)
    assert f"{sent} requests, 4 retries" in (Path(m.run_dir) / "report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "fault",
    [
        ("status", 429, {"Retry-After": "1"}, {"message": "rate limited"}),
        ("status", 500, {}, {"message": "internal error"}),
        ("pause", 20.0),  # longer than the client's timeout
        ("drop",),
    ],
    ids=["429-retry-after", "500", "timeout", "dropped-connection"],
)
def test_each_passing_fault_is_retried_and_the_scores_are_the_servers(server, proxy, tmp_path, fault):
    pairs = [Pair(q, f"d{i}", f"belge {i} {q}") for q in ("çay", "dağ") for i in range(4)]
    direct = make_scorer(http_spec(f"{server.url}/rerank"), None, "x", True, str(tmp_path)).score(pairs)
    proxy.inject(fault)
    # a timeout the server's real answers meet even on a loaded machine (1 s did not, under two test workers)
    timeout = 6.0
    scorer = make_scorer(
        http_spec(f"{proxy.url}/rerank", timeout=timeout, concurrency=1), None, "x", True, str(tmp_path)
    )
    got = scorer.score(pairs)
    assert np.array_equal(got, direct)
    assert scorer.request_log.since().retries == 1 and len(proxy.seen) == 3  # 2 requests, one of them twice
    gap = proxy.seen[1]["t"] - proxy.seen[0]["t"]
    if fault[0] == "status" and fault[1] == 429:
        assert gap >= 1.0  # Retry-After honoured
    if fault[0] == "pause":
        assert timeout <= gap < 20.0  # gave up waiting after the timeout, not after the pause


def test_a_request_that_fails_for_good_fails_its_chunk_and_keeps_what_was_answered(
    server, proxy, tmp_path, tiny_dataset
):
    ds, cands, variants, _ = inputs(tiny_dataset)
    spec = http_spec(f"{proxy.url}/rerank", concurrency=1, retries=1)
    proxy.inject(("pass",), ("pass",), ("pass",), *[("status", 503, {}, {"message": "down for good"})] * 2)
    with pytest.raises(
        ServiceError,
        match=r"^served \(http://127\.0\.0\.1:\d+/rerank\): gave up after 2 tries "
        r"\(the last: 503 Service Unavailable: down for good\)",
    ):
        rerank_row(ds, cands, variants, spec, tmp_path, rerank_depth=10)
    answered = sum(s["documents"] for s in proxy.seen if s["fault"] in (None, "pass"))
    model = make_scorer(spec, None, "x", True, str(tmp_path / "cache"))
    # the first query's 10 documents in 3 requests, and any request the worker had begun when the 4th failed
    assert answered >= 10 and Scores(tmp_path / "cache").local.count(ModelKey(model.identity, 0)) == answered
    proxy.reset()
    result, ranking = rerank_row(ds, cands, variants, spec, tmp_path, rerank_depth=10)
    assert result.pairs_scored == 80 - answered == sum(s["documents"] for s in proxy.seen)  # the rest only
    direct, _ = rerank_row(ds, cands, variants, http_spec(f"{server.url}/rerank"), tmp_path / "direct", rerank_depth=10)
    # a server's scores depend on what else shares the batch (padding) in the last bits: the same pairs, scores
    # equal to 1e-6, each ranking ordered by its own scores
    keys = ["condition", "sample", "query_id", "doc_id"]
    both = ranking.join(pl.read_parquet(direct.path), on=keys, suffix="_direct", how="full", coalesce=True)
    assert both.height == ranking.height and np.allclose(both["score"], both["score_direct"], rtol=0, atol=1e-6)
    by_rank = ranking.sort(["condition", "sample", "query_id", "rank"])
    assert (
        by_rank.group_by(["condition", "sample", "query_id"])
        .agg(pl.col("score").diff().max())
        .filter(pl.col("score") > 0)
        .is_empty()
    )


def test_a_refusal_fails_at_once_with_one_line_and_the_key_blotted(prefect_server, server, proxy, work):
    """A 4xx other than 429, through the command line: one `error:` line with the status and the server's words
    (here echoing the Authorization header), one request sent."""
    from terazi.cli import app
    from tests.conftest import make_tiny

    proxy.inject(*[("status", 400, {}, lambda h: {"message": f"unknown model; you sent {h['Authorization']}"})] * 99)
    os.environ["TERAZI_API_KEY"] = KEY
    try:
        result = CliRunner().invoke(
            app,
            [
                "run",
                "--dataset",
                str(make_tiny(work / "tiny-cli")),
                "--out",
                str(work / "results" / "cli"),
                "--cache",
                str(work / "cache"),
                "--offline",
                "--depth",
                "10",
                "--rerank-depth",
                "5",
                "--reranker",
                f"http:tiny-ce@{proxy.url}/rerank=served",
            ],
        )
    finally:
        del os.environ["TERAZI_API_KEY"]
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "ServiceError" not in result.output  # no traceback of it
    assert (
        f"served ({proxy.url}/rerank) answered 400 Bad Request: unknown model; you sent Bearer ***"
        in result.output.replace("\n", "")
    )
    bodies = [r["body"] for r in proxy.seen]
    assert KEY not in result.output and len(set(bodies)) == len(bodies)  # no request sent twice (all in flight: 400)
    (work / "cli-output.txt").write_text(result.output, encoding="utf-8")  # looked through for the key at the end


@pytest.mark.parametrize(
    "how, problem",
    [
        (lambda a: json.dumps({**a, "results": a["results"][1:]}), "3 results for 4 documents"),
        (
            lambda a: json.dumps(
                {**a, "results": [{k: v for k, v in r.items() if k != "index"} for r in a["results"]]}
            ),
            "result index None",
        ),
        (
            lambda a: json.dumps({**a, "results": [{**r, "relevance_score": math.nan} for r in a["results"]]}),
            "is nan, not a finite number",
        ),
    ],
    ids=["wrong-count", "missing-index", "nan"],
)
def test_a_malformed_answer_is_refused_and_nothing_of_it_is_kept(server, proxy, tmp_path, how, problem):
    pairs = [Pair("çay", f"d{i}", f"belge {i}") for i in range(4)]
    proxy.inject(("garble", how))
    scorer = make_scorer(http_spec(f"{proxy.url}/rerank", concurrency=1), None, "x", True, str(tmp_path))
    with pytest.raises(PartlyScored) as caught:
        scorer.score(pairs)
    assert isinstance(caught.value.error, ServiceError) and problem in str(caught.value.error)
    assert "malformed answer" in str(caught.value.error) and np.isnan(caught.value.scores).all()
    assert len(proxy.seen) == 1  # refused, not retried


def test_requests_in_flight_are_bounded_per_endpoint_across_processes(server, tmp_path):
    """Two worker processes (as a Dask cluster's), each allowed 2 requests at once to one endpoint through one cache
    folder: the endpoint never sees more than 2."""
    proxy = FaultProxy(server.url, pause_each=0.3)
    script = (
        "import os, sys; os.environ['HF_HUB_OFFLINE'] = '1'\n"
        "from terazi.rerank.backends import make_scorer\n"
        "from terazi.rerank.pairs import Pair\n"
        "from tests.rerank_server import http_spec\n"
        "pairs = [Pair(f'q{i}', 'd', 'belge') for i in range(8)]\n"
        "out = make_scorer(http_spec(sys.argv[1], batch_size=1), None, 'x', True, sys.argv[2]).score(pairs)\n"
        "assert len(out) == 8\n"
    )
    try:
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", script, f"{proxy.url}/rerank", str(tmp_path)],
                cwd=Path(__file__).parents[1],
                env={**os.environ},
            )
            for _ in range(2)
        ]
        assert [p.wait(timeout=120) for p in procs] == [0, 0]
        assert len(proxy.seen) == 16 and proxy.most_in_flight == 2
    finally:
        proxy.stop()
    threads_proxy = FaultProxy(server.url, pause_each=0.3)
    try:
        scorers = [
            make_scorer(http_spec(f"{threads_proxy.url}/rerank", name=n, batch_size=1), None, "x", True, str(tmp_path))
            for n in ("a", "b")
        ]
        pairs = [Pair(f"q{i}", "d", "belge") for i in range(6)]
        threads = [threading.Thread(target=s.score, args=(pairs,)) for s in scorers]
        [t.start() for t in threads]
        [t.join(timeout=120) for t in threads]
        assert len(threads_proxy.seen) == 12 and threads_proxy.most_in_flight == 2
    finally:
        threads_proxy.stop()


def test_the_key_is_in_no_file_log_or_artifact(server, work, log_file, clean_run):
    """Every file of the module's results folders and cache, its log records (DEBUG, httpx's included), the
    command line's output, the Prefect database and the runs' artifacts: the key the server required is nowhere,
    though every request carried it."""
    from tests.conftest import artifacts_of

    m1 = clean_run[0]
    logged = log_file.read_text(encoding="utf-8")
    assert "HTTP Request: POST" in logged and "trying again" in logged  # the requests and the retries are in it
    home = Path(os.environ["PREFECT_HOME"])
    from prefect.settings import PREFECT_SERVER_DATABASE_CONNECTION_URL

    url = PREFECT_SERVER_DATABASE_CONNECTION_URL.value()
    db = str(getattr(url, "get_secret_value", lambda: url)()).split("///")[-1]
    looked = [
        p for root in (work / "results", work / "cache", home, Path(db).parent) for p in root.rglob("*") if p.is_file()
    ] + [log_file, work / "cli-output.txt"]
    assert len(looked) > 50 and any(p.suffix == ".db" for p in looked)
    time.sleep(2)  # the Prefect server writes logs and events in batches
    holding = [str(p) for p in looked if KEY.encode() in p.read_bytes()]
    assert holding == []
    assert KEY.encode() in Path(f"/proc/{server.proc.pid}/cmdline").read_bytes()  # the search finds it where it is
    artifacts = artifacts_of(m1.flow_run_id)
    assert artifacts and not any(KEY in str(a.data) for a in artifacts.values())
