"""A list's sliding windows walked with their answers kept in the score store (the paid-for room).

`rerank_lists` walks lists' windows in step (RankLLM's sliding windows, `core.windows`): first every list's bottom
window, then the next one up, each window given the passages in their order after the window below. Each window's
answer is kept under the row's identity (`answerers`), keyed by the query text and the window's passages (ids and
texts, in order): a rerun, a second first stage or another depth asks only for windows whose inputs differ. An answer
is stored as soon as it arrives, so a run stopped half-way asks again only for windows not answered. Concurrent runs
on one cache claim windows under the store's leases, so none is asked for twice at once: a run waits for windows
another run holds.

In the store a window is a few rows of its own model key (`window:<identity>`): (window key, slot) → the passage at
that place in the new order (slots 0…n−1), and three rows below them: the answer's outcome and its two token counts.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import NamedTuple

import polars as pl
from ftfy import fix_text

from terazi.base import fingerprint
from terazi.rerank.listwise import core
from terazi.rerank.listwise.prompts import load
from terazi.rerank.store import ModelKey, Scores
from terazi.schemas import ListwiseCost

log = logging.getLogger("terazi.rerank")
OUTCOME, PROMPT_TOKENS, COMPLETION_TOKENS = -1, -2, -3  # the slots below a window's order
POLL_SECONDS = 1.0


def window_model(identity: str) -> ModelKey:
    return ModelKey(f"window:{identity}", 0)


def window_key(query: str, ids: list[str], texts: list[str]) -> int:
    return fingerprint.key64(json.dumps([query, ids, texts], ensure_ascii=False))


class Stored(NamedTuple):
    """A window's answer as stored: the new order (positions in the window), its outcome, its tokens."""

    order: list[int]
    outcome: str
    prompt_tokens: int
    completion_tokens: int


def ask(answerer, tpl, query: str, ids: list[str], shown: dict[str, str]) -> Stored:
    """One window asked: the prompt of its passages as shown, the answer parsed and classified."""
    answer = answerer.ask(tpl.messages(core.unbracket(query), [shown[d] for d in ids]), len(ids))
    n = len(ids)
    return Stored(
        core.order(answer.text, n),
        core.outcome(answer.text, n, tpl.valid, tpl.extract),
        answer.prompt_tokens,
        answer.completion_tokens,
    )


def _claim_keys(missing: dict[int, tuple]) -> pl.DataFrame:
    """A window is claimed by its outcome row."""
    return pl.DataFrame({"q": list(missing), "d": [OUTCOME] * len(missing)}, schema={"q": pl.Int64, "d": pl.Int64})


class Windows:
    """Window answers in the score store, claimed under its leases while asked."""

    def __init__(self, scores: Scores, identity: str):
        self.scores, self.model = scores, window_model(identity)
        self._lock = threading.Lock()

    def get(self, wanted: dict[int, int]) -> dict[int, Stored]:
        """The stored answers among `wanted` (window key → passages): (order, outcome, prompt and answer tokens)."""
        if not wanted:
            return {}
        keys = pl.DataFrame(
            {
                "q": [k for k, n in wanted.items() for _ in range(n + 3)],
                "d": [d for n in wanted.values() for d in (*range(n), OUTCOME, PROMPT_TOKENS, COMPLETION_TOKENS)],
            },
            schema={"q": pl.Int64, "d": pl.Int64},
        )
        found: dict[int, dict[int, float]] = {}
        for q, d, v in self.scores.get_many(self.model, keys).iter_rows():
            found.setdefault(q, {})[d] = v
        out = {}
        for k, rows in found.items():
            n = wanted[k]
            if len(rows) == n + 3:
                order = [int(rows[i]) for i in range(n)]
                out[k] = Stored(
                    order,
                    core.OUTCOMES[int(rows[OUTCOME])],
                    int(rows[PROMPT_TOKENS]),
                    int(rows[COMPLETION_TOKENS]),
                )
        return out

    def ask_and_put(self, key: int, answerer, tpl, query: str, ids: list[str], shown: dict[str, str]) -> Stored:
        """Ask for one window and store its answer at once (a run stopped later does not pay for it again)."""
        got = ask(answerer, tpl, query, ids, shown)
        with self._lock:
            self.put(key, got)
        return got

    def put(self, key: int, got: Stored) -> None:
        values = [*got.order, core.OUTCOMES.index(got.outcome), got.prompt_tokens, got.completion_tokens]
        slots = [*range(len(got.order)), OUTCOME, PROMPT_TOKENS, COMPLETION_TOKENS]
        self.scores.put_many(
            self.model,
            pl.DataFrame(
                {"q": [key] * len(values), "d": slots, "score": [float(v) for v in values]},
                schema={"q": pl.Int64, "d": pl.Int64, "score": pl.Float64},
            ),
        )


