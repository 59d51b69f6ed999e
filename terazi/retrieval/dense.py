"""First-stage dense retrieval: embeddings in shards on disk, exact search shard by shard, or an index.

A shard is a contiguous block of rows (documents or distinct query texts), encoded by one task and saved
as one `.npy` file (written, then renamed: a killed worker leaves no half shard). Search memory-maps the
shards one at a time and keeps a running top-k, so the searching process holds one shard, not the corpus.
Exact search is FAISS's own (`faiss.knn`, the code `IndexFlatIP.search` runs) and picks the candidates; their scores
are then computed again pair by pair (`rescore`), so that a score depends on the two vectors only, never on where a
vector sits in a shard, a block or a batch, and the lists are ranked by the field's tie rule (score descending, then
document id descending, as trec_eval; `terazi.base.ties`), not FAISS's order: each shard is searched `MARGIN` documents
past the cut, and the queries whose last document searched could still tie the cut's score (FAISS's rounding
allowed for) are searched again deeper until none could, so which of several tied documents make the top `depth`
is the rule's choice too. Copies of a passage (the same text under other ids) are searched as one text and join
it in the lists with its score (`with_copies`): they tie exactly whatever their vectors' last bits, in exact search
and in an approximate index alike. FAISS is imported where it searches: a run whose candidates are frozen never
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
RESCORE_PAIRS = 65536  # pairs rescored at a time (two float32 blocks of this many vectors)


def encode(
    model,
    texts: list[str],
    batch_size: int,
    prefix: str = "",
    on_progress: Callable[[int, int], None] | None = None,
    max_length: int | None = None,
) -> np.ndarray:
    """Unit-normalised float32 embeddings, so inner product is cosine similarity; each distinct text encoded once
    (its copies get its very vector), in blocks so that long encodings report progress (and can be stopped)
    between blocks. Texts are cut to the character budget of `max_length` tokens first
    (`terazi.models.text.clip`)."""
    if not texts:
        return np.zeros((0, model.get_embedding_dimension()), dtype=np.float32)
    distinct = list(dict.fromkeys(texts))
    parts = []
    for i in range(0, len(distinct), ENCODE_BLOCK):
        block = [clip(prefix + t, max_length) for t in distinct[i : i + ENCODE_BLOCK]]
        parts.append(
            model.encode(
                block, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
            )
        )
        if on_progress:
            on_progress(min(i + ENCODE_BLOCK, len(distinct)), len(distinct))
    emb = np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)
    if len(distinct) == len(texts):
        return emb
    at = {t: i for i, t in enumerate(distinct)}
    return emb[np.fromiter((at[t] for t in texts), dtype=np.int64, count=len(texts))]


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


def rescore(queries: np.ndarray, rows: np.ndarray, corpus: Iterable[tuple[int, np.ndarray]]) -> np.ndarray:
    """`queries[q]` · corpus row `rows[q, j]` for every (q, j) (−inf where the row is −1), each a float32 inner
    product computed from the two vectors alone, row-wise and in one order whatever the batch, the block or the
    position (numpy's einsum; FAISS's blocked product is not: two copies of a vector could score a last bit apart),
    so identical vectors score bit-identically and the tie rule, not the arithmetic, orders them."""
    out = np.full(rows.shape, -np.inf, dtype=np.float32)
    for a, emb in corpus:
        q, j = np.nonzero((rows >= a) & (rows < a + emb.shape[0]))
        for c in range(0, len(q), RESCORE_PAIRS):
            qc, jc = q[c : c + RESCORE_PAIRS], j[c : c + RESCORE_PAIRS]
            out[qc, jc] = np.einsum("ij,ij->i", queries[qc], np.asarray(emb[rows[qc, jc] - a]))
    return out


def score_tolerance(queries: np.ndarray, emb: np.ndarray) -> np.ndarray:
    """Per query, twice the bound on a float32 inner product's rounding error (d·2⁻²⁴·‖q‖·‖x‖, Higham's γ_d for
    any order of summation), the largest ‖x‖ of `emb` taken: FAISS's score and the rescored one of one pair are
    each within half of it from the exact product."""
    d = queries.shape[1]
    most = float(np.sqrt(np.max(np.einsum("ij,ij->i", emb, emb), initial=0.0)))
    return (d + 2) * 2.0**-23 * np.linalg.norm(queries, axis=1) * most


def _shard_top(
    faiss, queries: np.ndarray, emb: np.ndarray, k: int, id_order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The `k` best rows of one shard per query by the tie rule (`id_order`: the shard's rows'), their scores
    rescored (`rescore`), every tie across the cut seen: FAISS's list goes `MARGIN` rows past the cut, and the
    queries whose last row searched could still score the k-th's rescored score (within `score_tolerance`) are
    searched again, together, twice as deep, until none could (or the shard ends)."""
    n, tol = emb.shape[0], score_tolerance(queries, emb)
    top_s = np.empty((len(queries), k), dtype=np.float32)
    top_i = np.empty((len(queries), k), dtype=np.int64)
    todo, want = np.arange(len(queries)), min(n, k + MARGIN)
    while len(todo):
        s, i = faiss.knn(queries[todo], emb, want, metric=faiss.METRIC_INNER_PRODUCT)
        top_s[todo], top_i[todo] = by_rule(rescore(queries[todo], i, [(0, emb)]), i, id_order, k)
        if want == n:
            break
        todo = todo[s[:, -1] + tol[todo] >= top_s[todo, -1]]
        want = min(n, 2 * want)
    return top_s, top_i


