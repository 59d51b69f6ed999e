"""BM25 over the whole corpus as a first stage: bm25s over the same Turkish analyser as the BM25 reranker
(terazi.base.turkish.analyse: Turkish casing, Snowball stems, ASCII folding), every distinct query text searched once,
each variant keeping its `depth` best documents, ranked as trec_eval ranks (score, then document id, descending),
less the documents its dataset leaves out (`Dataset.dropped`). Frozen like every first stage: the candidates
parquet, TREC copies and a `CandidateSet` under a lookup key of everything that decides them (dataset, BM25
parameters, depth, the variant texts, the tie rule, ignore_identical_ids), reused when it is there."""

from __future__ import annotations

import logging
import time
from importlib.metadata import version

import numpy as np
import polars as pl

from terazi.base.ties import id_order
from terazi.base.turkish import analyse
from terazi.data.loading import dataset_corpus, open_dataset, read_variants
from terazi.models.bm25_index import shared
from terazi.retrieval.frozen import MANIFEST, RULE, allowed, load_frozen, lookup_key, most_dropped, store_candidates
from terazi.schemas import CandidateSet, DatasetManifest, FirstStageSpec, VariantSet
from terazi.schemas.tables import VARIANT
from terazi.store.layout import CacheLayout

log = logging.getLogger("terazi.retrieve")


def bm25_identity(language: str, k1: float, b: float, corpus_fingerprint: str) -> str:
    """Everything that decides a BM25 score: what the BM25 reranker's scores are keyed by, too."""
    return f"bm25:{language}:k1={k1}:b={b}:corpus={corpus_fingerprint}"


def top_documents(scores: np.ndarray, tie_order: np.ndarray, depth: int) -> np.ndarray:
    """Rows of the `depth` best scores, score descending, ties by `tie_order` ascending (document id descending)."""
    k = min(depth, len(scores))
    if not k:
        return np.empty(0, dtype=np.int64)
    kth = np.partition(scores, len(scores) - k)[len(scores) - k]
    rows = np.flatnonzero(scores >= kth)
    return rows[np.lexsort((tie_order[rows], -scores[rows]))][:k]


def bm25_candidates(
    dataset: DatasetManifest,
    variants: pl.DataFrame,
    depth: int,
    cache_dir: str,
    language: str = "turkish",
    k1: float = 1.5,
    b: float = 0.75,
) -> CandidateSet:
    """The frozen BM25 candidates of every variant (condition, sample, query_id, text) of one dataset."""
    start = time.perf_counter()
    variants = variants.sort(VARIANT)
    identity = bm25_identity(language, k1, b, dataset.corpus_fingerprint)
    key = lookup_key("bm25", dataset, variants, depth, {"first_stage": identity}, maker=__name__)
    target = CacheLayout(cache_dir).part("candidates", key)
    if (target / MANIFEST).is_file() and (cs := load_frozen(target)) is not None:
        log.info("%s: reusing frozen BM25 candidates %s", dataset.name, cs.fingerprint)
        return cs
    corpus = dataset_corpus(dataset, cache_dir)
    index = shared(corpus.path, corpus.batches(), language, k1, b)
    ids = corpus.ids().cast(pl.Utf8)
    tie_order = id_order(ids)  # document id descending first
    ds = open_dataset(dataset)
    dropped = ds.dropped(dataset.ignore_identical_ids)
    deeper = depth + most_dropped(dropped)
    texts = variants["text"].unique(maintain_order=True)
    parts = []
    for i, text in enumerate(texts.to_list()):
        scores = index.scores(index.token_ids(analyse(text, language))).astype(np.float64)
        rows = top_documents(scores, tie_order, deeper)
        parts.append(
            pl.DataFrame(
                {
                    "t": np.full(len(rows), i, dtype=np.int64),
                    "rank": np.arange(1, len(rows) + 1),
                    "row": rows,
                    "score": scores[rows],
                }
            )
        )
    found = pl.concat(parts).with_columns(pl.col("row").map_batches(lambda r: ids.gather(r)).alias("doc_id"))
    texts_i = pl.DataFrame({"text": texts, "t": np.arange(texts.len(), dtype=np.int64)})
    cand = (
        variants.select(*VARIANT, "text")
        .join(texts_i, on="text", how="left", maintain_order="left")
        .join(found, on="t", how="inner", maintain_order="left")
        .select(*VARIANT, pl.col("rank").cast(pl.Int64), "doc_id", pl.col("score").cast(pl.Float64))
        .sort(*VARIANT, "rank")
    )
    cand = allowed(cand, dropped, depth)
    body = {
        "lookup_key": key,
        "dataset": dataset.name,
        "dataset_fingerprint": dataset.fingerprint,
        "encoder": "bm25",
        "encoder_identity": identity,
        "index": {"type": "bm25s", "version": version("bm25s")},
        "depth": depth,
        "faiss_version": "none",
        "queries_encoded": 0,
        "docs_encoded": 0,
        "ties": RULE,
        "ignore_identical_ids": dataset.ignore_identical_ids,
    }
    cs = store_candidates(target, cand, body, ds.qrels, start)
    log.info(
        "%s: froze BM25 candidates %s (recall@%d clean %.3f)",
        dataset.name,
        cs.fingerprint,
        depth,
        cs.recall.get("clean", 0.0),
    )
    return cs


def bm25_first_stage(
    dataset: DatasetManifest, variant_sets: list[VariantSet], stage: FirstStageSpec, depth: int, cache_dir: str
) -> CandidateSet:
    """The first stage of `first_stages: [{kind: bm25}]` for one dataset, every condition's variants."""
    return bm25_candidates(dataset, read_variants(variant_sets), depth, cache_dir, stage.language, stage.k1, stage.b)
