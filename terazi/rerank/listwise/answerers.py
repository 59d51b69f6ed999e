"""Who answers a window: a server behind an OpenAI-compatible `/v1/chat/completions` (vLLM, SGLang, llama.cpp's
server, Ollama, `transformers serve`, hosted APIs), or a causal LM run by transformers in this process. Either way
decoding is greedy (temperature 0; `do_sample=False`), the answer's length is bounded by the window's permutation
(`terazi.rerank.listwise.core.budget`, or the row's `max_tokens`), and each answer comes back with its token counts.

The identity names everything an answer depends on besides the window itself: the endpoint and what its `/v1/models`
says it serves (or the local model's files and precision), the user's `revision`, the prompt template's hash, the
passage cut, the decoding settings and any `extra_body`. Window answers are stored under it (`stage`), so two
servers' or two templates' answers are never mixed.

A served row follows the `kind: http` row's rules (`terazi.rerank.backends.service`): at most `concurrency`
requests in flight per endpoint over every process sharing the cache folder, 429/5xx/time-outs tried again with
backoff, any other 4xx refused at once, the API key read from `api_key_env` when the first request is sent and
blotted from whatever the server says (`terazi.base.outside`); it is in no identity, manifest or log line.
"""

from __future__ import annotations

import json
from typing import NamedTuple

import httpx

from terazi.base import fingerprint
from terazi.base.errors import ServiceError
from terazi.base.outside import shown
from terazi.base.paths import inside
from terazi.base.shutdown import stoppable
from terazi.models.costs import RequestLog
from terazi.models.refs import ModelError
from terazi.rerank.backends.base import Backend
from terazi.rerank.backends.http import api_key
from terazi.rerank.backends.llm import causal_lm
from terazi.rerank.backends.service import Slots, send, status_line
from terazi.rerank.listwise import core
from terazi.rerank.listwise.prompts import load

STABLE_MODEL_FIELDS = ("id", "root", "parent", "max_model_len")  # what `/v1/models` says that a restart keeps
NO_MODELS_ROUTE = (404, 405, 501)  # a server without `/v1/models`: it says nothing of what it serves


class Answer(NamedTuple):
    text: str | None  # None: the server answered no text (a refusal, a filtered answer)
    prompt_tokens: int
    completion_tokens: int


def decoding(spec) -> str:
    """The settings of an answer that are not the window: template, passage cut, greedy decoding, budget."""
    tpl = load(spec.prompt)
    return f"prompt={tpl.name}#{tpl.hash}:words={spec.passage_words}:greedy:max_tokens={spec.max_tokens or 'window'}"


def max_tokens(spec, n: int) -> int:
    return spec.max_tokens or core.budget(n)


