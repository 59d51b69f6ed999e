"""What a rerank API is sent and what it must answer, per dialect: one query and its documents in, one finite score
per document out.

- `cohere`: `{model, query, documents, top_n}` → `{results: [{index, relevance_score}, …]}`, the body Cohere's
  `/v2/rerank` defined and Jina, Voyage, vLLM (`/v1/rerank`) and Infinity (`/rerank`) accept; `top_n` is the number
  of documents, so every document comes back.
- `tei`: `{query, texts}` → `[{index, score}, …]`, text-embeddings-inference's `/rerank`.

An answer is refused whole (a `ServiceError` naming what is wrong) unless it gives each document of the request
exactly one finite score: a missing, repeated or out-of-range index, a wrong count, or a score that is not a finite
number means the pairs cannot be told apart, and a score stored for the wrong pair would be paid for and wrong.
"""

from __future__ import annotations

import math

import numpy as np

from terazi.base.errors import ServiceError

SCORE_FIELD = {"cohere": "relevance_score", "tei": "score"}


def body(spec, query: str, docs: list[str]) -> dict:
    """The request for one query and its documents, with the spec's `extra_body` (the server's truncation, …)."""
    if spec.dialect == "tei":
        return {"query": query, "texts": docs, **spec.extra_body}
    return {
        **({"model": spec.model} if spec.model else {}),
        "query": query,
        "documents": docs,
        "top_n": len(docs),
        **spec.extra_body,
    }


def scores(dialect: str, payload, n: int, where: str) -> np.ndarray:
    """The `n` documents' scores in request order from a decoded answer, or a `ServiceError` saying what is wrong
    with it (`where`: the row and endpoint, for the message)."""

    def refuse(problem: str) -> ServiceError:
        return ServiceError(f"{where}: malformed answer ({problem}); no score of this request is kept")

    items = payload.get("results") if dialect == "cohere" and isinstance(payload, dict) else payload
    if not isinstance(items, list):
        shape = "a list" if dialect == "tei" else "an object with a `results` list"
        raise refuse(f"expected {shape}, got {type(payload).__name__}")
    if len(items) != n:
        raise refuse(f"{len(items)} results for {n} documents")
    field = SCORE_FIELD[dialect]
    out = np.full(n, np.nan)
    for item in items:
        if not isinstance(item, dict):
            raise refuse(f"a result is {type(item).__name__}, not an object")
        index, value = item.get("index"), item.get(field)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n:
            raise refuse(f"result index {index!r} is not a whole number in 0…{n - 1}")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            raise refuse(f"`{field}` of index {index} is {value!r}, not a finite number")
        if not np.isnan(out[index]):
            raise refuse(f"index {index} is given twice")
        out[index] = value
    return out
