"""First-stage dense retrieval: embeddings in shards on disk, exact search shard by shard, or an index.

A shard is a contiguous block of rows (documents or distinct query texts), encoded by one task and saved
as one `.npy` file (written, then renamed: a killed worker leaves no half shard). Search memory-maps the
shards one at a time and keeps a running top-k, so the searching process holds one shard, not the corpus.
Exact search is FAISS's own (`faiss.knn`, the code `IndexFlatIP.search` runs), its lists ranked by the field's tie
rule (score descending, then document id descending, as trec_eval; `terazi.metrics.contracts`), not FAISS's order:
each shard is searched `MARGIN` documents past the cut, and a query whose last document searched still ties the
cut's score is searched again deeper, alone, until the tie is whole, so which of several tied documents make the
top `depth` is the rule's choice too. FAISS is imported where it searches: a run whose candidates are frozen never
loads it (a tenth of a second of a warm rerun).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from terazi.models.text import clip

if TYPE_CHECKING:
    import faiss

log = logging.getLogger("terazi.retrieval")
AUTO_EXACT_LIMIT = 2_000_000  # exact search costs ~5 ms per query at 1M passages: approximate only above this
ENCODE_BLOCK = 2048
RECALL_SAMPLE = 1000
MARGIN = 16  # documents searched past the cut, so that a tie across it is seen


def encode(
    model,
    texts: list[str],
    batch_size: int,
    prefix: str = "",
    on_progress: Callable[[int, int], None] | None = None,
    max_length: int | None = None,
) -> np.ndarray:
    """Unit-normalised float32 embeddings, so inner product is cosine similarity; encoded in blocks so
    that long encodings report progress (and can be stopped) between blocks. Texts are cut to the
    character budget of `max_length` tokens first (`terazi.models.text.clip`)."""
    if not texts:
        return np.zeros((0, model.get_embedding_dimension()), dtype=np.float32)
    parts = []
    for i in range(0, len(texts), ENCODE_BLOCK):
        block = [clip(prefix + t, max_length) for t in texts[i : i + ENCODE_BLOCK]]
        parts.append(
            model.encode(
                block, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
            )
        )
        if on_progress:
            on_progress(min(i + ENCODE_BLOCK, len(texts)), len(texts))
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)


def shard_bounds(n: int, size: int) -> list[tuple[int, int]]:
    return [(a, min(a + size, n)) for a in range(0, n, size)]


def shard_path(folder: Path, start: int, stop: int) -> Path:
    return folder / f"rows-{start:010d}-{stop:010d}.npy"


def load_shard(path: Path, rows: int) -> np.ndarray | None:
    """A shard memory-mapped, or None when it is missing, unreadable or of the wrong size."""
    try:
        emb = np.load(path, mmap_mode="r")
    except (OSError, ValueError):
        if path.exists():
            log.warning("embedding shard %s is unreadable: encoding it again", path)
        return None
    if emb.ndim != 2 or emb.shape[0] != rows or emb.dtype != np.float32:
        log.warning("embedding shard %s has shape %s for %d rows: encoding it again", path, emb.shape, rows)
        return None
    return emb


def shards(folder: Path, bounds: list[tuple[int, int]]) -> Iterator[tuple[int, np.ndarray]]:
    """(first row, memory-mapped embeddings) of each shard, one at a time."""
    for a, z in bounds:
        emb = load_shard(shard_path(folder, a, z), z - a)
        if emb is None:
            raise FileNotFoundError(f"embedding shard {shard_path(folder, a, z)} is missing or damaged")
        yield a, emb
        del emb


def stack(folder: Path, bounds: list[tuple[int, int]]) -> np.ndarray:
    """All shards of a (small) set in memory, e.g. the query embeddings."""
    parts = [np.asarray(e) for _, e in shards(folder, bounds)]
    return np.ascontiguousarray(np.concatenate(parts)) if parts else np.zeros((0, 0), np.float32)


def by_rule(scores: np.ndarray, rows: np.ndarray, id_order: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The first `k` of each query's (scores, rows) by the tie rule: score descending, then `id_order` of the row
    ascending (document id descending); a missing row (−1, an approximate index's) last."""
    missing = rows < 0
    order = np.lexsort(
        (np.where(missing, len(id_order), id_order[np.where(missing, 0, rows)]), -scores, missing), axis=1
    )[:, :k]
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(rows, order, axis=1)