class ServedAnswerer:
    """Windows answered by an OpenAI-compatible chat server (the row's `url`, e.g. http://gpu-box:8000/v1)."""

    kind = "listwise"
    remote = True
    max_length = 0
    batch_size = 1

    @classmethod
    def create(cls, spec, *, cache_dir: str, **_) -> ServedAnswerer:
        return cls(spec, cache_dir)

    def __init__(self, spec, cache_dir: str):
        self.spec = spec
        self.base = spec.url.rstrip("/")
        self.concurrency = spec.concurrency
        self.device = f"remote:{spec.url}"
        self.request_log = RequestLog()
        self.slots = Slots(inside(cache_dir, "http", fingerprint.of_text(self.base)), spec.concurrency)
        self.where = f"{spec.name} ({self.base})"
        self._client: httpx.Client | None = None
        self._identity: str | None = None

    def _connect(self) -> httpx.Client:
        if self._client is None:
            key = api_key(self.spec)  # held for blotting from whatever the server says (terazi.base.outside)
            self._client = httpx.Client(
                timeout=self.spec.timeout,
                headers={"Authorization": f"Bearer {key}"} if key else {},
                limits=httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency),
            )
        return self._client

    @property
    def identity(self) -> str:
        """Asked of the server once: what `/v1/models` says it serves under the row's model name."""
        if self._identity is None:
            extra = f":body={json.dumps(self.spec.extra_body, sort_keys=True)}" if self.spec.extra_body else ""
            self._identity = (
                f"listwise:served:{self.spec.model}@{self.base}:serves={self.serves()}:"
                f"rev={self.spec.revision or '-'}:{decoding(self.spec)}{extra}"
            )
        return self._identity

    def serves(self) -> str:
        """The stable fields of the server's `/v1/models` entry for the row's model (`-` when the server does not
        say: no such route, or the model not listed); any other failure is a `ServiceError` (the task is tried
        again), never a different identity."""
        url = f"{self.base}/models"
        try:
            response = self._connect().get(url)
        except httpx.HTTPError as e:
            raise ServiceError(f"{self.where}: cannot ask what it serves ({type(e).__name__}: {shown(e)})") from None
        if response.status_code in NO_MODELS_ROUTE:
            return "-"
        if response.status_code != 200:  # not "-": a passing fault must not file the answers under another identity
            raise ServiceError(f"{self.where} answered {status_line(response)} to GET /models")
        try:
            entries = response.json().get("data") or []
        except (ValueError, AttributeError):
            return "-"
        mine = [e for e in entries if isinstance(e, dict) and e.get("id") == self.spec.model]
        if not mine:
            return "-"
        return json.dumps({k: mine[0][k] for k in STABLE_MODEL_FIELDS if k in mine[0]}, sort_keys=True)

    def ask(self, messages: list[dict], n: int) -> Answer:
        body = {
            "model": self.spec.model,
            "messages": messages,
            "max_tokens": max_tokens(self.spec, n),
            "temperature": 0.0,
            **self.spec.extra_body,
        }
        payload = send(
            self._connect(),
            f"{self.base}/chat/completions",
            body,
            retries=self.spec.retries,
            slots=self.slots,
            requests=self.request_log,
            where=self.where,
        )
        try:
            message = payload["choices"][0]["message"]
            text = message.get("content")
            usage = payload.get("usage") or {}
        except (KeyError, IndexError, TypeError, AttributeError):
            raise ServiceError(
                f"{self.where}: malformed answer (no choices[0].message); nothing of this window is kept"
            ) from None
        if text is not None and not isinstance(text, str):
            raise ServiceError(f"{self.where}: malformed answer (content is {type(text).__name__}, not text)")
        return Answer(text, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))

    def describe(self) -> dict:
        return {"device": "remote", "batch_size": 1, "requests": self.request_log.since()}


class LocalAnswerer(Backend):
    """Windows answered in this process: the model's tokenizer's chat template, greedy `generate`, one window at a
    time (so an answer is the model's on that prompt alone, as a server gives it)."""

    kind = "listwise"
    llm = True
    concurrency = 1

    def _rule(self) -> str:
        return decoding(self.spec)

    def _load(self):
        s, ref = self.spec, self.ref
        tok, model = causal_lm(ref, s.trust_remote_code, self.precision, "listwise reranker")
        if not getattr(tok, "chat_template", None):
            raise ModelError(f"{ref.name!r}: its tokenizer has no chat template, so no prompt can be written for it")
        self.tokenizer = tok
        return stoppable(model.to(self.device).eval())

    def ask(self, messages: list[dict], n: int) -> Answer:
        import torch

        model = self.model
        tok = self.tokenizer
        ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=True)[
            "input_ids"
        ]
        limit = getattr(model.config, "max_position_embeddings", None)
        budget = max_tokens(self.spec, n)
        if limit and len(ids) + budget > limit:
            raise ModelError(
                f"{self.spec.name}: a window's prompt takes {len(ids)} tokens and its answer up to {budget}, more than "
                f"the {limit} {self.ref.name!r} reads; lower passage_words or window"
            )
        x = torch.tensor([ids], dtype=torch.long, device=self.device)
        with torch.inference_mode():
            out = model.generate(
                x,
                attention_mask=torch.ones_like(x),
                max_new_tokens=budget,
                do_sample=False,
                pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
            )
        new = out[0, len(ids) :].tolist()
        if tok.eos_token_id is not None and tok.eos_token_id in new:
            new = new[: new.index(tok.eos_token_id) + 1]
        return Answer(tok.decode(new, skip_special_tokens=True), len(ids), len(new))
