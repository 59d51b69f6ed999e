"""The flow's own recipe, in this process, from what a test builds.

The recipes (flows/evaluate.py, flows/analyze.py) run each step through `Steps`; `INLINE` runs each task's own
function at once, in this process, and posts no artifact, so a test checks the recipe a run executes, not a copy of
it, without a Prefect server: `evaluation` the whole of it, `first_stage` the flow's `dense_first_stage` (plan, every
shard encoded, search), `rank_row` one model row of the flow's `rank_rows` (plan, chunks, ranking). `rerank_row`
writes a test's candidate and variant frames where those manifests point. `wrap_scorers` puts a failing, slow or
counting scorer where the stage builds its own.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

import polars as pl

from terazi.base import fingerprint
from terazi.data.corpus import CorpusTable
from terazi.data.loading import dataset_corpus, load_dataset
from terazi.flows import evaluate
from terazi.flows.evaluate import dense_first_stage, rank_rows
from terazi.flows.steps import Steps
from terazi.rerank import backends, stage
from terazi.schemas import (
    CandidateSet,
    DatasetManifest,
    DatasetSpec,
    EncoderSpec,
    EvalConfig,
    RerankerSpec,
    RerankResult,
    RunManifest,
    ScaleSpec,
    VariantSet,
)


class Done:
    """A task run inline: its result, as a future gives it."""

    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


def resolved(value):
    """A task's parameter with the futures in it replaced by their results, as Prefect passes them."""
    if isinstance(value, Done):
        return value.value
    if isinstance(value, (list, tuple)):
        return type(value)(resolved(v) for v in value)
    return value


def inline(task, *args, **kwargs):
    """Run a task's own function now, in this process."""
    return task.fn(*(resolved(a) for a in args), **{k: resolved(v) for k, v in kwargs.items()})


def inline_model(task, **kwargs) -> Done:
    return Done(inline(task, **kwargs))


INLINE = Steps(
    run=inline,
    spawn=lambda task, *a, **k: Done(inline(task, *a, **k)),
    model_runner=lambda config: nullcontext(inline_model),
    post=lambda artifacts, prefix: None,
    model=inline_model,
)


def evaluation(config: EvalConfig, kind: str = "python") -> RunManifest:
    """The whole evaluation recipe, as `terazi.evaluate(config)` runs it, every step in this process."""
    return evaluate.evaluation(config, kind, INLINE)


def corpus_of(root: Path, cache: Path, name: str = "tiny") -> CorpusTable:
    """The corpus table of a BEIR folder, as the stages read it (model scorers are given one and ignore it)."""
    return dataset_corpus(load_dataset(DatasetSpec(path=str(root), name=name), announce=False), str(cache))


def first_stage(
    dataset: DatasetManifest,
    variant_sets: list[VariantSet],
    encoder: EncoderSpec,
    depth: int,
    cache: str,
    offline: bool = True,
    frozen: str | None = None,
    scale: ScaleSpec = ScaleSpec(),
    external: str | None = None,
) -> CandidateSet:
    """Frozen candidates: reused, imported or named (`plan.frozen`), else every shard encoded, then searched."""
    return dense_first_stage(INLINE, dataset, variant_sets, encoder, depth, cache, offline, frozen, scale, external)


def rank_row(
    dataset: DatasetManifest,
    candidates: CandidateSet,
    variant_sets: list[VariantSet],
    spec: RerankerSpec,
    rerank_depth: int,
    cache: str,
    out: str,
    scale: ScaleSpec = ScaleSpec(),
    offline: bool = True,
    sweep_depth: int | None = None,
    ties: str = "trec",
) -> RerankResult:
    """One model row: its plan (with a depth sweep's deepest depth), each chunk, its ranking (beside the first
    stage's own row, which the recipe ranks first)."""
    config = EvalConfig.model_construct(
        rerankers=[spec],
        rerank_depth=rerank_depth,
        scale=scale,
        offline=offline,
        rerank_depths=[sweep_depth] if sweep_depth else None,
        ties=ties,
    )
    return next(
        r for r in rank_rows(INLINE, dataset, candidates, variant_sets, config, cache, out) if r.system == spec.name
    )