def exact_search(
    corpus: Iterable[tuple[int, np.ndarray]],
    queries: np.ndarray,
    depth: int,
    id_order: np.ndarray,
    first: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Scores and corpus rows of the `depth` best documents per query, best first by the tie rule (`id_order`: each
    corpus row's place in document id descending order, `terazi.base.ties.id_order`), shard by shard. With `first`
    (each row's first row of the same text, `CorpusTable.first_rows`) each distinct text is searched once and its
    copies join it (`with_copies`)."""
    import faiss

    best_s = best_i = None
    for offset, emb in corpus:
        rows = np.arange(offset, offset + emb.shape[0])
        if first is not None and (keep := first[rows] == rows).sum() < len(rows):
            rows, emb = rows[keep], np.ascontiguousarray(emb[keep])
        if not len(rows):
            continue
        s, i = _shard_top(faiss, queries, emb, min(depth, len(rows)), id_order[rows])
        i = rows[i]
        if best_s is not None:
            s, i = by_rule(np.concatenate([best_s, s], axis=1), np.concatenate([best_i, i], axis=1), id_order, depth)
        best_s, best_i = s, i
    return with_copies(best_s, best_i, first, id_order, depth) if best_s is not None else (best_s, best_i)


def with_copies(
    scores: np.ndarray, rows: np.ndarray, first: np.ndarray | None, id_order: np.ndarray, depth: int
) -> tuple[np.ndarray, np.ndarray]:
    """Lists of distinct texts' rows made lists of documents: each row followed by every copy of its text (the rows
    whose `first` it is), all with its score, then the `depth` best by the tie rule; a copy therefore ties its
    original always, and which of them make a cut is the rule's choice."""
    n = 0 if first is None else len(first)
    size = np.bincount(first, minlength=n) if n else None
    if size is None or size.max(initial=1) == 1:
        return scores[:, :depth], rows[:, :depth]
    members = np.lexsort((id_order, first))  # every row, grouped by text, each group in tie-rule order
    start = np.cumsum(size) - size
    valid = rows >= 0
    reps = np.where(valid, np.minimum(size[np.where(valid, rows, 0)], depth), 1).ravel()
    entry = np.repeat(np.arange(reps.size), reps)
    within = np.arange(entry.size) - np.repeat(np.cumsum(reps) - reps, reps)
    src = rows.ravel()[entry]
    out_rows = np.where(src >= 0, members[start[np.maximum(src, 0)] + within], -1)
    per_query = reps.reshape(rows.shape).sum(axis=1)
    col = np.arange(entry.size) - np.repeat(np.cumsum(per_query) - per_query, per_query)
    q = entry // rows.shape[1]
    grown_rows = np.full((len(rows), per_query.max(initial=0)), -1, dtype=np.int64)
    grown_scores = np.full(grown_rows.shape, -np.inf, dtype=scores.dtype)
    grown_rows[q, col], grown_scores[q, col] = out_rows, scores.ravel()[entry]
    return by_rule(grown_scores, grown_rows, id_order, min(depth, grown_rows.shape[1]))


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
    first: np.ndarray | None = None,
) -> tuple[faiss.Index, dict[str, str | int]]:
    """An approximate index filled shard by shard, its ids corpus rows (with `first`, the first row of each distinct
    text only). IVF trains on an evenly spaced sample of the corpus, with 4·√n lists unless told (FAISS wants ≥ 39
    training points per list)."""
    import faiss

    if kind == "hnsw":
        inner = faiss.IndexHNSWFlat(dim, hnsw_m, faiss.METRIC_INNER_PRODUCT)
        inner.hnsw.efSearch = ef_search
        params = {"type": "IndexHNSWFlat", "M": hnsw_m, "efSearch": ef_search}
    elif kind == "ivf":
        nlist = max(1, min(nlist or int(4 * math.sqrt(n)), n // 39))
        inner = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
        want = min(n, 256 * nlist)
        rows = np.unique(np.linspace(0, n - 1, want).astype(np.int64))
        sample = [np.asarray(emb[rows[(rows >= a) & (rows < a + len(emb))] - a]) for a, emb in corpus()]
        inner.train(np.ascontiguousarray(np.concatenate(sample)))
        inner.nprobe = min(nprobe, nlist)
        params = {"type": "IndexIVFFlat", "nlist": nlist, "nprobe": inner.nprobe}
    else:
        raise ValueError(f"no approximate index called {kind!r}")
    index = faiss.IndexIDMap(inner)
    for a, emb in corpus():
        rows = np.arange(a, a + emb.shape[0])
        keep = np.ones(len(rows), dtype=bool) if first is None else first[rows] == rows
        index.add_with_ids(np.ascontiguousarray(emb[keep]), rows[keep])
    return index, params


def search_index(
    index: faiss.Index,
    queries: np.ndarray,
    depth: int,
    id_order: np.ndarray,
    corpus: Iterable[tuple[int, np.ndarray]],
    first: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Scores and row ids (−1 where fewer than `depth` documents exist), best first by the tie rule among the
    `depth` + `MARGIN` the index returns, their scores rescored from the `corpus` shards (`rescore`) and each text's
    copies joined to it (`with_copies`; an approximate search: a tie across that cut is not looked for)."""
    _, rows = index.search(queries, min(depth + MARGIN, index.ntotal))
    scores, rows = by_rule(rescore(queries, rows, corpus), rows, id_order, min(depth, index.ntotal))
    return with_copies(scores, rows, first, id_order, depth)


def recall_against_exact(approx_rows: np.ndarray, exact_rows: np.ndarray) -> float:
    """Mean share of each query's exact top-k that the approximate top-k found."""
    hits = [len(set(a[a >= 0].tolist()) & set(e.tolist())) / max(1, len(e)) for a, e in zip(approx_rows, exact_rows)]
    return float(np.mean(hits)) if hits else 1.0


def sample_rows(n: int, k: int = RECALL_SAMPLE) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, min(n, k)).astype(np.int64)) if n else np.zeros(0, np.int64)
