"""Stage 3: first-stage dense retrieval over all variants of one dataset, frozen under a fingerprint.

The frozen set lives in the cache folder under a lookup key built from everything that decides
the candidates (dataset, encoder identity, index, depth, the variant texts). A later run with the
same key reads it back and never loads the encoder. The candidate fingerprint is the hash of the
manifest including the candidate ids, so anyone can check they rank the same lists.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import faiss
import numpy as np
import polars as pl
from prefect import task

from schemas import CandidateSet, DatasetManifest, EncoderSpec, VariantSet
from tasks import transient
from tasks.corrupt import read_variants
from tasks.load import open_dataset
from terazi import fingerprint
from terazi.costs import TimedEncoder
from terazi.metrics import evaluate
from terazi.models import load_bi_encoder, prepare_environment, resolve
from terazi.progress import progress
from terazi.retrieval import build_index, cached_corpus_embeddings, encode, search
from terazi.trec import write_run

log = logging.getLogger("terazi.retrieve")


def candidates_file_name(condition: str, sample: int, samples: int) -> str:
    return f"{condition}.trec" if samples == 1 else f"{condition}-{sample}.trec"


def find_frozen(cache_dir: str, fingerprint_: str, dataset: DatasetManifest) -> CandidateSet:
    """A frozen candidate set named by its fingerprint; it must belong to this very dataset."""
    for path in (Path(cache_dir).resolve() / "candidates").glob("*/manifest.json"):
        body = json.loads(path.read_text())
        if body.get("fingerprint") == fingerprint_:
            if body["dataset_fingerprint"] != dataset.fingerprint:
                raise ValueError(f"candidates {fingerprint_} were frozen for another version of dataset "
                                 f"{body['dataset']} ({body['dataset_fingerprint']}, now {dataset.fingerprint})")
            return CandidateSet.model_validate({**body, "reused": True})
    raise ValueError(f"no frozen candidates with fingerprint {fingerprint_} under {cache_dir}/candidates")


def retrieve(dataset: DatasetManifest, variant_sets: list[VariantSet], encoder: EncoderSpec, depth: int,
             cache_dir: str, offline: bool = False, frozen: str | None = None,
             external: str | None = None) -> CandidateSet:
    """Frozen candidates for every variant: reused when they exist (or when `frozen` names them)."""
    # --- external first stage (terazi/external.py): candidates imported from TREC runs made elsewhere ---
    if external:
        from terazi.external import import_candidates

        return import_candidates(dataset, open_dataset(dataset), external, read_variants(variant_sets), depth, cache_dir)
    # --- end of the external first stage ---
    if frozen:
        cs = find_frozen(cache_dir, frozen, dataset)
        have = pl.read_parquet(cs.path, columns=["condition", "sample", "query_id"]).unique()
        need = read_variants(variant_sets).select("condition", "sample", "query_id")
        missing = need.join(have, on=["condition", "sample", "query_id"], how="anti")
        if missing.height:
            c, s_, q = missing.row(0)
            raise ValueError(f"frozen candidates {frozen} lack {missing.height} query variants, e.g. {q!r} under "
                             f"{c} sample {s_}: use the conditions, samples and seed they were frozen with")
        log.info("%s: using frozen candidates %s as given (no retrieval)", dataset.name, cs.fingerprint)
        return cs
    start = time.perf_counter()
    ds = open_dataset(dataset)
    variants = read_variants(variant_sets).sort("condition", "sample", "query_id")
    ref = resolve(encoder.model, encoder.revision, offline)
    prepare_environment([ref], offline)
    enc_params = encoder.model_dump(exclude={"model", "revision", "batch_size", "device", "trust_remote_code"})
    lookup_key = fingerprint.of_json({
        "dataset": dataset.fingerprint, "encoder": ref.identity, "params": enc_params, "depth": depth,
        "variants": fingerprint.of_rows(variants.select("condition", "sample", "query_id", "text")),
    })
    folder = Path(cache_dir).resolve() / "candidates" / lookup_key
    manifest_path = folder / "manifest.json"
    if manifest_path.is_file():
        cs = CandidateSet.model_validate({**json.loads(manifest_path.read_text()), "reused": True})
        log.info("%s: reusing frozen candidates %s (no encoding)", dataset.name, cs.fingerprint)
        return cs

    model = TimedEncoder(load_bi_encoder(ref, encoder.device, encoder.max_length, encoder.trust_remote_code), ref,
                         encoder.batch_size)  # cost hook (terazi/costs.py): warm encoding speed, size
    doc_ids = list(ds.docs)
    emb_path = Path(cache_dir).resolve() / "embeddings" / f"{fingerprint.of_json([ref.identity, enc_params, dataset.corpus_fingerprint])}.npy"
    with progress(f"{dataset.name}: encoding the corpus", "documents") as on_progress:
        doc_emb, emb_cached = cached_corpus_embeddings(model, [ds.docs[d].full_text for d in doc_ids], emb_path,
                                                       encoder.batch_size, encoder.document_prefix, on_progress)
    texts = variants["text"].unique(maintain_order=True).to_list()
    log.info("%s: %s; encoding %d distinct query texts for %d variants", dataset.name,
             "corpus embeddings reused" if emb_cached else f"{len(doc_ids)} documents encoded", len(texts), variants.height)
    with progress(f"{dataset.name}: encoding queries", "queries") as on_progress:
        q_emb = encode(model, texts, encoder.batch_size, encoder.query_prefix, on_progress)
    index, index_params = build_index(doc_emb, encoder.index, encoder.hnsw_m, encoder.hnsw_ef_search,
                                      encoder.ivf_nlist, encoder.ivf_nprobe)
    scores, rows = search(index, q_emb, depth)
    row_of_text = {t: i for i, t in enumerate(texts)}
    vi = np.array([row_of_text[t] for t in variants["text"].to_list()], dtype=np.int64)
    k = rows.shape[1]
    r, s = rows[vi], scores[vi]
    keep = r >= 0
    doc_arr = np.array(doc_ids, dtype=object)
    cand = pl.DataFrame({
        "condition": np.repeat(variants["condition"].to_numpy(), k)[keep.ravel()],
        "sample": np.repeat(variants["sample"].to_numpy(), k)[keep.ravel()],
        "query_id": np.repeat(variants["query_id"].to_numpy(), k)[keep.ravel()],
        "rank": np.tile(np.arange(1, k + 1, dtype=np.int64), len(vi))[keep.ravel()],
        "doc_id": doc_arr[r[keep]].astype(str),
        "score": s[keep].astype(np.float64),
    })

    folder.mkdir(parents=True, exist_ok=True)
    cand.write_parquet(folder / "candidates.parquet")
    samples = {vs.condition: vs.samples for vs in variant_sets}
    for (cond, smp), part in cand.group_by(["condition", "sample"], maintain_order=True):
        write_run(part, folder / "runs" / candidates_file_name(cond, smp, samples[cond]), "terazi-first-stage")
    recall = {}
    for cond, part in cand.group_by("condition", maintain_order=True):
        ev = evaluate(ds.qrels, part.filter(pl.col("sample") == 0), [f"R@{depth}"], order="rank")
        recall[cond[0]] = round(ev.aggregate[f"R@{depth}"], 6)
    body = {
        "lookup_key": lookup_key, "dataset": dataset.name, "dataset_fingerprint": dataset.fingerprint,
        "encoder": encoder.model, "encoder_identity": ref.identity, "index": index_params, "depth": depth,
        "faiss_version": faiss.__version__, "path": str(folder / "candidates.parquet"), "trec_dir": str(folder / "runs"),
        "recall": recall, "queries_encoded": len(texts), "docs_encoded": 0 if emb_cached else len(doc_ids),
        "seconds": round(time.perf_counter() - start, 3), "cost": model.cost().model_dump(),  # cost hook
    }
    ids_hash = fingerprint.of_rows(cand.select("condition", "sample", "query_id", "doc_id"))
    fp = fingerprint.of_json({k_: v for k_, v in body.items()
                              if k_ not in ("path", "trec_dir", "seconds", "queries_encoded", "docs_encoded", "cost")} | {"ids": ids_hash})
    cs = CandidateSet(fingerprint=fp, reused=False, **body)
    tmp = manifest_path.with_suffix(".tmp")
    tmp.write_text(cs.model_dump_json(indent=2, exclude={"reused"}))
    tmp.replace(manifest_path)
    log.info("%s: froze candidates %s (recall@%d clean %.3f) in %.1fs", dataset.name, fp, depth, recall.get("clean", 0.0),
             cs.seconds)
    return cs


retrieve_task = task(retrieve, name="first-stage", retries=2, retry_delay_seconds=[2, 10],
                     task_run_name="first-stage {dataset.name}", retry_condition_fn=transient)
