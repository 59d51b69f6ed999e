"""Scoring backends, one module each, chosen by (kind, backend) from one table.

Every backend follows the `PairScorer` protocol of `terazi.rerankers` (`score(pairs)`, `identity`, `max_length`,
`batch_size`) and comes wrapped in `Metered`, which times its scoring calls with the model loaded (`cost()`).
Modules are imported only when their row is used, so onnxruntime is needed only for `backend: onnx`.
"""

from __future__ import annotations

from importlib import import_module

from terazi.rerank.backends.base import Backend, Metered

REGISTRY: dict[tuple[str, str], str] = {
    ("cross-encoder", "torch"): "terazi.rerank.backends.torch_cross:TorchCrossEncoder",
    ("cross-encoder", "onnx"): "terazi.rerank.backends.onnx:OnnxCrossEncoder",
    ("bi-encoder", "torch"): "terazi.rerank.backends.torch_bi:TorchBiEncoder",
    ("bi-encoder", "onnx"): "terazi.rerank.backends.onnx:OnnxBiEncoder",
    ("llm-reranker", "torch"): "terazi.rerank.backends.llm:LLMReranker",
}


def backend_class(kind: str, backend: str = "torch") -> type[Backend]:
    try:
        module, name = REGISTRY[(kind, backend)].split(":")
    except KeyError:
        known = ", ".join(f"{k}/{b}" for k, b in REGISTRY)
        raise ValueError(f"no backend {backend!r} for kind {kind!r}; known: {known}") from None
    return getattr(import_module(module), name)


def make_backend(spec, ref, cache_dir: str) -> Metered:
    """The metered backend of a model row (spec: CrossEncoderSpec, BiEncoderSpec or LLMRerankerSpec)."""
    return Metered(backend_class(spec.kind, getattr(spec, "backend", "torch"))(spec, ref, cache_dir))


__all__ = ["REGISTRY", "Backend", "Metered", "backend_class", "make_backend"]
