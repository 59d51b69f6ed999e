"""Scoring backends, one module each, chosen by (kind, backend) from one table; BM25 is a row like the models.

Every backend follows `terazi.rerank.pairs.PairScorer` (`score(pairs)`, `identity`, `max_length`, `batch_size`), is
built by its class's `create(spec, ref=…, cache_dir=…, corpus=…, corpus_fingerprint=…)` and comes wrapped in
`Metered`, which times its scoring calls with the model loaded (`cost()`). Modules are imported only when their row is
used, so onnxruntime is needed only for `backend: onnx`. Nothing is loaded until the first score.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from importlib import import_module

from terazi.models.refs import resolve
from terazi.rerank.backends.base import Metered
from terazi.rerank.pairs import Corpus
from terazi.schemas import RerankerSpec
from terazi.schemas.rerankers import loads_model

REGISTRY: dict[tuple[str, str], str] = {
    ("bm25", "bm25s"): "terazi.rerank.backends.bm25:BM25Scorer",
    ("cross-encoder", "torch"): "terazi.rerank.backends.torch_cross:TorchCrossEncoder",
    ("cross-encoder", "onnx"): "terazi.rerank.backends.onnx:OnnxCrossEncoder",
    ("bi-encoder", "torch"): "terazi.rerank.backends.torch_bi:TorchBiEncoder",
    ("bi-encoder", "onnx"): "terazi.rerank.backends.onnx:OnnxBiEncoder",
    ("llm-reranker", "torch"): "terazi.rerank.backends.llm:LLMReranker",
    ("http", "cohere"): "terazi.rerank.backends.http:HttpReranker",
    ("http", "tei"): "terazi.rerank.backends.http:HttpReranker",
    ("listwise", "served"): "terazi.rerank.listwise.answerers:ServedAnswerer",
    ("listwise", "torch"): "terazi.rerank.listwise.answerers:LocalAnswerer",
}
MAX_SCORERS = 4


def backend_of(spec: RerankerSpec) -> str:
    """The backend column of the table: a model row's `backend` (torch unless it says onnx), bm25s for BM25."""
    return "bm25s" if spec.kind == "bm25" else getattr(spec, "backend", "torch")


def backend_class(kind: str, backend: str = "torch") -> type:
    try:
        module, name = REGISTRY[(kind, backend)].split(":")
    except KeyError:
        known = ", ".join(f"{k}/{b}" for k, b in REGISTRY)
        raise ValueError(f"no backend {backend!r} for kind {kind!r}; known: {known}") from None
    return getattr(import_module(module), name)


def make_scorer(
    spec: RerankerSpec, corpus: Corpus, corpus_fingerprint: str, offline: bool, cache_dir: str = ".terazi-cache"
) -> Metered:
    """The row's scorer, metered (`cost()`); `cache_dir` holds ONNX exports and int8 copies."""
    ref = resolve(spec.model, spec.revision, offline, cache_dir) if loads_model(spec) else None
    cls = backend_class(spec.kind, backend_of(spec))
    return Metered(cls.create(spec, ref=ref, cache_dir=cache_dir, corpus=corpus, corpus_fingerprint=corpus_fingerprint))


_scorers: OrderedDict[str, tuple[Metered, threading.Lock]] = OrderedDict()
_scorers_lock = threading.Lock()


def shared_scorer(
    spec: RerankerSpec, corpus: Corpus, corpus_fingerprint: str, offline: bool, cache_dir: str = ".terazi-cache"
) -> tuple[Metered, threading.Lock]:
    """One scorer per (reranker, corpus) in this process, with the lock its users score under: chunk tasks on
    threads or on a worker load a model (or build a BM25 index) once, and never run it from two threads."""
    key = f"{spec.model_dump_json()}|{corpus_fingerprint}"
    with _scorers_lock:
        if key not in _scorers:
            _scorers[key] = (make_scorer(spec, corpus, corpus_fingerprint, offline, cache_dir), threading.Lock())
            while len(_scorers) > MAX_SCORERS:
                _scorers.popitem(last=False)
        _scorers.move_to_end(key)
        return _scorers[key]
