"""What a row costs, measured where it runs and remembered across runs.

A reranker's speed is taken inside its scoring calls (`terazi.rerank.backends.base.Metered`, folded per row by
`terazi.rerank.metering`): the model is loaded and warmed up first, and score-cache reads and writes happen outside the
timer, so a slow disk or a slow model load changes nothing. The figures are stored in the cache folder beside the
scores (`costs/<identity hash>.json`, `CostStore`): a later run whose pairs all come from the cache reports "cached"
with the figures of the runs that scored them.

A reranker served over HTTP also counts its requests (`RequestLog`): how many were answered, how many were sent
again, and each answered one's round trip, summed and stored like the rest (`RequestCost`).

The first stage's encoder is timed the same way (`TimedEncoder`) and its figures are kept in the frozen candidates'
manifest.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

import numpy as np
from filelock import FileLock

from terazi.base import fingerprint
from terazi.base.paths import write_atomic
from terazi.models.refs import ModelRef, local_folder, weights_info
from terazi.schemas import ListwiseCost, ModelCost, RequestCost
from terazi.store.layout import CacheLayout

log = logging.getLogger("terazi.costs")


class CostStore:
    """Per score identity: pairs scored and seconds, summed over the runs that scored them; the latest latency."""

    def __init__(self, cache_dir: str | Path):
        self.root = CacheLayout(cache_dir).part("costs")

    def _path(self, identity: str) -> Path:
        return self.root / f"{fingerprint.of_text(identity)}.json"

    def get(self, identity: str) -> ModelCost | None:
        path = self._path(identity)
        if not path.is_file():
            return None
        try:
            body = json.loads(path.read_text(encoding="utf-8"))
            return ModelCost.model_validate(body["cost"]) if body.get("identity") == identity else None
        except (ValueError, KeyError, TypeError, AttributeError) as e:  # figures only: never worth failing a run
            log.warning("%s is damaged (%s): its cost figures are ignored and written anew", path, type(e).__name__)
            return None

    def add(self, identity: str, cost: ModelCost) -> ModelCost:
        """Fold this run's figures into the stored ones; returns what is stored now. Runs sharing the cache folder
        take turns (a file lock), so two that finish together both count."""
        self.root.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self._path(identity)) + ".lock"):
            return self._add(identity, cost)

    def _add(self, identity: str, cost: ModelCost) -> ModelCost:
        earlier = self.get(identity)
        if earlier is not None:
            keep = cost if cost.latency_queries else earlier
            cost = cost.model_copy(
                update={
                    "items": earlier.items + cost.items,
                    "seconds": round(earlier.seconds + cost.seconds, 6),
                    "latency_p50_ms": keep.latency_p50_ms,
                    "latency_p95_ms": keep.latency_p95_ms,
                    "latency_queries": keep.latency_queries,
                    "requests": add_requests([earlier.requests, cost.requests]),
                }
            )
        path = self._path(identity)
        record = json.dumps({"identity": identity, "cost": cost.model_dump()}, indent=1)
        write_atomic(path, lambda p: p.write_text(record, encoding="utf-8"))
        return cost


def combine(costs: list[ModelCost | None]) -> ModelCost | None:
    """One figure from several (a row's chunks, shards or datasets): where pairs were scored, items and seconds
    summed (the latency of the most-timed part); when nothing was scored anywhere, the stored figures, marked cached."""
    costs = [c for c in costs if c is not None]
    if not costs:
        return None
    fresh = [c for c in costs if not c.cached and c.items]
    answers = add_listwise([c.listwise for c in costs])
    if not fresh:
        timed = [c for c in costs if c.items]
        return (timed or costs)[0].model_copy(update={"cached": True, "listwise": answers})
    lat = max(fresh, key=lambda c: c.latency_queries)
    return fresh[0].model_copy(
        update={
            "items": sum(c.items for c in fresh),
            "seconds": round(sum(c.seconds for c in fresh), 6),
            "cached": False,
            "latency_p50_ms": lat.latency_p50_ms,
            "latency_p95_ms": lat.latency_p95_ms,
            "latency_queries": lat.latency_queries,
            "requests": add_requests([c.requests for c in fresh]),
            "listwise": answers,
        }
    )


def add_listwise(parts: list[ListwiseCost | None]) -> ListwiseCost | None:
    """A listwise row's windows, requests, tokens and outcomes over its parts (chunks, datasets), summed."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    return ListwiseCost(**{f: sum(getattr(p, f) for p in parts) for f in ListwiseCost.model_fields})


def add_requests(parts: list[RequestCost | None]) -> RequestCost | None:
    """Requests and retries summed; the latency of the part that answered the most requests (percentiles do not
    add up)."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    most = max(parts, key=lambda p: p.requests)
    return most.model_copy(
        update={"requests": sum(p.requests for p in parts), "retries": sum(p.retries for p in parts)}
    )


class RequestLog:
    """The requests of one scorer served over HTTP, from any of its threads: each answered one's round trip in
    milliseconds, and the tries sent again. `since(mark())` is a part of them (one chunk's)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.ms: list[float] = []
        self.retries = 0

    def answered(self, ms: float) -> None:
        with self._lock:
            self.ms.append(ms)

    def retried(self) -> None:
        with self._lock:
            self.retries += 1

    def mark(self) -> tuple[int, int]:
        with self._lock:
            return len(self.ms), self.retries

    def since(self, mark: tuple[int, int] = (0, 0)) -> RequestCost:
        with self._lock:
            ms, retries = np.asarray(self.ms[mark[0] :]), self.retries - mark[1]
        return RequestCost(
            requests=int(ms.size),
            retries=retries,
            p50_ms=round(float(np.percentile(ms, 50)), 3) if ms.size else None,
            p95_ms=round(float(np.percentile(ms, 95)), 3) if ms.size else None,
        )


class TimedEncoder:
    """The first stage's sentence-transformers encoder, timed like a reranker: `encode()` calls after a one-text
    warm-up, the load outside the timer."""

    def __init__(self, model, ref: ModelRef, batch_size: int | None = None):
        self.model, self.ref, self.batch_size = model, ref, batch_size
        self.items, self.seconds, self._warm = 0, 0.0, False

    def encode(self, texts, **kw):
        if not self._warm and len(texts):
            self.model.encode(texts[:1], **kw)
            self._warm = True
        start = time.perf_counter()
        out = self.model.encode(texts, **kw)
        self.seconds += time.perf_counter() - start
        self.items += len(texts)
        return out

    def __getattr__(self, name: str):
        return getattr(self.model, name)

    def cost(self) -> ModelCost:
        folder = local_folder(self.ref)
        params = sum(p.numel() for p in self.model.parameters())
        dtype = str(next(self.model.parameters()).dtype)
        precision = {"torch.float32": "fp32", "torch.float16": "fp16", "torch.bfloat16": "bf16"}.get(dtype, dtype)
        return ModelCost(
            params=int(params),
            size_bytes=weights_info(folder)[1] if folder else None,
            device=str(self.model.device).split(":")[0],
            precision=precision,
            unit="texts",
            batch_size=self.batch_size,
            items=self.items,
            seconds=round(self.seconds, 6),
        )
