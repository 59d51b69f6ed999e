"""The rows of a leaderboard besides the first stage: one spec per kind of reranker, told apart by `kind`; and the
short form a row is given in on the command line (`terazi run --reranker cross-encoder:MODEL`)."""

from __future__ import annotations

import os
import string
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from terazi.base.errors import FieldsError
from terazi.base.paths import slugify
from terazi.schemas.fields import FIRST_STAGE, SlugName
from terazi.schemas.listwise import ListwiseSpec
from terazi.schemas.rows import _ModelReranker, _Reranker, api_key_env_field, endpoint_url

QWEN3_SYSTEM = (
    "Judge whether the Document meets the requirements based on the Query and the Instruct provided. "
    'Note that the answer can only be "yes" or "no".'
)
QWEN3_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"
QWEN3_USER = "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {doc}"
QWEN3_ASSISTANT = "<think>\n\n</think>\n\n"


class _EncoderReranker(_ModelReranker):
    """A cross- or bi-encoder: run by torch (sentence-transformers) or by onnxruntime."""

    backend: Literal["torch", "onnx"] = Field(
        "torch",
        description="torch: sentence-transformers; onnx: onnxruntime "
        "with the model's tokenizer (pip install "
        "'terazi[onnx]')",
    )
    file_name: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9._/-]+\.onnx$",
        description="onnx: the model's own ONNX file, e.g. onnx/model_quint8_avx2.onnx; "
        "default: onnx/model.onnx when the model has it, else an export made "
        "once into the cache folder",
    )
    quantization: Literal["none", "int8"] = Field(
        "none", description="onnx: int8 = a dynamic int8 copy of the ONNX file made once with onnxruntime's quantiser"
    )

    @model_validator(mode="after")
    def _backend_options(self):
        if self.backend != "onnx":
            used = [f for f in ("file_name", "quantization") if getattr(self, f) not in (None, "none")]
            if used:
                raise FieldsError((*used, "backend"), f"{' and '.join(used)} only apply with backend: onnx")
        elif self.precision in ("fp16", "bf16"):
            raise FieldsError(
                ("precision", "backend"),
                f"backend onnx runs fp32 (or int8 with quantization: int8), not {self.precision}",
            )
        if self.file_name and (".." in self.file_name.split("/") or self.file_name.startswith("/")):
            raise FieldsError("file_name", f"file_name {self.file_name!r} must be a path inside the model folder")
        return self


class CrossEncoderSpec(_EncoderReranker):
    """A cross-encoder scores each (query, passage) pair (sentence-transformers CrossEncoder, or its ONNX file)."""

    kind: Literal["cross-encoder"] = Field(description="cross-encoder")
    max_length: int | None = Field(256, ge=8, description="tokens per (query, passage) pair")


class BiEncoderSpec(_EncoderReranker):
    """A bi-encoder: cosine of query and passage embeddings (sentence-transformers, or its ONNX file)."""

    kind: Literal["bi-encoder"] = Field(description="bi-encoder")
    max_length: int | None = Field(256, ge=8, description="tokens per text")


