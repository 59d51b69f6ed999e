"""One request to a rerank API as a paid service expects it: at most `concurrency` in flight per endpoint, tried again
after a 429 or a 5xx (waiting what `Retry-After` asks, else an exponential backoff with jitter), a time-out or a
dropped connection, a bounded number of times; refused at once on any other 4xx.

The bound holds over every thread and process that shares the cache folder (thread workers, a local Dask cluster,
several runs at once): `Slots` are lock files in `<cache>/http/<endpoint hash>/`, one per request in flight. Workers
on machines that do not share the folder each keep the bound on their own.

Messages name the endpoint, the status and the server's own words; everything the server controls (status line,
reason phrase, body, the HTTP client's error text) passes `terazi.base.outside.shown` first, so a key it echoes is
blotted and the line bounded. A redirect is refused, not followed: the key would go with it.
"""

from __future__ import annotations

import email.utils
import itertools
import logging
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import httpx
from filelock import FileLock, Timeout

from terazi.base.errors import ServiceError
from terazi.base.outside import shown
from terazi.models.costs import RequestLog

log = logging.getLogger("terazi.backends")
BACKOFF_S, MAX_BACKOFF_S = 0.5, 30.0  # the first retry waits 0.25-0.5 s, doubling up to 15-30 s
MAX_RETRY_AFTER_S = 300.0  # a server asking for a longer pause is not waited for: the request fails
POLL_S = 0.02


class Slots:
    """At most `n` holders at once among every thread and process using `folder`: `n` lock files, one held per
    holder (an OS file lock, so a holder that dies frees its slot)."""

    def __init__(self, folder: Path, n: int):
        self.folder, self.n = folder, n

    @contextmanager
    def hold(self) -> Iterator[None]:
        self.folder.mkdir(parents=True, exist_ok=True)
        while True:
            for i in random.sample(range(self.n), self.n):
                lock = FileLock(self.folder / f"{i}.lock")
                try:
                    lock.acquire(timeout=0)
                except Timeout:
                    continue
                try:
                    yield
                finally:
                    lock.release()
                return
            time.sleep(POLL_S)


def retry_after(response: httpx.Response) -> float | None:
    """Seconds the server asks to wait (`Retry-After`: seconds or an HTTP date), None when it does not say."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def pause(attempt: int, asked: float | None) -> float:
    """How long to wait before try `attempt + 2`: what the server asked, plus up to 20% so that waiting requests do
    not come back at the same instant; else the exponential backoff with jitter, half to all of
    `BACKOFF_S × 2^attempt` (at most `MAX_BACKOFF_S`)."""
    if asked is not None:
        return asked * random.uniform(1.0, 1.2)
    return min(MAX_BACKOFF_S, BACKOFF_S * 2**attempt) * random.uniform(0.5, 1.0)


def server_message(response: httpx.Response) -> str:
    """The server's own words, safe to show: `message`, `detail` or `error` of a JSON body, else the body's text, else
    the reason phrase."""
    try:
        body = response.json()
    except ValueError:
        body = response.text
    if isinstance(body, dict):
        found = next((body[k] for k in ("message", "detail", "error") if body.get(k)), body)
        body = found.get("message", found) if isinstance(found, dict) else found
    return shown(body) or shown(response.reason_phrase)


def status_line(response: httpx.Response) -> str:
    """`404 Not Found: the server's words`, safe to show (the reason phrase is the server's too)."""
    return f"{response.status_code} {shown(response.reason_phrase, 60)}: {server_message(response)}"


def send(
    client: httpx.Client,
    url: str,
    body: dict,
    *,
    retries: int,
    slots: Slots,
    requests: RequestLog,
    where: str,
):
    """POST `body` to `url` and return the decoded JSON answer, trying again as the module says (each try sent
    again counted in `requests`, each answer's round trip too)."""
    for attempt in itertools.count():
        asked = None
        try:
            with slots.hold():
                start = time.perf_counter()
                response = client.post(url, json=body)
                took = time.perf_counter() - start
        except httpx.TimeoutException:
            problem = f"no answer within {client.timeout.read:g} s"
        except httpx.RequestError as e:  # refused, reset or dropped connection, a broken or undecodable answer
            problem = f"connection failed ({type(e).__name__}: {shown(e)})"
        else:
            status = response.status_code
            if 200 <= status < 300:
                try:
                    payload = response.json()
                except ValueError:
                    raise ServiceError(
                        f"{where}: malformed answer (not JSON: {server_message(response)!r}); "
                        "no score of this request is kept"
                    ) from None
                requests.answered(1000 * took)
                return payload
            problem = status_line(response)
            if 300 <= status < 400:
                raise ServiceError(f"{where} answered {problem} (a redirect, not followed: set url to where it leads)")
            if status != 429 and status < 500:
                raise ServiceError(f"{where} answered {problem}")
            asked = retry_after(response)
        if attempt == retries:
            raise ServiceError(
                f"{where}: gave up after {attempt + 1} tries (the last: {problem}); the scores already "
                "answered are kept, so a run again sends only the rest"
            )
        if asked is not None and asked > MAX_RETRY_AFTER_S:
            raise ServiceError(
                f"{where} answered {problem} and asks to wait {asked:.0f} s (Retry-After), more than "
                f"{MAX_RETRY_AFTER_S:.0f} s: run again later; the scores already answered are kept"
            )
        wait = pause(attempt, asked)
        requests.retried()
        log.warning("%s: %s; trying again in %.1f s (retry %d of %d)", where, problem, wait, attempt + 1, retries)
        time.sleep(wait)
