"""The first stage's settings: the dense encoder and its FAISS index (`EncoderSpec`, the config's `encoder:`), and a
named first stage, dense or BM25 (`FirstStageSpec`, an entry of `first_stages:`). A retrieval plan carries the
encoder it searches with, so the manifests read these too.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from terazi.schemas.fields import BUNDLED_ENCODER, SlugName, StrictModel


class EncoderSpec(StrictModel):
    """The first-stage dense encoder and its FAISS index."""

    model: str = Field(
        BUNDLED_ENCODER,
        description="Hugging Face id, absolute local folder, or "
        f"'{BUNDLED_ENCODER}' (shipped with terazi, works offline)",
    )
    revision: str | None = Field(None, description="hub revision (commit, tag or branch) to pin")
    batch_size: int = Field(32, ge=1, description="texts per encoding batch")
    max_length: int | None = Field(None, ge=8, description="tokens per text; default: the model's own")
    query_prefix: str = Field("", description="prepended to every query, e.g. 'query: ' for E5 models")
    document_prefix: str = Field("", description="prepended to every document, e.g. 'passage: '")
    device: str = Field("auto", description="auto (CUDA when present), cpu, cuda, cuda:1, mps")
    index: Literal["flat", "hnsw", "ivf", "auto"] = Field(
        "flat",
        description="flat = exact (searched shard by shard); auto = exact up to 2M documents, HNSW above; "
        "an approximate index's recall against exact search is measured and recorded",
    )
    hnsw_m: int = Field(32, ge=4, description="HNSW: neighbours per node")
    hnsw_ef_search: int = Field(256, ge=1, description="HNSW: search breadth")
    ivf_nlist: int | None = Field(None, ge=1, description="IVF: number of lists; default 4·√(documents)")
    ivf_nprobe: int = Field(16, ge=1, description="IVF: lists searched per query")
    trust_remote_code: bool = Field(
        False,
        description="run the model's own code from its repository; a served "
        "deployment refuses it unless its server allows it",
    )


class FirstStageSpec(StrictModel):
    """A named first stage: dense (the `encoder:` settings, as without `first_stages`), or BM25 over the whole
    corpus (bm25s over the Turkish analyser of the BM25 reranker); runs made elsewhere stay a dataset's
    `first_stage_runs`."""

    name: SlugName = Field(description="the first stage's name")
    kind: Literal["dense", "bm25"] = Field(
        "dense", description="dense: sentence-transformers + FAISS (`encoder:`); bm25: BM25 over the whole corpus"
    )
    language: str = Field("turkish", pattern=r"^[a-z]+$", description="bm25: Snowball stemmer and casing rules")
    k1: float = Field(1.5, gt=0, description="bm25: term-frequency saturation")
    b: float = Field(0.75, ge=0, le=1, description="bm25: length normalisation")
    encoder: EncoderSpec | None = Field(None, description="dense: its own encoder (default: the config's `encoder:`)")