class LLMRerankerSpec(_ModelReranker):
    """A causal language model asked whether the passage answers the query: score = logit("yes") − logit("no") at
    the last position after the model's instruction template (Qwen3-Reranker's by default)."""

    kind: Literal["llm-reranker"] = Field(description="llm-reranker")
    max_length: int = Field(512, ge=32, description="tokens per prompt, template included (the passage is cut first)")
    instruction: str = Field(QWEN3_INSTRUCTION, max_length=2000, description="the task, filled into {instruction}")
    system: str = Field(QWEN3_SYSTEM, max_length=2000, description="system prompt")
    user: str = Field(
        QWEN3_USER, max_length=2000, description="user turn; must contain {query} and {doc}, may contain {instruction}"
    )
    assistant_prefix: str = Field(
        QWEN3_ASSISTANT, max_length=200, description="text after the assistant turn opens, before the yes/no answer"
    )
    chat: Literal["chatml", "tokenizer"] = Field(
        "chatml",
        description="chatml: <|im_start|>system … <|im_end|> turns as Qwen3-Reranker documents them; "
        "tokenizer: the tokenizer's own chat template",
    )
    yes_token: str = Field("yes", min_length=1, description="vocabulary token read as the positive answer")
    no_token: str = Field("no", min_length=1, description="vocabulary token read as the negative answer")

    @field_validator("user")
    @classmethod
    def _placeholders(cls, v: str) -> str:
        missing = [p for p in ("{query}", "{doc}") if p not in v]
        if missing:
            raise ValueError(f"user template lacks {' and '.join(missing)}")
        try:
            fields = [
                f + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "")
                for _, f, spec, conv in string.Formatter().parse(v)
                if f is not None
            ]
        except ValueError as e:
            fields = [f"({e})"]
        odd = [f for f in fields if f not in ("instruction", "query", "doc")]
        if odd:  # a form can send this template: no attribute access, indexing or conversions
            raise ValueError(
                f"user template: only {{instruction}}, {{query}} and {{doc}} are filled in, as they are; "
                f"write other braces doubled (found {{{odd[0]}}})"
            )
        return v


class BM25Spec(_Reranker):
    """BM25 over the candidates, with Turkish casing, Snowball stems and ASCII folding."""

    kind: Literal["bm25"] = Field(description="bm25")
    language: str = Field("turkish", pattern=r"^[a-z]+$", description="Snowball stemmer and casing rules")
    k1: float = Field(1.5, gt=0, description="term-frequency saturation")
    b: float = Field(0.75, ge=0, le=1, description="length normalisation")


DIALECT_FIELDS = {"cohere": ("model", "query", "documents", "top_n"), "tei": ("query", "texts")}


class HttpRerankerSpec(_Reranker):
    """A reranker served elsewhere, behind an HTTP rerank API: a hosted one (Cohere, Jina, Voyage) or a server of
    one's own (text-embeddings-inference, vLLM, Infinity). Every pair goes through the score store, so a pair is paid
    for once; the API key is read from the environment variable `api_key_env` names, never from the config."""

    kind: Literal["http"] = Field(description="http")
    url: str = Field(
        min_length=8,
        max_length=2000,
        description="the rerank endpoint, e.g. https://api.cohere.com/v2/rerank or http://127.0.0.1:8080/rerank",
    )
    dialect: Literal["cohere", "tei"] = Field(
        "cohere",
        description="cohere: {model, query, documents, top_n} → "
        "{results: [{index, relevance_score}]} (Cohere, "
        "Jina, vLLM, Infinity); tei: {query, texts} → "
        "[{index, score}] (text-embeddings-inference)",
    )
    model: str | None = Field(
        None,
        min_length=1,
        max_length=300,
        description="the model name the server expects "
        "(sent as `model` in the cohere dialect; "
        "named in the identity either way)",
    )
    revision: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="what the endpoint serves, in your words (a model version, a deployment "
        "date): change it when the server's model changes, so old and new "
        "scores are never mixed",
    )
    api_key_env: str | None = api_key_env_field()
    batch_size: int = Field(
        32,
        ge=1,
        le=1000,
        description="documents per request (one query each); Cohere bills a search per query and up to 100 documents",
    )
    concurrency: int = Field(
        4,
        ge=1,
        le=64,
        description="requests in flight to this endpoint at most, over the "
        "threads and processes sharing the cache folder",
    )
    timeout: float = Field(60.0, gt=0, le=600, description="seconds a request may take before it is tried again")
    retries: int = Field(
        5, ge=0, le=20, description="tries after the first for a request answered 429 or 5xx, timed out or cut off"
    )
    extra_body: dict[str, str | int | float | bool] = Field(
        default_factory=dict,
        description="fields added to every request as they are, e.g. the server's truncation: "
        "{max_tokens_per_doc: 512} (Cohere), {truncate: true} (TEI), "
        "{truncate_prompt_tokens: 512} (vLLM); part of the identity",
    )

    @property
    def backend(self) -> str:
        """The backend column of the backend table (`terazi.rerank.backends.REGISTRY`): the dialect."""
        return self.dialect

    @field_validator("url")
    @classmethod
    def _endpoint(cls, v: str) -> str:
        return endpoint_url(v)

    @model_validator(mode="after")
    def _own_fields(self):
        taken = [k for k in self.extra_body if k in DIALECT_FIELDS[self.dialect]]
        if taken:
            raise ValueError(f"extra_body: {', '.join(taken)} are set by terazi in the {self.dialect} dialect")
        return self


