"""What every backend shares: device and precision resolved once, a score identity known before the model loads,
batches sized from free GPU memory (halved on CUDA out-of-memory), and the meter that times scoring.

The identity names everything that can change a score (issue: score identity): the model's files (hash of a local
folder, or hub id @ revision), the kind, the backend (with the ONNX file and quantisation), the precision, the device
kind, max_length and the activation or scoring rule. The score cache is keyed on it, so fp16 GPU scores and fp32
CPU scores of one model are never mixed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from terazi.models.refs import ModelRef, local_folder, model_config, pick_device, weights_info
from terazi.models.text import clip
from terazi.rerank.pairs import Pair
from terazi.schemas import ModelCost

log = logging.getLogger("terazi.backends")
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1}
CPU_BATCH, CPU_BATCH_LLM, MAX_AUTO_BATCH = 32, 8, 512
# Model rows run as parallel tasks in one process; transformers' lazy imports are not thread-safe (two threads
# importing a model class at once can fail with "cannot import name"), and two exports of one model must not race.
LOADING = threading.RLock()
# One timed call per device at a time: rows scored by parallel tasks of one process would otherwise share the cores
# (or the GPU) and each row's pairs/s would depend on what else ran beside it.
_DEVICES: dict[str, threading.Lock] = {}


def device_lock(device: str) -> threading.Lock:
    with LOADING:
        return _DEVICES.setdefault(device, threading.Lock())


def device_kind(device: str) -> str:
    """`cuda:1` -> `cuda`: what the identity records (one GPU model's fp16 equals another's to rounding)."""
    return device.split(":")[0]


def precision_of(requested: str, device: str, llm: bool = False) -> str:
    """auto: fp32 off CUDA; on CUDA fp16, or for an LLM bf16 where the GPU supports it (LLMs are trained in bf16 and
    can overflow fp16)."""
    if requested != "auto":
        return requested
    if device_kind(device) != "cuda":
        return "fp32"
    if llm:
        import torch

        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "fp16"


def auto_batch(
    free_bytes: int, weight_bytes: int, config: dict, max_length: int, dtype_bytes: int, cap: int = MAX_AUTO_BATCH
) -> int:
    """The largest power-of-two batch whose inference activations fit in the free GPU memory.

    Per item, the peak of one transformer layer at `max_length` tokens: attention scores and their softmax
    (heads × L² each), the feed-forward intermediate before and after its activation (L × intermediate each), and
    about eight hidden-size buffers (residual, q, k, v, attention output, norms); plus the fp32 logits of one
    position for a language model. Budget: 80% of the free memory less the weights and 512 MiB for the CUDA
    context, halved again for allocator fragmentation.
    """
    hidden = int(config.get("hidden_size") or config.get("d_model") or 1024)
    heads = int(config.get("num_attention_heads") or max(1, hidden // 64))
    inter = int(config.get("intermediate_size") or 4 * hidden)
    L = int(max_length or config.get("max_position_embeddings") or 512)
    per_item = dtype_bytes * (2 * heads * L * L + 2 * L * inter + 8 * L * hidden)
    if config.get("architectures") and str(config["architectures"][0]).endswith("ForCausalLM"):
        per_item += 4 * int(config.get("vocab_size") or 0)
    budget = 0.8 * free_bytes - weight_bytes - (512 << 20)
    n = int(budget // (2 * per_item)) if budget > 0 else 1
    n = max(1, min(cap, n))
    return 1 << (n.bit_length() - 1)


class Backend:
    """A model behind the `PairScorer` protocol: identity and max_length known before loading; the model loads on
    the first `load()` or `score()`, so a run whose pairs are all cached never loads it."""

    kind = ""
    backend = "torch"
    llm = False

    @classmethod
    def create(cls, spec, *, ref: ModelRef, cache_dir: str, **_) -> Backend:
        """The backend table's constructor (`terazi.rerank.backends.make_scorer`): a model row needs its reference
        and the cache folder (ONNX exports); the corpus is BM25's alone."""
        return cls(spec, ref, cache_dir)

    def __init__(self, spec, ref: ModelRef, cache_dir: str):
        self.spec, self.ref, self.cache_dir = spec, ref, cache_dir
        self.device = self._device()
        self.precision = self._precision()
        self.max_length = spec.max_length or 0
        self._batch: int | None = None if spec.batch_size == "auto" else spec.batch_size
        self._model = None
        self._params: int | None = None
        self.identity = ":".join(
            [
                self.kind,
                ref.identity,
                self._backend_part(),
                f"{self.precision}@{device_kind(self.device)}",
                f"len={self.max_length or 'model'}",
                self._rule(),
            ]
        )

    # --- what subclasses describe ---
    def _device(self) -> str:
        return pick_device(self.spec.device)

    def _precision(self) -> str:
        return precision_of(self.spec.precision, self.device, self.llm)

    def _backend_part(self) -> str:
        return self.backend

    def _rule(self) -> str:
        """How a model output becomes a score (activation, cosine, yes/no logits)."""
        raise NotImplementedError

    def _load(self):
        raise NotImplementedError

    def _score(self, pairs: list[Pair]) -> np.ndarray:
        raise NotImplementedError

    def size_bytes(self) -> int | None:
        folder = local_folder(self.ref)
        return weights_info(folder)[1] if folder else None

    # --- shared behaviour ---
    def load(self) -> None:
        if self._model is None:
            with LOADING:
                if self._model is None:
                    self._model = self._load()

    @property
    def model(self):
        self.load()
        return self._model

    def score(self, pairs: list[Pair]) -> np.ndarray:
        self.load()
        if not pairs:
            return np.zeros(0, dtype=np.float64)
        return np.asarray(self._score(pairs), dtype=np.float64)

    @property
    def batch_size(self) -> int:
        if self._batch is None:
            self._batch = self._auto_batch()
        return self._batch

    def _auto_batch(self) -> int:
        if device_kind(self.device) != "cuda":
            return CPU_BATCH_LLM if self.llm else CPU_BATCH
        import torch

        free, _ = torch.cuda.mem_get_info(torch.device(self.device))
        params = self.params() or 0
        batch = auto_batch(
            free,
            params * DTYPE_BYTES.get(self.precision, 4),
            model_config(self.ref),
            self.max_length,
            DTYPE_BYTES.get(self.precision, 4),
        )
        log.info("%s: batch size %d from %.1f GiB free GPU memory", self.ref.name, batch, free / 2**30)
        return batch

    def params(self) -> int | None:
        if self._params is None:
            if self._model is not None:
                self._params = self._count_loaded()
            else:
                folder = local_folder(self.ref)
                self._params = weights_info(folder)[0] if folder else None
        return self._params

    def _count_loaded(self) -> int | None:
        try:
            return int(sum(p.numel() for p in self._model.parameters()))
        except AttributeError:
            return None

    def describe(self) -> dict:
        return {
            "params": self.params(),
            "size_bytes": self.size_bytes(),
            "device": device_kind(self.device),
            "precision": self.precision,
            "batch_size": self.batch_size,
        }

    def backing_off(self, run: Callable[[int], np.ndarray]) -> np.ndarray:
        """`run(batch_size)`, halving the batch on CUDA out-of-memory (the smaller size is kept for later calls)."""
        import torch

        while True:
            try:
                return run(self.batch_size)
            except torch.cuda.OutOfMemoryError:
                if self.batch_size == 1:
                    raise
                torch.cuda.empty_cache()
                self._batch = self.batch_size // 2
                log.warning("%s: CUDA out of memory, batch size now %d", self.ref.name, self._batch)