class Walk(NamedTuple):
    orders: list[list[int]]  # each list's final order (positions in the list as given)
    answers: ListwiseCost  # the answers the orders rest on
    fresh: list[bool]  # the lists that needed a window asked
    passages: int  # passages in the windows asked
    seconds: float  # spent asking them


def rerank_lists(
    lists: list[tuple[str, list[str]]],
    texts: dict[str, str],
    answerer,
    windows: Windows,
    spec,
    on_progress=None,
    poll: float = POLL_SECONDS,
) -> Walk:
    """Each list's final order, its windows walked in step, and what their answers were."""
    tpl = load(spec.prompt)
    current = [list(range(len(ids))) for _, ids in lists]
    spans = [core.windows(len(ids), spec.window, spec.stride) for _, ids in lists]
    shown = {d: core.passage(t, spec.passage_words, fix_text) for d, t in texts.items()}
    used: dict[int, Stored] = {}
    asked, passages, seconds = set(), 0, 0.0
    fresh = [False] * len(lists)
    total = sum(map(len, spans))
    for step in range(max(map(len, spans), default=0)):
        todo = []  # (list, span, key)
        wanted: dict[int, tuple[str, list[str]]] = {}
        for i, (query, ids) in enumerate(lists):
            if step < len(spans[i]):
                a, z = spans[i][step]
                inside_ids = [ids[j] for j in current[i][a:z]]
                key = window_key(query, inside_ids, [texts[d] for d in inside_ids])
                todo.append((i, (a, z), key))
                wanted[key] = (query, inside_ids)
        answers = windows.get({k: len(v[1]) for k, v in wanted.items()})
        missing = {k: v for k, v in wanted.items() if k not in answers}
        while missing:
            with windows.scores.lease() as lease:
                mine = lease.claim(windows.model, _claim_keys(missing))["q"].to_list()
                start = time.perf_counter()
                workers = max(1, getattr(answerer, "concurrency", 1))
                failed: BaseException | None = None
                with ThreadPoolExecutor(workers, thread_name_prefix="terazi-listwise") as pool:
                    jobs = {pool.submit(windows.ask_and_put, k, answerer, tpl, *missing[k], shown): k for k in mine}
                    for job in as_completed(jobs):
                        try:
                            got = job.result()
                        except Exception as e:  # noqa: BLE001 - the first failure fails the chunk, after the rest
                            failed = failed or e
                            continue
                        answers[jobs[job]] = got
                        asked.add(jobs[job])
                        passages += len(got.order)
                        lease.renew()
                if failed is not None:
                    raise failed
                seconds += time.perf_counter() - start
            missing = {k: v for k, v in missing.items() if k not in answers}
            if missing:
                log.info("%d windows are being asked by another run on this cache: waiting for them", len(missing))
                time.sleep(poll)
                answers.update(windows.get({k: len(v[1]) for k, v in missing.items()}))
                missing = {k: v for k, v in missing.items() if k not in answers}
        for i, span, key in todo:
            current[i] = core.apply(current[i], span, answers[key].order)
            used[key] = answers[key]
            fresh[i] = fresh[i] or key in asked
        if on_progress:
            on_progress(sum(min(step + 1, len(s)) for s in spans), total)
    counts = {o: 0 for o in core.OUTCOMES}
    for u in used.values():
        counts[u.outcome] += 1
    cost = ListwiseCost(
        windows=len(used),
        requests=len(asked),
        prompt_tokens=sum(u.prompt_tokens for u in used.values()),
        completion_tokens=sum(u.completion_tokens for u in used.values()),
        **counts,
    )
    return Walk(current, cost, fresh, passages, seconds)