def candidate_set(dataset: DatasetManifest, candidates: pl.DataFrame, tmp: Path) -> CandidateSet:
    """A test's candidate frame (condition, sample, query_id, rank, doc_id, score) frozen as a candidate set."""
    tmp.mkdir(parents=True, exist_ok=True)
    cands = tmp / "candidates.parquet"
    candidates.write_parquet(cands)
    return CandidateSet(
        fingerprint=fingerprint.of_rows(candidates),
        lookup_key="test",
        dataset=dataset.name,
        dataset_fingerprint=dataset.fingerprint,
        encoder="test",
        encoder_identity="test",
        index={},
        depth=int(candidates["rank"].max()),
        faiss_version="",
        path=str(cands),
        trec_dir=str(tmp),
        recall={},
        reused=False,
        queries_encoded=0,
        docs_encoded=0,
        seconds=0.0,
    )


def rerank_row(
    dataset: DatasetManifest,
    candidates: pl.DataFrame,
    variants: pl.DataFrame,
    spec: RerankerSpec,
    tmp: Path,
    rerank_depth: int,
    chunk_pairs: int | None = None,
    cache: Path | None = None,
    score_store: str | None = None,
    fresh: bool = True,
    sweep_depth: int | None = None,
) -> tuple[RerankResult, pl.DataFrame]:
    """`rank_row` on a test's frames: candidates (condition, sample, query_id, rank, doc_id, score) and variants
    (condition, sample, query_id, text, …), written under `tmp` with their manifests (one variant set per
    condition). The cache is `tmp/cache` unless given; the ranking is written to `tmp/out` (with `sweep_depth`,
    a depth sweep's scores too).

    `fresh`: the row starts without the scorers this process already holds (`shared_scorer`), as a run in a new
    process does; a fresh scorer scores its first pair on its own (the meter's untimed warm-up)."""
    cs = candidate_set(dataset, candidates, tmp)
    sets = []
    for condition in variants["condition"].unique(maintain_order=True).to_list():
        part = variants.filter(pl.col("condition") == condition)
        path = tmp / f"variants-{condition}.parquet"
        part.write_parquet(path)
        sets.append(
            VariantSet(
                dataset=dataset.name,
                condition=condition,
                params={},
                seed=0,
                samples=part["sample"].n_unique(),
                path=str(path),
                n_queries=part["query_id"].n_unique(),
                n_changed=0,
            )
        )
    if fresh:
        with backends._scorers_lock:
            backends._scorers.clear()
    scale = ScaleSpec(score_store=score_store, **({"chunk_pairs": chunk_pairs} if chunk_pairs else {}))
    result = rank_row(
        dataset,
        cs,
        sets,
        spec,
        rerank_depth,
        str(cache or tmp / "cache"),
        str(tmp / "out"),
        scale,
        sweep_depth=sweep_depth,
    )
    return result, pl.read_parquet(result.path)


def wrap_scorers(wrap: Callable, setattr_: Callable = setattr) -> None:
    """Every scorer the reranking stage builds from now on (the plan's, and the one its chunks share) is
    `wrap(scorer)`. `setattr_`: a test's `monkeypatch.setattr` (undone after the test), or `setattr` in a worker
    process. The process's shared scorers start afresh, so none built before is used; a second call replaces the
    first one's wrapper."""
    make = getattr(backends.make_scorer, "__wrapped__", backends.make_scorer)

    def wrapped(*args, **kwargs):
        return wrap(make(*args, **kwargs))

    wrapped.__wrapped__ = make
    setattr_(backends, "make_scorer", wrapped)  # what shared_scorer builds with (the chunks, the cost step)
    setattr_(stage, "make_scorer", wrapped)  # what plan_rerank builds with
    setattr_(backends, "_scorers", OrderedDict())