class Metered:
    """Times a scorer's `score()` calls with the model already loaded and warmed up (the very first pair is scored on
    its own, outside the timer, and its score kept: no pair is scored twice), so the throughput is the warm model's:
    no load, no score-cache reads or writes, no first-call set-up.
    Timed calls on one device take turns (`device_lock`), so parallel rows do not slow each other's figures.

    Wraps any `PairScorer`; a scorer without `load()` (BM25) is loaded by scoring an empty list. A scorer that
    encodes texts (a bi-encoder: `hold`) is given many pairs at once first (`holding`); its encoding is timed as
    scoring, and a text it finds already encoded costs nothing, not even a model load. A scorer served elsewhere
    (`remote`: each call is a paid request) has no warm-up pair and no latency probe: its latency is that of its
    requests (`request_log`).
    """

    def __init__(self, inner):
        self.inner = inner
        self.items, self.seconds, self.latencies_ms = 0, 0.0, []
        self._warm = self._holding = False
        self._lock = device_lock(getattr(inner, "device", "cpu"))

    def __getattr__(self, name: str):
        """Anything else a scorer offers (its model, `load()`, `describe()`) is the wrapped scorer's."""
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def max_length(self) -> int:
        return self.inner.max_length

    @property
    def batch_size(self) -> int:
        return self.inner.batch_size

    def warm(self, pairs: list[Pair]) -> np.ndarray:
        """Load the model and score the first pair untimed (first-call set-up); returns that pair's score."""
        if self._warm or getattr(self.inner, "remote", False):
            return np.zeros(0)
        load = getattr(self.inner, "load", None)
        if load is not None:
            load()
        else:
            self.inner.score([])
        self._warm = True
        return np.asarray(self.inner.score(pairs[:1]), dtype=np.float64) if pairs else np.zeros(0)

    def _clipped(self, pairs: list[Pair]) -> list[Pair]:
        """Long texts cost what the model sees: cut before tokenisation (terazi.models.text.clip)."""
        n = self.inner.max_length
        return [Pair(clip(p.query, n), p.doc_id, clip(p.doc, n)) for p in pairs] if n else pairs

    @contextmanager
    def holding(self, pairs: list[Pair]) -> Iterator[None]:
        """`pairs` are about to be scored block by block: a scorer that encodes texts gets each distinct text's
        vector once for all of them (found, or encoded then), and scores the blocks from those."""
        hold = getattr(self.inner, "hold", None)
        if hold is None or not pairs:
            yield
            return
        hold(self._clipped(pairs), self._timed)
        self._holding = True
        try:
            yield
        finally:
            self._holding = False
            self.inner.release()

    def _timed(self, encode: Callable[[list[str]], np.ndarray], texts: list[str]) -> np.ndarray:
        """`encode(texts)` timed as scoring; the first call loads the model and encodes one text untimed."""
        if not self._warm:
            encode(texts[:1])
            self._warm = True
        with self._lock:
            start = time.perf_counter()
            out = encode(texts)
            self.seconds += time.perf_counter() - start
        return out

    def score(self, pairs: list[Pair]) -> np.ndarray:
        pairs = self._clipped(pairs)
        first = np.zeros(0) if self._holding else self.warm(pairs)  # held vectors need no model
        rest = pairs[len(first) :]
        with self._lock:
            start = time.perf_counter()
            out = np.asarray(self.inner.score(rest), dtype=np.float64) if rest else np.zeros(0)
            self.seconds += time.perf_counter() - start
        self.items += len(rest)
        return np.concatenate([first, out])

    def time_queries(self, groups: list[list[Pair]], budget_s: float) -> None:
        """Latency per query: each group (one query's candidates) scored as one call, until `budget_s` is spent."""
        if getattr(self.inner, "remote", False):
            return
        spent = 0.0
        for group in groups:
            if not group or (self.latencies_ms and spent >= budget_s):
                break
            group = self._clipped(group)  # timed on the texts `score` gives the model
            self.warm(group)
            with self._lock:
                start = time.perf_counter()
                self.inner.score(group)
                took = time.perf_counter() - start
            spent += took
            self.latencies_ms.append(1000 * took)

    def cost(self, cached: bool = False) -> ModelCost:
        describe = getattr(self.inner, "describe", None)
        info = describe() if describe else {"device": "cpu", "batch_size": self.inner.batch_size}
        lat = np.asarray(self.latencies_ms)
        return ModelCost(
            **info,
            items=self.items,
            seconds=round(self.seconds, 6),
            cached=cached,
            latency_p50_ms=round(float(np.percentile(lat, 50)), 3) if lat.size else None,
            latency_p95_ms=round(float(np.percentile(lat, 95)), 3) if lat.size else None,
            latency_queries=int(lat.size),
        )
