"""The first stage's plan, its first task: candidates a run can use as they are, or the dense retrieval's work cut
into shards.

A set named by its fingerprint (`candidates`) or TREC runs made elsewhere (`first_stage_runs`) are used as given; a
set frozen before under the same lookup key (`terazi.retrieval.first_stage.lookup_key`: everything that decides the
candidates) is read back without loading the encoder. Otherwise the corpus and the query texts are cut into shards,
one encoding task each (on the model runner, so W workers encode W shards at once), and the search freezes the
candidates under that key (terazi/retrieval/first_stage.py).
"""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path

import polars as pl

from terazi.base.errors import ConfigError
from terazi.data.loading import dataset_corpus, open_dataset, read_variants
from terazi.models.encoders import seq_length
from terazi.models.refs import pick_device, prepare_environment, resolve
from terazi.models.vectors import store_key, vector_identity
from terazi.retrieval.dense import shard_bounds
from terazi.retrieval.first_stage import lookup_key
from terazi.retrieval.frozen import MANIFEST, find_frozen, load_frozen
from terazi.schemas import CandidateSet, DatasetManifest, EncoderSpec, RetrievalPlan, ScaleSpec, VariantSet
from terazi.schemas.tables import VARIANT
from terazi.store.files import set_aside
from terazi.store.layout import CacheLayout

log = logging.getLogger("terazi.retrieve")


def plan_retrieval(
    dataset: DatasetManifest,
    variant_sets: list[VariantSet],
    encoder: EncoderSpec,
    depth: int,
    cache_dir: str,
    offline: bool = False,
    frozen: str | None = None,
    scale: ScaleSpec = ScaleSpec(),
    external: str | None = None,
) -> RetrievalPlan:
    """Reuse frozen candidates (`frozen` set), import them from TREC runs made elsewhere (`external`), or cut the
    work into corpus and query shards."""
    started = time.time()
    # candidates from another system's first stage (terazi/retrieval/external.py), frozen like terazi's own
    if external:
        from terazi.retrieval.external import import_candidates

        cs = import_candidates(dataset, open_dataset(dataset), external, read_variants(variant_sets), depth, cache_dir)
        return as_given(dataset, cs, encoder, depth, offline)
    if frozen:
        cs = find_frozen(cache_dir, frozen, dataset)
        have = pl.read_parquet(cs.path, columns=VARIANT).unique()
        need = read_variants(variant_sets).select(VARIANT)
        missing = need.join(have, on=VARIANT, how="anti")
        if missing.height:
            cond, smp, q = missing.row(0)
            raise ConfigError(
                f"frozen candidates {frozen} lack {missing.height} query variants, e.g. {q!r} under "
                f"{cond} sample {smp}: use the conditions, samples and seed they were frozen with"
            )
        log.info("%s: using frozen candidates %s as given (no retrieval)", dataset.name, cs.fingerprint)
        return as_given(dataset, cs, encoder, depth, offline)
    variants = read_variants(variant_sets).sort(VARIANT)
    ref = resolve(encoder.model, encoder.revision, offline, cache_dir)
    prepare_environment([ref], offline)
    key = lookup_key(dataset, variants, ref, encoder, depth)
    layout = CacheLayout(cache_dir)
    folder = layout.part("candidates", key)
    if (folder / MANIFEST).is_file():
        cs = load_frozen(folder)
        if cs is not None:
            log.info("%s: reusing frozen candidates %s (no encoding)", dataset.name, cs.fingerprint)
            return RetrievalPlan(
                dataset=dataset.name,
                lookup_key=key,
                folder=str(folder),
                frozen=cs,
                encoder=encoder,
                depth=depth,
                offline=offline,
            )
        set_aside(folder, "a damaged candidate set", layout.quarantine, "candidates")
    corpus = dataset_corpus(dataset, cache_dir)

    def vectors(prefix: str) -> str:
        return vector_identity(
            ref, "torch", seq_length(ref, encoder.max_length), prefix, "fp32", pick_device(encoder.device)
        )

    work = layout.part("work", f"queries-{key}-{uuid.uuid4().hex[:8]}")
    work.mkdir(parents=True, exist_ok=True)
    texts = variants["text"].unique(maintain_order=True)
    texts.to_frame("text").write_parquet(work / "texts.parquet")
    return RetrievalPlan(
        dataset=dataset.name,
        lookup_key=key,
        folder=str(folder),
        encoder=encoder,
        encoder_identity=ref.identity,
        depth=depth,
        offline=offline,
        corpus=str(corpus.path),
        corpus_shards=shard_bounds(dataset.n_docs, scale.shard_size),
        embeddings=str(
            layout.part("embeddings", store_key(vectors(encoder.document_prefix), dataset.corpus_fingerprint))
        ),
        query_vectors=str(layout.part("embeddings", store_key(vectors(encoder.query_prefix)))),
        queries=str(work),
        query_shards=shard_bounds(texts.len(), scale.query_shard_size),
        started=started,
    )


def as_given(
    dataset: DatasetManifest, cs: CandidateSet, encoder: EncoderSpec, depth: int, offline: bool
) -> RetrievalPlan:
    """A plan with nothing to do: the candidates `cs` as they are (imported from runs made elsewhere, or named)."""
    return RetrievalPlan(
        dataset=dataset.name,
        lookup_key=cs.lookup_key,
        folder=str(Path(cs.path).parent),
        frozen=cs,
        encoder=encoder,
        depth=depth,
        offline=offline,
    )
