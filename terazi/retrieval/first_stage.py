"""The dense first stage's work: encode the shards a plan cut (terazi/retrieval/plan.py), search every variant of one
dataset against them, and freeze the candidates under a fingerprint.

The frozen set lives in the cache folder under a lookup key built from everything that decides the candidates
(dataset, encoder identity, index, depth, the variant texts, the tie rule the lists are ranked by, the documents the
dataset leaves out, and the code of this module's import closure, which searches, orders and writes them). A later
run with the same key reads it back and never loads the encoder. The candidate fingerprint is the hash of the
manifest including the candidate ids, so anyone can check they rank the same lists.

The frozen set's manifest names its files relative to its own folder, with their SHA-256: a copied or moved cache
works from its new place, and a missing or damaged file is rebuilt (TREC files, from the parquet) or the set is
computed again, never used as it is (terazi/retrieval/frozen.py).
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import polars as pl

from terazi.base import fingerprint
from terazi.base.paths import write_atomic
from terazi.base.progress import progress
from terazi.base.ties import id_order
from terazi.data.blocks import BLOCK_ROWS
from terazi.data.corpus import CorpusTable
from terazi.data.loading import open_dataset, read_variants
from terazi.models.costs import CostStore, TimedEncoder, combine
from terazi.models.encoders import shared_bi_encoder
from terazi.models.refs import ModelRef, prepare_environment, resolve
from terazi.models.vectors import VectorStore, save_array
from terazi.retrieval.dense import (
    build_index,
    choose_index,
    encode,
    exact_search,
    load_shard,
    recall_against_exact,
    sample_rows,
    search_index,
    shard_path,
    shards,
    stack,
)
from terazi.retrieval.frozen import (
    MANIFEST,
    RULE,
    allowed,
    candidate_fingerprint,
    most_dropped,
    set_files,
    write_set,
)
from terazi.retrieval.frozen import lookup_key as frozen_key
from terazi.schemas import (
    CandidateSet,
    DatasetManifest,
    EncoderSpec,
    ModelCost,
    RetrievalPlan,
    VariantSet,
)
from terazi.schemas.tables import CLEAN, VARIANT

log = logging.getLogger("terazi.retrieve")


INDEX_PARAMS = {
    "flat": (),
    "hnsw": ("hnsw_m", "hnsw_ef_search"),
    "auto": ("hnsw_m", "hnsw_ef_search"),
    "ivf": ("ivf_nlist", "ivf_nprobe"),
}


def lookup_key(
    dataset: DatasetManifest, variants: pl.DataFrame, ref: ModelRef, encoder: EncoderSpec, depth: int
) -> str:
    """Hash of everything that decides the candidates (an index's parameters only when that index is used) and of the
    code that makes the set's files (this module's import closure: it searches, orders and writes them); the plan
    finds a set frozen under it, or has it frozen there."""
    enc_params = encoder.model_dump(
        include={"max_length", "query_prefix", "document_prefix", "index", *INDEX_PARAMS[encoder.index]}
    )
    return frozen_key("dense", dataset, variants, depth, {"encoder": ref.identity, "params": enc_params}, __name__)


def encode_shard(plan: RetrievalPlan, part: str, shard: int) -> ModelCost | None:
    """Encode one shard ('corpus' or 'queries') unless its file is there already; returns what the encoding cost
    (texts encoded and the seconds inside the encoder's calls, model loaded), None when nothing was encoded."""
    bounds = plan.corpus_shards if part == "corpus" else plan.query_shards
    a, z = bounds[shard]
    folder = Path(plan.embeddings if part == "corpus" else plan.queries)
    path = shard_path(folder, a, z)
    if load_shard(path, z - a) is not None:
        return None
    enc = plan.encoder
    if part == "corpus":
        texts, prefix = CorpusTable(Path(plan.corpus)).rows(a, z), enc.document_prefix
    else:
        texts, prefix = pl.read_parquet(folder / "texts.parquet").slice(a, z - a)["text"].to_list(), enc.query_prefix
        if plan.query_vectors and (kept := _kept_vectors(plan.query_vectors, texts)) is not None:
            save_array(path, kept)  # every text was encoded by this very encoding before (another set, a rerun)
            return None
    ref = resolve(enc.model, enc.revision, plan.offline)
    prepare_environment([ref], plan.offline)
    model, lock = shared_bi_encoder(ref, enc.device, enc.max_length, enc.trust_remote_code)
    with lock:
        if load_shard(path, z - a) is not None:  # encoded meanwhile by another task
            return None
        timed = TimedEncoder(
            model, ref, enc.batch_size
        )  # warm speed, the load outside the timer (terazi/models/costs.py)
        unit = "documents" if part == "corpus" else "queries"
        with progress(f"{plan.dataset}: encoding {part} shard {shard + 1}/{len(bounds)}", unit) as on_progress:
            emb = encode(timed, texts, enc.batch_size, prefix, on_progress, enc.max_length or model.max_seq_length)
    save_array(path, emb)
    if part == "queries" and plan.query_vectors:  # kept for a bi-encoder reranker of this very encoding
        VectorStore(plan.query_vectors).put(fingerprint.text_keys(texts), emb)
    return timed.cost()


def _remembered_cost(cache_dir: Path, identity: str, cost: ModelCost | None) -> ModelCost | None:
    """This freeze's encoding figures, kept for the encoder; when every text's vector was already kept (nothing
    encoded), the figures of the encodings that made them, marked cached."""
    store, key = CostStore(cache_dir), f"first stage:{identity}"
    if cost is not None and cost.items:
        store.add(key, cost)
        return cost
    kept = store.get(key)
    return kept.model_copy(update={"cached": True}) if kept else cost


def _kept_vectors(store: str, texts: list[str]) -> np.ndarray | None:
    """The vectors of `texts` in their order when the store has every one of them, else None."""
    found, vectors = VectorStore(store).get(fingerprint.text_keys(texts))
    return np.ascontiguousarray(vectors, dtype=np.float32) if len(texts) and found.all() else None


def search(
    plan: RetrievalPlan,
    dataset: DatasetManifest,
    variant_sets: list[VariantSet],
    corpus_costs: list[ModelCost | None] = (),
    query_costs: list[ModelCost | None] = (),
) -> CandidateSet:
    """Search every variant's text against the corpus shards, each list ranked by the tie rule and less the documents
    the dataset leaves out (searched that much deeper); freeze and return the candidates."""
    if plan.frozen:
        return plan.frozen
    variants = read_variants(variant_sets).sort(VARIANT)
    dropped = open_dataset(dataset).dropped(dataset.ignore_identical_ids)
    enc, depth = plan.encoder, plan.depth + most_dropped(dropped)
    table = CorpusTable(Path(plan.corpus))
    doc_ids, first = table.ids(), table.first_rows()
    order = id_order(doc_ids)
    n_docs = plan.corpus_shards[-1][1] if plan.corpus_shards else 0
    texts = pl.read_parquet(Path(plan.queries) / "texts.parquet")["text"]
    q_emb = stack(Path(plan.queries), plan.query_shards)
    corpus = lambda: shards(Path(plan.embeddings), plan.corpus_shards)  # noqa: E731
    kind = choose_index(enc.index, n_docs)
    index_recall, sample = None, 0
    if kind == "flat":
        scores, rows = exact_search(corpus(), q_emb, depth, order, first)
        index_params: dict = {"type": "IndexFlatIP"}
    else:
        dim = q_emb.shape[1]
        index, index_params = build_index(
            corpus, n_docs, dim, kind, enc.hnsw_m, enc.hnsw_ef_search, enc.ivf_nlist, enc.ivf_nprobe, first
        )
        scores, rows = search_index(index, q_emb, depth, order, corpus(), first)
        pick = sample_rows(len(q_emb))
        _, exact_rows = exact_search(corpus(), q_emb[pick], depth, order, first)
        index_recall, sample = round(recall_against_exact(rows[pick], exact_rows), 6), len(pick)
        log.info(
            "%s: %s recall@%d against exact search %.4f (%d query texts)",
            plan.dataset,
            index_params["type"],
            depth,
            index_recall,
            sample,
        )
        del index
    row_of_text = pl.DataFrame({"text": texts, "i": np.arange(texts.len(), dtype=np.int64)})
    vi = variants.select("text").join(row_of_text, on="text", how="left", maintain_order="left")["i"].to_numpy()
    docs_encoded = sum(c.items for c in corpus_costs if c)
    queries_encoded = sum(c.items for c in query_costs if c)
    blocks = (allowed(b, dropped, plan.depth) for b in candidate_blocks(variants, vi, rows, scores, doc_ids))
    return freeze(
        plan,
        dataset,
        blocks,
        index_params,
        index_recall,
        sample,
        queries_encoded,
        docs_encoded,
        combine([c for c in [*corpus_costs, *query_costs] if c]),
    )


def candidate_blocks(
    variants: pl.DataFrame, vi: np.ndarray, rows: np.ndarray, scores: np.ndarray, doc_ids: pl.Series
) -> Iterator[pl.DataFrame]:
    """The candidate table, a block of variants at a time in the variants' (sorted) order: variant j's candidates
    are the search results of its text, row `vi[j]` of `rows` (corpus rows, −1 where none) and `scores`."""
    k = rows.shape[1]
    step = max(1, BLOCK_ROWS // max(k, 1))
    for a in range(0, variants.height, step):
        part, at = variants.slice(a, step), vi[a : a + step]
        r, s = rows[at], scores[at]
        keep = (r >= 0).ravel()
        yield pl.DataFrame(
            {
                "condition": np.repeat(part["condition"].to_numpy(), k)[keep],
                "sample": np.repeat(part["sample"].to_numpy(), k)[keep],
                "query_id": np.repeat(part["query_id"].to_numpy(), k)[keep],
                "rank": np.tile(np.arange(1, k + 1, dtype=np.int64), len(at))[keep],
                "doc_id": doc_ids.gather(r.ravel()[keep]).cast(pl.Utf8),
                "score": s.ravel()[keep].astype(np.float64),
            }
        )


def freeze(
    plan: RetrievalPlan,
    dataset: DatasetManifest,
    blocks: Iterable[pl.DataFrame],
    index_params: dict,
    index_recall: float | None,
    sample: int,
    queries_encoded: int,
    docs_encoded: int,
    cost: ModelCost | None = None,
) -> CandidateSet:
    """Write the candidate set (parquet and TREC runs, a block of variants at a time; the manifest) into a new folder
    and move it into place at once; when a concurrent run froze the same set first, theirs is kept (it is the
    same)."""
    import faiss

    folder, depth = Path(plan.folder), plan.depth
    cost = _remembered_cost(folder.parent.parent, plan.encoder_identity, cost)

    def made(tmp: Path) -> CandidateSet:
        ids, recall = write_set(tmp, blocks, open_dataset(dataset).qrels, depth)
        body = {
            "lookup_key": plan.lookup_key,
            "dataset": dataset.name,
            "dataset_fingerprint": dataset.fingerprint,
            "encoder": plan.encoder.model,
            "encoder_identity": plan.encoder_identity,
            "index": index_params,
            "depth": depth,
            "faiss_version": faiss.__version__,
            "path": "candidates.parquet",
            "trec_dir": "runs",
            "recall": recall,
            "queries_encoded": queries_encoded,
            "docs_encoded": docs_encoded,
            "seconds": round(time.time() - plan.started, 3),
            "cost": cost.model_dump() if cost else None,
            "ties": RULE,
            "ignore_identical_ids": dataset.ignore_identical_ids,
        }
        stored = CandidateSet(
            fingerprint=candidate_fingerprint(body, ids),
            reused=False,
            files=set_files(tmp),
            index_recall=index_recall,
            index_recall_queries=sample,
            shards=len(plan.corpus_shards),
            **body,
        )
        (tmp / MANIFEST).write_text(stored.model_dump_json(indent=2, exclude={"reused"}))
        return stored

    stored = write_atomic(folder, made, folder=True, keep_theirs=True)  # a concurrent run's is the same
    shutil.rmtree(plan.queries, ignore_errors=True)
    log.info(
        "%s: froze candidates %s (recall@%d clean %.3f) in %.1fs",
        dataset.name,
        stored.fingerprint,
        depth,
        stored.recall.get(CLEAN, 0.0),
        stored.seconds,
    )
    return stored.model_copy(update={"path": str(folder / "candidates.parquet"), "trec_dir": str(folder / "runs")})