class RRFSpec(_Reranker):
    """Reciprocal-rank fusion of the rankings of rows listed above it (or first-stage)."""

    kind: Literal["rrf"] = Field(description="rrf")
    fuse: list[SlugName] = Field(min_length=2, description="rows to fuse: first-stage or rows listed above")
    rrf_k: int = Field(60, ge=1, description="k in 1 / (k + rank)")


RerankerSpec = Annotated[
    CrossEncoderSpec | BiEncoderSpec | LLMRerankerSpec | BM25Spec | HttpRerankerSpec | ListwiseSpec | RRFSpec,
    Field(discriminator="kind"),
]
MODEL_KINDS = ("cross-encoder", "bi-encoder", "llm-reranker")


def loads_model(spec) -> bool:
    """The row runs a model in this process (or on the model runner): a model row, or a listwise row without url."""
    return spec.kind in MODEL_KINDS or (spec.kind == "listwise" and not spec.url)


def served(spec) -> bool:
    """The row sends the corpus to an endpoint: an http row, or a listwise row with url."""
    return spec.kind == "http" or (spec.kind == "listwise" and bool(spec.url))


def default_rerankers() -> list:
    """The rows every entry point runs unless told otherwise: lexical BM25 and its fusion with the first stage."""
    return [
        BM25Spec(name="bm25-tr", kind="bm25"),
        RRFSpec(name="hybrid-rrf", kind="rrf", fuse=[FIRST_STAGE, "bm25-tr"]),
    ]


HTTP_KEY = "TERAZI_API_KEY"  # `http:…`: the variable the API key is read from
SPELLINGS = (
    "bm25 | cross-encoder:MODEL | bi-encoder:MODEL | llm-reranker:MODEL | http:[MODEL@]URL (key: "
    f"${HTTP_KEY}) | rrf:A+B, optional =NAME"
)  # what parse_reranker reads


def parse_reranker(text: str) -> dict:
    """`bm25`, `cross-encoder:MODEL`, `bi-encoder:MODEL`, `llm-reranker:MODEL`, `rrf:first-stage+bm25`,
    `http:[MODEL@]URL`; `=NAME` at the end names the row. The row's fields, not yet validated."""
    if text.startswith("http:"):
        return _http_reranker(text.removeprefix("http:"))
    body, _, name = text.partition("=")
    kind, _, arg = body.partition(":")
    if kind == "bm25":
        return {"name": name or "bm25", "kind": "bm25"}
    if kind == "rrf":
        fuse = arg.split("+") if arg else ["first-stage", "bm25"]
        return {"name": name or "hybrid-rrf", "kind": "rrf", "fuse": fuse}
    if kind in MODEL_KINDS and arg:
        return {"name": name or slugify(Path(arg.rstrip("/")).name, kind), "kind": kind, "model": arg}
    raise ValueError(f"cannot read reranker {text!r}; use {SPELLINGS}")


def _http_reranker(text: str) -> dict:
    """`[MODEL@]URL[=NAME]`: a rerank API in the cohere dialect, its key read from `TERAZI_API_KEY` when that is set
    (other settings, and an address with a query string: the config file's `kind: http` row)."""
    rest, eq, name = text.rpartition("=")
    if not eq:
        rest, name = text, ""
    model, at, url = rest.partition("@")
    if not at or "://" in model:
        model, url = "", rest
    row = {
        "name": name or slugify(model.rsplit("/", 1)[-1] or (urlsplit(url).hostname or ""), "http"),
        "kind": "http",
        "url": url,
    }
    return {
        **row,
        **({"model": model} if model else {}),
        **({"api_key_env": HTTP_KEY} if os.environ.get(HTTP_KEY) else {}),
    }
