"""Listwise rows through the flow: in process, and against a real chat server (Hugging Face's `transformers serve`,
built once per machine by scripts/chat-server; those tests skip until it is), with the tiny random chat model
(`tests.conftest.tiny_chat_lm`). A random model rarely answers a permutation: the answers' parse and outcomes are
proven against RankLLM's in tests/test_listwise.py; here the plumbing, the counts, the store and the key."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import polars as pl
import pytest

from terazi.schemas import EvalConfig, ListwiseSpec

# ---------------------------------------------------------------- a listwise row in the flow, in process


def listwise_config(work: Path, rows: list[dict], run: str, dataset: Path) -> EvalConfig:
    """The tiny dataset's clean queries, 10 candidates each: windows of 4 by 2, four a query."""
    return EvalConfig.model_validate(
        {
            "datasets": [{"path": str(dataset), "name": "tiny"}],
            "rerankers": rows,
            "conditions": ["clean"],
            "depth": 10,
            "rerank_depth": 10,
            "out_dir": str(work / "results"),
            "cache_dir": str(work / "cache"),
            "run_name": run,
            "offline": True,
        }
    )


WINDOWS = 4 * 4  # 4 clean queries, 4 windows each
ROW = {"kind": "listwise", "prompt": "rank_zephyr", "window": 4, "stride": 2}


def listwise_cost(manifest, system: str):
    return next(r for r in manifest.reranks if r.system == system).cost.listwise


def heads(manifest, system: str) -> pl.DataFrame:
    """Each query's reranked head: its documents in order and its scores."""
    ranking = pl.read_parquet(Path(manifest.run_dir) / "rankings" / "tiny" / f"{system}.parquet")
    return (
        ranking.filter(pl.col("rank") <= 10)
        .sort("query_id", "rank")
        .group_by("query_id", maintain_order=True)
        .agg("doc_id", "score")
    )


@pytest.fixture(scope="module")
def local_run(prefect_server, tiny_chat_lm, tmp_path_factory):
    from terazi.flows.evaluate import evaluate
    from tests.conftest import make_tiny

    work = tmp_path_factory.mktemp("listwise")
    dataset = make_tiny(work / "tiny")
    rows = [{"name": "lw-local", "model": tiny_chat_lm, **ROW}]
    return work, dataset, rows, evaluate(listwise_config(work, rows, "r1", dataset))


def test_an_in_process_row_ranks_each_list_strictly_and_counts_its_answers_in_every_output(local_run):
    from tests.conftest import artifacts_of

    work, dataset, rows, manifest = local_run
    answers = listwise_cost(manifest, "lw-local")
    assert answers.windows == answers.requests == WINDOWS
    assert answers.ok + answers.wrong_format + answers.repetition + answers.missing_documents == WINDOWS
    assert answers.prompt_tokens > 0 and answers.completion_tokens > 0
    for scores in heads(manifest, "lw-local")["score"].to_list():
        assert len(scores) == 10 and all(a > b for a, b in zip(scores, scores[1:]))  # strictly decreasing
    costs = pl.read_csv(Path(manifest.run_dir) / "costs.csv").filter(pl.col("system") == "lw-local").row(0, named=True)
    assert (costs["windows"], costs["windows_requests"], costs["ok"]) == (WINDOWS, WINDOWS, answers.ok)
    report = (Path(manifest.run_dir) / "report.html").read_text(encoding="utf-8")
    board = (Path(manifest.run_dir) / "leaderboard.md").read_text(encoding="utf-8")
    assert f"{WINDOWS} windows ({WINDOWS} asked)" in report
    costs_artifact = next(a for k, a in artifacts_of(manifest.flow_run_id).items() if k.endswith("-costs"))
    assert f"{WINDOWS} windows ({WINDOWS} asked)" in str(costs_artifact.data)  # Prefect's artifact shows them too
    if answers.unusable > 0.5:  # a random model rarely answers a permutation: the leaderboard says so
        assert f"lw-local: {WINDOWS - answers.ok} of {WINDOWS} window answers" in board


def test_a_warm_rerun_asks_for_nothing_and_ranks_the_same(local_run):
    from terazi.flows.evaluate import evaluate

    work, dataset, rows, first = local_run
    again = evaluate(listwise_config(work, rows, "r2", dataset))
    answers = listwise_cost(again, "lw-local")
    assert (
        answers.requests == 0
        and answers.windows == WINDOWS
        and answers == listwise_cost(first, "lw-local").model_copy(update={"requests": 0})
    )
    assert heads(again, "lw-local").equals(heads(first, "lw-local"))
    board = [pl.read_csv(Path(m.run_dir) / "leaderboard.csv") for m in (first, again)]
    assert board[0].equals(board[1])


# ---------------------------------------------------------------- against a real chat server

KEY_ENV, KEY = "TERAZI_TEST_CHAT_KEY", "sk-listwise-test-0123456789abcdef"
ROOT = Path(__file__).resolve().parents[1]


class ChatServer:
    """`transformers serve` on a free local port serving `model` (offline), its access log in `log`."""

    def __init__(self, executable: str, model: str, log: Path):
        from tests.rerank_server import free_port

        self.port, self.model, self.log_path = free_port(), model, log
        self.url = f"http://127.0.0.1:{self.port}/v1"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "DO_NOT_TRACK": "1"}
        self.log = log.open("wb")
        self.proc = subprocess.Popen(
            [executable, "serve", model, "--host", "127.0.0.1", "--port", str(self.port), "--device", "cpu"],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.5)
        self.stop()
        pytest.fail(f"transformers serve did not start: {log.read_text(errors='replace')[-2000:]}")

    def posts(self) -> int:
        """Chat completions the server answered, read from its own access log."""
        return self.log_path.read_text(errors="replace").count('"POST /v1/chat/completions HTTP/1.1" 200')

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture(scope="module")
def chat_server(tiny_chat_lm, tmp_path_factory):
    done = subprocess.run(["bash", str(ROOT / "scripts" / "chat-server"), "--ready"], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"no chat server to test against yet: {done.stderr.strip() or 'scripts/chat-server failed'}")
    server = ChatServer(done.stdout.strip(), tiny_chat_lm, tmp_path_factory.mktemp("chat-server") / "access.log")
    os.environ[KEY_ENV] = KEY
    yield server
    server.stop()
    os.environ.pop(KEY_ENV, None)


