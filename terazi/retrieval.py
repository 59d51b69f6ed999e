"""First-stage dense retrieval: cached corpus embeddings, a FAISS index, top-k per query text."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

import faiss
import numpy as np

log = logging.getLogger("terazi.retrieval")
AUTO_EXACT_LIMIT = 500_000


ENCODE_BLOCK = 2048


def encode(model, texts: list[str], batch_size: int, prefix: str = "",
           on_progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """Unit-normalised float32 embeddings, so inner product is cosine similarity; encoded in blocks so
    that long encodings report progress (and can be stopped) between blocks."""
    if not texts:
        return np.zeros((0, model.get_embedding_dimension()), dtype=np.float32)
    parts = []
    for i in range(0, len(texts), ENCODE_BLOCK):
        block = [prefix + t for t in texts[i : i + ENCODE_BLOCK]]
        parts.append(model.encode(block, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True,
                                  show_progress_bar=False))
        if on_progress:
            on_progress(min(i + ENCODE_BLOCK, len(texts)), len(texts))
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)


def cached_corpus_embeddings(model, texts: list[str], path: Path, batch_size: int, prefix: str = "",
                             on_progress: Callable[[int, int], None] | None = None) -> tuple[np.ndarray, bool]:
    """Embeddings of the corpus, read from `path` when an earlier run computed them."""
    if path.is_file():
        emb = np.load(path)
        if emb.shape[0] == len(texts):
            return emb, True
        log.warning("embedding cache %s has %d rows for %d documents; recomputing", path, emb.shape[0], len(texts))
    emb = encode(model, texts, batch_size, prefix, on_progress)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, emb)
    tmp.replace(path)
    return emb, False


def build_index(emb: np.ndarray, kind: str = "flat", hnsw_m: int = 32, ef_search: int = 256,
                nlist: int = 256, nprobe: int = 16) -> tuple[faiss.Index, dict[str, str | int]]:
    """Exact inner-product search by default; HNSW or IVF when asked. Returns the parameters used."""
    d = emb.shape[1]
    if kind == "auto":  # exact search is cheap up to a few hundred thousand vectors (see the notes)
        kind = "flat" if emb.shape[0] <= AUTO_EXACT_LIMIT else "hnsw"
    if kind == "flat":
        index, params = faiss.IndexFlatIP(d), {"type": "IndexFlatIP"}
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = ef_search
        params = {"type": "IndexHNSWFlat", "M": hnsw_m, "efSearch": ef_search}
    elif kind == "ivf":
        nlist = max(1, min(nlist, emb.shape[0] // 39))  # FAISS wants ~39 points per centroid
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, nlist, faiss.METRIC_INNER_PRODUCT)
        index.train(emb)
        index.nprobe = min(nprobe, nlist)
        params = {"type": "IndexIVFFlat", "nlist": nlist, "nprobe": index.nprobe}
    else:
        raise ValueError(f"unknown index type {kind!r}")
    index.add(emb)
    return index, params


def search(index: faiss.Index, queries: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores and row ids (−1 where fewer than `depth` documents exist), best first."""
    k = min(depth, index.ntotal)
    scores, ids = index.search(queries, k)
    return scores, ids
