"""Listwise reranking's pure core against RankLLM's behaviour (castorini/rank_llm), with scripted answerers: the
window arithmetic, the prompt, the answer's parse and outcome, and each window paid for once through the score store.

The expected values are RankLLM's on the same inputs (its `_count_windows` tests, `receive_permutation`,
`response_analysis`), worked out by hand here; they were also checked against RankLLM's own functions."""

from __future__ import annotations

import json
import threading
import time

import httpx
import numpy as np
import pytest
from ftfy import fix_text

from terazi.base.errors import ConfigError
from terazi.rerank.listwise import core
from terazi.rerank.listwise.answerers import Answer
from terazi.rerank.listwise.prompts import load
from terazi.rerank.listwise.windows import Windows, rerank_lists
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
    from terazi.base.errors import PolicyError
    from terazi.config.policy import ServicePolicy

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
    from terazi.base.errors import ServiceError

    def vllm(request):
        entry = {"id": "org/m", "root": "/models/m-v2", "max_model_len": 4096, "created": 1234, "object": "model"}
        return httpx.Response(200, json={"data": [{"id": "other"}, entry]})

    identity = served_answerer(tmp_path, vllm).identity
    assert identity.startswith('listwise:served:org/m@http://gpu:8000/v1:serves={"id": "org/m", "max_model_len": 4096')
    assert "/models/m-v2" in identity and "1234" not in identity  # `created` changes with every answer: left out
    assert f"prompt=rank_zephyr#{ZEPHYR.hash}:words=300:greedy" in identity
    assert ":serves=-:" in served_answerer(tmp_path, lambda r: httpx.Response(404)).identity  # no such route
    with pytest.raises(ServiceError, match=r"answered 503 Service Unavailable: warming up to GET /models"):
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
    from terazi.base.errors import ServiceError

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


def test_two_runs_on_one_cache_never_ask_for_the_same_window_at_once(tmp_path):
    """Two runs (threads here, each with its own store connection and lease) rerank the same lists together: each
    window is asked once in all, the other run waits for it."""
    spec = ListwiseSpec(name="lw", kind="listwise", model="m", url="http://127.0.0.1:9/v1", window=4, stride=2)
    ids = [f"d{i}" for i in range(10)]
    relevance = {d: r for d, r in zip(ids, [0, 3, 1, 9, 2, 8, 4, 7, 5, 6])}

    class Slow(Scripted):
        def ask(self, messages, n):
            time.sleep(0.05)
            return super().ask(messages, n)

    answerer = Slow(relevance)
    walks = []

    def run():
        windows = Windows(Scores(tmp_path), "scripted")
        walks.append(rerank_lists([("q", ids)], {d: d for d in ids}, answerer, windows, spec, poll=0.01))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answerer.asked == 4 and sum(w.answers.requests for w in walks) == 4
    assert walks[0].orders == walks[1].orders
