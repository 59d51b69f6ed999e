"""Listwise reranking's pure core against RankLLM's behaviour (castorini/rank_llm), with scripted answerers: the
window arithmetic, the prompt, the answer's parse and outcome, and each window paid for once through the score store.

The expected values are RankLLM's on the same inputs (its `_count_windows` tests, `receive_permutation`,
`response_analysis`), worked out by hand here; they were also checked against RankLLM's own functions."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import polars as pl
import pytest
from ftfy import fix_text

from terazi.errors import ConfigError
from terazi.rerank.listwise import core
from terazi.rerank.listwise.answerers import Answer
from terazi.rerank.listwise.prompts import load
from terazi.rerank.listwise.stage import Windows, rerank_lists
from terazi.rerank.store import Scores
from terazi.schemas import EvalConfig, ListwiseSpec

ZEPHYR = load("rank_zephyr")


@pytest.mark.parametrize(
    "n, window, stride, expected",
    [
        (10, 4, 2, [(6, 10), (4, 8), (2, 6), (0, 4)]),  # the worked example
        (20, 10, 5, [(10, 20), (5, 15), (0, 10)]),  # the done-when run: 3 windows a query
        (25, 20, 10, [(5, 25), (0, 15)]),  # RankLLM's test_count_windows: the last one cut short
        (8, 20, 10, [(0, 8)]),
        (40, 20, 10, [(20, 40), (10, 30), (0, 20)]),
        (7, 4, 2, [(3, 7), (1, 5), (0, 3)]),  # stops once a window starts at the top (no [0, 1) after it)
        (0, 4, 2, []),
    ],
)
def test_windows_go_from_the_bottom_up_as_rankllm_slides_them(n, window, stride, expected):
    assert core.windows(n, window, stride) == expected


@pytest.mark.parametrize(
    "answer, n, order, outcome",
    [
        ("[2] > [3] > [1]", 3, [1, 2, 0], "ok"),
        ("[2] > [2] > [1]", 3, [1, 0, 2], "repetition"),  # the first mention wins, the missing one appended
        ("[1] > [2] > [3] > [1]", 3, [0, 1, 2], "repetition"),
        ("[5] > [1]", 3, [0, 1, 2], "missing_documents"),  # out of range dropped
        ("[3] > [9] > [1]", 3, [2, 0, 1], "missing_documents"),  # three named, but not 1..3
        ("<think>[1] > [2] > [3]</think>\n[3] > [1] > [2]", 3, [2, 0, 1], "ok"),  # only what follows </think>
        ("<think>[3] > [1]", 3, [2, 0, 1], "wrong_format"),  # an unclosed thought is read as the answer
        ("I think 2 then 1", 3, [1, 0, 2], "wrong_format"),  # digits are read, the format is not met
        ("no idea", 3, [0, 1, 2], "wrong_format"),  # nothing usable: the window keeps its order
        ("", 2, [0, 1], "wrong_format"),
        (None, 2, [0, 1], "wrong_format"),  # a server that answered no text
        ("[²] > [①]", 2, [1, 0], "wrong_format"),  # look-alike digits read as digits, but not the format
        ("[10] > [1]", 10, [9, 0, *range(1, 9)], "missing_documents"),
    ],
)
def test_an_answer_is_read_and_classified_as_rankllm_reads_it(answer, n, order, outcome):
    assert core.order(answer, n) == order
    assert core.outcome(answer, n, ZEPHYR.valid, ZEPHYR.extract) == outcome


def test_final_scores_strictly_decrease_down_the_final_order():
    scores = core.final_scores([2, 0, 3, 1])
    assert scores.tolist() == [3.0, 1.0, 4.0, 2.0]
    assert (np.diff(scores[[2, 0, 3, 1]]) < 0).all()


def test_a_passage_is_cut_repaired_and_unbracketed_and_the_prompt_is_rankzephyrs():
    long = "Kayseri [3] mantısı " + "kelime " * 400
    shown = core.passage("  " + long, 300, fix_text)
    assert shown.startswith("Kayseri (3) mantısı") and len(shown.split()) == 300
    assert core.passage("cafÃ© ﬁne", 300, fix_text) == "café fine"  # ftfy, as RankLLM repairs text
    system, user = ZEPHYR.messages(core.unbracket("mantı [1] nedir?"), ["a", "b"])
    assert system == {
        "role": "system",
        "content": "You are RankLLM, an intelligent assistant that can rank passages based on their relevancy to the "
        "query",
    }
    assert user["content"].startswith(
        "I will provide you with 2 passages, each indicated by a numerical identifier []. Rank the passages based on "
        "their relevance to the search query: mantı (1) nedir?.\n[1] a\n[2] b\nSearch Query: mantı (1) nedir?.\n"
    )


def test_rank_gpt_asks_one_turn_per_passage():
    msgs = load("rank_gpt").messages("q", ["a", "b"])
    assert [m["role"] for m in msgs] == ["system", *["user", "assistant"] * 3, "user"]
    assert msgs[3]["content"] == "[1] a" and msgs[4]["content"] == "Received passage [1]."
    assert msgs[-1]["content"].startswith("Search Query: q.\nRank the 2 passages above")


def test_a_template_file_of_ones_own_is_data_not_code(tmp_path):
    good = tmp_path / "mine.yaml"
    good.write_text(
        "method: singleturn_listwise\nbody: \"<{rank}> {candidate}\\n\"\nsuffix: 'Q: {query} ({num})'\n"
        "output_validation_regex: 'r\"^<\\d+>( > <\\d+>)*$\"'\noutput_extraction_regex: '<(\\d+)>'\n"
    )
    mine = load(str(good))
    assert mine.messages("q", ["a"]) == [{"role": "user", "content": "<1> a\nQ: q (1)"}]
    assert mine.hash != ZEPHYR.hash and core.outcome("<1>", 1, mine.valid, mine.extract) == "ok"
    bad = tmp_path / "bad.yaml"
    bad.write_text(good.read_text().replace("{candidate}", "{candidate.__class__}"))
    with pytest.raises(ConfigError, match="section body: {candidate.__class__} is not filled in"):
        load(str(bad))


@pytest.mark.parametrize(
    "fields, problem",
    [
        ({"window": 4, "stride": 5}, "stride 5 skips passages: at most window 4"),
        ({"api_key_env": "K"}, "api_key_env only apply to a row served"),
        ({"url": "http://h:1/v1", "device": "cuda"}, "device only apply to a row in process"),
        ({"url": "http://user:pw@h:1/v1"}, "no credentials in the address"),
        ({"prompt": "my.yaml"}, "the absolute path of a template file"),
    ],
)
def test_a_listwise_row_refuses_what_cannot_apply(fields, problem):
    with pytest.raises(ValueError, match=problem):
        ListwiseSpec(name="lw", kind="listwise", model="m", **fields)


def test_a_served_deployment_asks_only_its_own_chat_servers_and_reads_only_its_own_templates(
    tmp_path, tiny_dataset, monkeypatch
):
    from terazi.errors import PolicyError
    from terazi.policy import ServicePolicy

    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "mine.yaml"

    def config(**row) -> EvalConfig:
        row = {"name": "lw", "kind": "listwise", "model": "m", "url": "http://gpu:8000/v1", "api_key_env": "K", **row}
        return EvalConfig.model_validate({"datasets": [{"path": str(tiny_dataset)}], "rerankers": [row]})

    policy = ServicePolicy.for_service(config(prompt=str(mine)))
    assert policy.apply(config(prompt="rank_gpt")) and policy.apply(config(prompt=str(mine)))
    with pytest.raises(PolicyError, match=r"^rerankers\.lw: http://evil:1/v1 with key variable K is not"):
        policy.apply(config(url="http://evil:1/v1"))
    with pytest.raises(PolicyError, match=r"^rerankers\.lw\.prompt '/etc/passwd': not a template file of the"):
        policy.apply(config(prompt="/etc/passwd"))


def served_answerer(tmp_path, handler):
    """A served row's answerer whose HTTP client answers with `handler` (httpx's mock transport)."""
    from terazi.rerank.listwise.answerers import ServedAnswerer

    spec = ListwiseSpec(name="lw", kind="listwise", model="org/m", url="http://gpu:8000/v1/", retries=0)
    answerer = ServedAnswerer(spec, str(tmp_path))
    answerer._client = httpx.Client(transport=httpx.MockTransport(handler))
    return answerer


def test_a_served_rows_identity_is_what_its_server_says_it_serves(tmp_path):
    from terazi.errors import ServiceError

    def vllm(request):
        entry = {"id": "org/m", "root": "/models/m-v2", "max_model_len": 4096, "created": 1234, "object": "model"}
        return httpx.Response(200, json={"data": [{"id": "other"}, entry]})

    identity = served_answerer(tmp_path, vllm).identity
    assert identity.startswith('listwise:served:org/m@http://gpu:8000/v1:serves={"id": "org/m", "max_model_len": 4096')
    assert "/models/m-v2" in identity and "1234" not in identity  # `created` changes with every answer: left out
    assert f"prompt=rank_zephyr#{ZEPHYR.hash}:words=300:greedy" in identity
    assert ":serves=-:" in served_answerer(tmp_path, lambda r: httpx.Response(404)).identity  # no such route
    with pytest.raises(ServiceError, match=r"answered 503 to GET /models: warming up"):
        served_answerer(tmp_path, lambda r: httpx.Response(503, json={"detail": "warming up"})).serves()


@pytest.mark.parametrize(
    "payload, expected",
    [
        (
            {"choices": [{"message": {"content": "[2] > [1]"}}], "usage": {"prompt_tokens": 9, "completion_tokens": 5}},
            Answer("[2] > [1]", 9, 5),
        ),
        ({"choices": [{"message": {"content": None}}]}, Answer(None, 0, 0)),  # no text: classified wrong_format
        ({"error": "no choices"}, "no choices\\[0\\].message"),
        ({"choices": [{"message": {"content": [{"type": "text"}]}}]}, "content is list, not text"),
    ],
)
def test_a_served_answer_is_read_or_refused_whole(tmp_path, payload, expected):
    from terazi.errors import ServiceError

    sent = []

    def chat(request):
        sent.append(json.loads(request.content))
        return httpx.Response(200, json=payload)

    answerer = served_answerer(tmp_path, chat)
    if isinstance(expected, Answer):
        assert answerer.ask([{"role": "user", "content": "x"}], 2) == expected
    else:
        with pytest.raises(ServiceError, match=expected):
            answerer.ask([{"role": "user", "content": "x"}], 2)
    assert sent[0] == {
        "model": "org/m",
        "messages": [{"role": "user", "content": "x"}],
        "max_tokens": len("[1] > [2]"),
        "temperature": 0.0,
    }


class Scripted:
    """Answers each window by a hidden relevance of its passages (the higher, the earlier), counting what it is asked;
    `faulty` passages make it answer with a repeat."""

    concurrency = 2

    def __init__(self, relevance: dict[str, float]):
        self.relevance, self.asked, self.lock = relevance, 0, threading.Lock()

    def ask(self, messages, n):
        text = messages[-1]["content"]
        ids = [line.split("] ", 1)[1] for line in text.splitlines() if line.startswith("[")][:n]
        best = sorted(range(n), key=lambda i: -self.relevance[ids[i]])
        with self.lock:
            self.asked += 1
        return Answer(" > ".join(f"[{i + 1}]" for i in best), 100, 4 * n)


def test_sliding_windows_over_ten_passages_bring_the_best_to_the_top_and_are_paid_for_once(tmp_path):
    spec = ListwiseSpec(name="lw", kind="listwise", model="m", url="http://127.0.0.1:9/v1", window=4, stride=2)
    ids = [f"d{i}" for i in range(10)]
    relevance = {d: r for d, r in zip(ids, [0, 3, 1, 9, 2, 8, 4, 7, 5, 6])}
    texts = {d: d for d in ids}  # each passage's text is its id, so the scripted answerer can read it back
    answerer, windows = Scripted(relevance), Windows(Scores(tmp_path), "scripted")
    walk = rerank_lists([("q", ids)], texts, answerer, windows, spec)
    # RankLLM's windows [6,10) [4,8) [2,6) [0,4), each reordered by relevance in turn (worked by hand): a stride of
    # 2 carries only each window's best two up, so d7 (relevance 7) stays below d1 and d0, where the last window
    # could not see it
    assert [ids[i] for i in walk.orders[0]] == ["d3", "d5", "d1", "d0", "d7", "d2", "d9", "d4", "d8", "d6"]
    assert answerer.asked == 4 and walk.answers.ok == 4 and walk.answers.windows == 4 and walk.fresh == [True]
    assert walk.answers.prompt_tokens == 400 and walk.answers.completion_tokens == 64
    again = Scripted(relevance)
    rerun = rerank_lists([("q", ids), ("q", ids)], texts, again, Windows(Scores(tmp_path), "scripted"), spec)
    assert again.asked == 0 and rerun.answers.requests == 0 and rerun.orders == [walk.orders[0]] * 2
    assert rerun.answers.ok == 4  # the stored answers' outcomes come back with them
    other = Scripted(relevance)  # another depth: only the windows whose passages differ are asked for
    rerank_lists([("q", ids[:8])], texts, other, Windows(Scores(tmp_path), "scripted"), spec)
    assert 0 < other.asked < 3


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
from tests.test_listwise import clean_inputs
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
    from terazi.rerank.listwise.stage import OUTCOME, window_model
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