def _shard_top(
    faiss, queries: np.ndarray, emb: np.ndarray, k: int, id_order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The `k` best rows of one shard per query by the tie rule (`id_order`: the shard's rows'), every tie across
    the cut seen: FAISS's list goes `MARGIN` rows past the cut, and a query whose last row searched ties its k-th
    score is searched again, alone, twice as deep, until its last row searched scores below (or the shard ends)."""
    n = emb.shape[0]
    want = np.full(len(queries), min(n, k + MARGIN))
    s, i = faiss.knn(queries, emb, int(want[0]), metric=faiss.METRIC_INNER_PRODUCT)
    top_s, top_i = by_rule(s, i, id_order, k)
    open_ = (want < n) & (s[:, -1] >= top_s[:, -1])
    while open_.any():
        for q in np.flatnonzero(open_):
            want[q] = min(n, 2 * want[q])
            s, i = faiss.knn(queries[q : q + 1], emb, int(want[q]), metric=faiss.METRIC_INNER_PRODUCT)
            top_s[q], top_i[q] = (x[0] for x in by_rule(s, i, id_order, k))
            open_[q] = want[q] < n and s[0, -1] >= top_s[q, -1]
    return top_s, top_i


def exact_search(
    corpus: Iterable[tuple[int, np.ndarray]], queries: np.ndarray, depth: int, id_order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Scores and corpus rows of the `depth` best documents per query, best first by the tie rule (`id_order`: each
    corpus row's place in document id descending order, `terazi.metrics.contracts.id_order`), shard by shard."""
    import faiss

    best_s = best_i = None
    for offset, emb in corpus:
        s, i = _shard_top(faiss, queries, emb, min(depth, emb.shape[0]), id_order[offset : offset + emb.shape[0]])
        i = i + offset
        if best_s is not None:
            s, i = by_rule(np.concatenate([best_s, s], axis=1), np.concatenate([best_i, i], axis=1), id_order, depth)
        best_s, best_i = s, i
    return best_s, best_i


def choose_index(kind: str, n: int) -> str:
    if kind == "auto":
        return "flat" if n <= AUTO_EXACT_LIMIT else "hnsw"
    if kind not in ("flat", "hnsw", "ivf"):
        raise ValueError(f"unknown index type {kind!r}")
    return kind


def build_index(
    corpus: Callable[[], Iterable[tuple[int, np.ndarray]]],
    n: int,
    dim: int,
    kind: str,
    hnsw_m: int = 32,
    ef_search: int = 256,
    nlist: int | None = None,
    nprobe: int = 16,
) -> tuple[faiss.Index, dict[str, str | int]]:
    """An approximate index filled shard by shard. IVF trains on an evenly spaced sample of the corpus,
    with 4·√n lists unless told (FAISS wants ≥ 39 training points per list)."""
    import faiss

    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = ef_search
        params = {"type": "IndexHNSWFlat", "M": hnsw_m, "efSearch": ef_search}
    elif kind == "ivf":
        nlist = max(1, min(nlist or int(4 * math.sqrt(n)), n // 39))
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
        want = min(n, 256 * nlist)
        rows = np.unique(np.linspace(0, n - 1, want).astype(np.int64))
        sample = [np.asarray(emb[rows[(rows >= a) & (rows < a + len(emb))] - a]) for a, emb in corpus()]
        index.train(np.ascontiguousarray(np.concatenate(sample)))
        index.nprobe = min(nprobe, nlist)
        params = {"type": "IndexIVFFlat", "nlist": nlist, "nprobe": index.nprobe}
    else:
        raise ValueError(f"no approximate index called {kind!r}")
    for _, emb in corpus():
        index.add(np.ascontiguousarray(emb))
    return index, params


def search_index(
    index: faiss.Index, queries: np.ndarray, depth: int, id_order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Scores and row ids (−1 where fewer than `depth` documents exist), best first by the tie rule among the
    `depth` + `MARGIN` the index returns (an approximate search: a tie across that cut is not looked for)."""
    s, i = index.search(queries, min(depth + MARGIN, index.ntotal))
    return by_rule(s, i, id_order, min(depth, index.ntotal))


def recall_against_exact(approx_rows: np.ndarray, exact_rows: np.ndarray) -> float:
    """Mean share of each query's exact top-k that the approximate top-k found."""
    hits = [len(set(a[a >= 0].tolist()) & set(e.tolist())) / max(1, len(e)) for a, e in zip(approx_rows, exact_rows)]
    return float(np.mean(hits)) if hits else 1.0


def sample_rows(n: int, k: int = RECALL_SAMPLE) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, min(n, k)).astype(np.int64)) if n else np.zeros(0, np.int64)
