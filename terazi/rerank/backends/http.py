"""A reranker served elsewhere (`kind: http`): a hosted rerank API or a server of one's own, asked over HTTP.

Its pairs go through the score store like any model's, so each is paid for once: a rerun, a second depth or another
first stage that shares pairs sends no request for them. The work list comes sorted by query (`remote`), and a
scoring call sends each query's documents in requests of `batch_size` (`concurrency` at once, `service.send`); when
one fails for good, the scores already answered are stored before the chunk fails (`PartlyScored`).

The identity names the endpoint, the dialect, the model the server expects, the user's `revision` and the request
fields added (`extra_body`, the server's truncation): two servers' scores are never mixed. The API key is read from
the environment variable `api_key_env` names, when the first request is sent, and lives only in this process's
HTTP client: it is in no spec, manifest, identity, log line or message (it is held for blotting from whatever the
server says, `terazi.base.outside`).
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor, as_completed

import httpx
import numpy as np

from terazi.base import fingerprint
from terazi.base.errors import ConfigError
from terazi.base.outside import hold
from terazi.models.costs import RequestLog
from terazi.rerank.backends import dialects
from terazi.rerank.backends.service import Slots, send
from terazi.rerank.pairs import Pair, PartlyScored
from terazi.store.layout import CacheLayout


def api_key(spec) -> str | None:
    """The key in the variable `api_key_env` names (None without one), or a `ConfigError` naming the variable."""
    if not spec.api_key_env:
        return None
    key = os.environ.get(spec.api_key_env, "").strip()
    if not key:
        raise ConfigError(
            f"rerankers.{spec.name}.api_key_env: the environment variable {spec.api_key_env} is not set "
            "(it holds the API key; on a Dask or Ray cluster, on every worker too)"
        )
    hold(key)
    return key


def identity(spec) -> str:
    extra = f":body={json.dumps(spec.extra_body, sort_keys=True, separators=(',', ':'))}" if spec.extra_body else ""
    return f"http:{spec.dialect}:{spec.model or '-'}@{spec.url}:rev={spec.revision or '-'}{extra}"


def by_query(pairs: list[Pair], size: int) -> list[tuple[str, list[int]]]:
    """The requests for `pairs`: (query, positions of its documents), at most `size` documents each, in order."""
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        groups.setdefault(p.query, []).append(i)
    return [(q, idx[a : a + size]) for q, idx in groups.items() for a in range(0, len(idx), size)]


class HttpReranker:
    kind = "http"
    remote = True  # each call is paid for: no warm-up pair, no latency probe (`terazi.rerank.backends.base.Metered`)
    max_length = 0  # the texts are sent whole: the server truncates, as `extra_body` asks

    @classmethod
    def create(cls, spec, *, cache_dir: str, **_) -> HttpReranker:
        return cls(spec, cache_dir)

    def __init__(self, spec, cache_dir: str):
        self.spec = spec
        self.identity = identity(spec)
        self.batch_size, self.concurrency = spec.batch_size, spec.concurrency
        self.device = f"remote:{spec.url}"  # Metered's turns: one scoring call per endpoint at a time in a process
        self.request_log = RequestLog()
        self.slots = Slots(CacheLayout(cache_dir).part("http", fingerprint.of_text(spec.url)), spec.concurrency)
        self.where = f"{spec.name} ({spec.url})"
        self._client: httpx.Client | None = None

    def _connect(self) -> httpx.Client:
        if self._client is None:
            key = api_key(self.spec)
            self._client = httpx.Client(
                timeout=self.spec.timeout,
                headers={"Authorization": f"Bearer {key}"} if key else {},
                limits=httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency),
            )
        return self._client

    def _rerank(self, query: str, docs: list[str]) -> np.ndarray:
        answer = send(
            self._connect(),
            self.spec.url,
            dialects.body(self.spec, query, docs),
            retries=self.spec.retries,
            slots=self.slots,
            requests=self.request_log,
            where=self.where,
        )
        return dialects.scores(self.spec.dialect, answer, len(docs), self.where)

    def score(self, pairs: list[Pair]) -> np.ndarray:
        out = np.full(len(pairs), np.nan)
        if not pairs:
            return out
        self._connect()
        failed: BaseException | None = None
        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="terazi-http") as pool:
            jobs = {
                pool.submit(self._rerank, q, [pairs[i].doc for i in idx]): idx
                for q, idx in by_query(pairs, self.batch_size)
            }
            for job in as_completed(jobs):
                if job.cancelled():
                    continue
                try:
                    out[jobs[job]] = job.result()
                except Exception as e:  # noqa: BLE001 - the first failure fails the call, after the answered are kept
                    if failed is None:
                        failed = e
                        for other in jobs:
                            other.cancel()
        if failed is not None:
            raise PartlyScored(out, failed)
        return out

    def describe(self) -> dict:
        return {"device": "remote", "batch_size": self.batch_size, "requests": self.request_log.since()}