@pytest.mark.slow
def test_the_same_model_served_and_in_process_ranks_alike_and_each_window_is_asked_once(local_run, chat_server, caplog):
    from terazi.flows.evaluate import evaluate
    from tests.conftest import artifacts_of

    work, dataset, rows, _ = local_run
    served = {"name": "lw-served", "url": chat_server.url, "model": chat_server.model, "api_key_env": KEY_ENV, **ROW}
    before = chat_server.posts()
    first = evaluate(listwise_config(work, [*rows, served], "s1", dataset))
    assert chat_server.posts() - before == WINDOWS  # the server's own count
    answers = listwise_cost(first, "lw-served")
    assert answers.requests == answers.windows == WINDOWS
    assert answers.ok + answers.wrong_format + answers.repetition + answers.missing_documents == WINDOWS
    a, b = heads(first, "lw-local"), heads(first, "lw-served")
    agree = (a["doc_id"] == b["doc_id"]).sum()
    assert agree >= 0.9 * a.height, f"served and in-process orders agree on {agree} of {a.height} queries"
    assert answers.prompt_tokens == listwise_cost(first, "lw-local").prompt_tokens  # one tokenizer, one template
    for scores in b["score"].to_list():
        assert all(x > y for x, y in zip(scores, scores[1:]))
    again = evaluate(listwise_config(work, [*rows, served], "s2", dataset))
    assert chat_server.posts() - before == WINDOWS  # a warm rerun asks for nothing
    assert listwise_cost(again, "lw-served").requests == 0
    boards = [pl.read_csv(Path(m.run_dir) / "leaderboard.csv") for m in (first, again)]
    assert boards[0].equals(boards[1])
    artifacts = artifacts_of(first.flow_run_id)
    costs = next(a for key, a in artifacts.items() if key.endswith("-costs"))
    assert f"{WINDOWS} windows ({WINDOWS} asked)" in str(costs.data)  # the Prefect artifact shows them
    time.sleep(2)  # the Prefect server writes logs and events in batches
    looked = [p for root in (work, Path(os.environ["PREFECT_HOME"])) for p in root.rglob("*") if p.is_file()]
    assert not [p for p in looked if KEY.encode() in p.read_bytes()]  # results, cache, Prefect's database and logs
    assert not any(KEY in str(a.data) for a in artifacts.values())
    assert KEY not in caplog.text and KEY not in chat_server.log_path.read_text(errors="replace")


KILLED = """
import os, sys
sys.path.insert(0, {root!r})
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ[{key_env!r}] = {key!r}
from pathlib import Path
from terazi.schemas import ListwiseSpec
from tests.stages import rerank_row
from tests.test_rerank import inputs
from tests.test_listwise_runs import clean_inputs
ds, cands, variants = clean_inputs(Path({data!r}))
rerank_row(ds, cands, variants, ListwiseSpec(**{spec!r}), Path({tmp!r}), rerank_depth=10, cache=Path({cache!r}))
"""


def clean_inputs(dataset: Path):
    """The tiny dataset's clean queries, each with every document as a candidate (`tests.test_rerank.inputs`)."""
    from tests.test_rerank import inputs

    ds, cands, variants, _ = inputs(dataset)
    return ds, *(f.filter(pl.col("condition") == "clean") for f in (cands, variants))


@pytest.mark.slow
def test_a_killed_run_resumes_without_asking_for_the_windows_it_stored(chat_server, tmp_path, tiny_dataset):
    """A run killed (SIGKILL) after a few answers; the next asks only for the windows not stored. The run is a new
    interpreter: a forked copy of this one may hang on a lock another thread (polars' pool) held at the fork."""
    from terazi.rerank.listwise.answerers import ServedAnswerer
    from terazi.rerank.listwise.windows import OUTCOME, window_model
    from terazi.rerank.store import Scores
    from tests.stages import rerank_row

    spec = {"name": "lw", "url": chat_server.url, "model": chat_server.model, "api_key_env": KEY_ENV, **ROW}
    spec["concurrency"] = 1
    cache = tmp_path / "cache"
    code = KILLED.format(
        root=str(ROOT),
        key_env=KEY_ENV,
        key=KEY,
        data=str(tiny_dataset),
        spec=spec,
        tmp=str(tmp_path / "a"),
        cache=str(cache),
    )
    before = chat_server.posts()
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while chat_server.posts() - before < 3 and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    killed_posts = chat_server.posts() - before
    assert 3 <= killed_posts < WINDOWS, child.stderr.read().decode(errors="replace")[-2000:]
    identity = ServedAnswerer(ListwiseSpec(**spec), str(cache)).identity
    stored = Scores(cache).local.rows(window_model(identity).id).filter(pl.col("d") == OUTCOME).height
    assert killed_posts - 1 <= stored <= killed_posts  # at most the one request in flight was lost
    result, _ = rerank_row(
        *clean_inputs(tiny_dataset), ListwiseSpec(**spec), tmp_path / "b", rerank_depth=10, cache=cache
    )
    assert result.cost.listwise.windows == WINDOWS and result.cost.listwise.requests == WINDOWS - stored
    assert chat_server.posts() - before == killed_posts + WINDOWS - stored
