"""The leakage check: benchmark datasets × training sources → `LeakageResult`.

Every benchmark query and passage is compared with every training text for a shared n-gram (default 8 words, the Kalbur
card's rule; lm-evaluation-harness uses 13) after normalisation (`terazi.leakage.normalize`). The side whose files
are smaller is hashed into memory first (`match.HeldIndex`: about 50 bytes per n-gram, and as much again while it is
sorted); the other is streamed past it in batches. Both directions come out of the one pass: the training records to
drop and the benchmark items that are contaminated. Benchmark queries are also looked up among the training sources'
query fields (`repeats`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from functools import partial

import numpy as np
import polars as pl

from terazi.base.errors import ConfigError
from terazi.data.beir import Dataset
from terazi.leakage.examples import Examples, TextsOf
from terazi.leakage.match import HeldIndex, Hits, Scan
from terazi.leakage.ngrams import text_ngrams
from terazi.leakage.normalize import joined, tokens
from terazi.leakage.repeats import RepeatFinder
from terazi.leakage.result import DatasetLeakage, LeakageResult, Repeat, SourceLeakage
from terazi.leakage.sides import BenchmarkSide, TrainingSide
from terazi.leakage.training_sources import Chunk, Reader
from terazi.schemas.leakage import LeakageOptions, TrainSource

log = logging.getLogger("terazi.leakage")


def check(
    datasets: Sequence[Dataset], sources: Sequence[TrainSource], options: LeakageOptions | None = None
) -> LeakageResult:
    """Check `datasets` (loaded with `terazi.data.beir.load_beir`) against `sources`; see the module's docstring."""
    options = options or LeakageOptions()
    started = time.perf_counter()
    if not datasets:
        raise ConfigError("leakage: no benchmark dataset to check")
    if not sources:
        raise ConfigError("leakage: no training source to check against")
    names = [d.name for d in datasets]
    if len({n.lower() for n in names}) < len(names):
        raise ConfigError(f"leakage: two benchmark datasets share a name ({', '.join(names)}): name them apart")
    readers = [Reader(s) for s in sources]  # every source is opened and checked before any work
    bench, train = BenchmarkSide(datasets), TrainingSide(readers)
    hold = options.hold if options.hold != "auto" else "benchmark" if bench.size <= train.size else "training"
    queries = pl.concat([bench.query_texts(d) for d in range(len(datasets))])
    finder = RepeatFinder(queries, options.near_threshold, options.fold_ascii)
    n, fold = options.ngram, options.fold_ascii

    def training() -> Iterator[tuple[np.ndarray, np.ndarray, int, TextsOf]]:
        for chunk, first, source in train.stream(options.batch):
            h, text = text_ngrams(chunk.texts, n, fold)
            if chunk.query.any():
                finder.feed(chunk.texts.filter(pl.Series(chunk.query)), first + chunk.record[chunk.query])
            yield h, first + chunk.record[text], source, partial(_record_texts, chunk, first)

    def benchmark() -> Iterator[tuple[np.ndarray, np.ndarray, int, TextsOf]]:
        for texts, first, d in bench.batches(options.batch):
            h, text = text_ngrams(texts, n, fold)
            yield h, first + text, d, partial(_batch_texts, texts, first)

    held_side, streamed_side = (benchmark, training) if hold == "benchmark" else (training, benchmark)
    held = HeldIndex()
    for h, items, _, _ in held_side():
        held.add(h, items)
    held.freeze(bench.group_starts if hold == "benchmark" else train.group_starts)
    log.info("leakage: %d n-grams of the %s side held; streaming the other", held.size, hold)
    scan = Scan(held)
    examples = Examples(bench, train, "training" if hold == "benchmark" else "benchmark", options)
    for h, items, group, texts_of in streamed_side():
        examples.offer(scan.feed(h, items, group), texts_of)
    streamed, held_hits = scan.finish()
    bench_hits, train_hits = (held_hits, streamed) if hold == "benchmark" else (streamed, held_hits)

    offsets = np.cumsum([0] + [len(q) for q in bench.query_ids])
    results = [
        _dataset(d, bench, train, bench_hits, train_hits, finder, int(offsets[d]), examples, options)
        for d in range(len(datasets))
    ]
    hit_records = np.unique(train_hits.item)
    per_source = np.bincount(np.searchsorted(train.group_starts, hit_records, side="right") - 1, minlength=len(readers))
    return LeakageResult(
        options=options,
        held=hold,
        held_ngrams=held.size,
        seconds=round(time.perf_counter() - started, 3),
        datasets=results,
        sources=[
            SourceLeakage(
                name=r.source.label,
                path=r.source.path,
                files=len(r.files),
                records=int(train.source_starts[s + 1] - train.source_starts[s]),
                texts=int(train.texts_read[s]),
                query_texts=int(train.queries_read[s]),
                records_hit=int(per_source[s]),
            )
            for s, r in enumerate(readers)
        ],
        train_hits=train.refs(hit_records),
    )


def _record_texts(chunk: Chunk, first: int, items: np.ndarray) -> dict[int, list[str]]:
    return {int(i): chunk.texts.filter(pl.Series(chunk.record == i - first)).to_list() for i in items}


def _batch_texts(texts: pl.Series, first: int, items: np.ndarray) -> dict[int, list[str]]:
    return {int(i): [texts[int(i) - first]] for i in items}


def _dataset(
    d: int,
    bench: BenchmarkSide,
    train: TrainingSide,
    bench_hits: Hits,
    train_hits: Hits,
    finder: RepeatFinder,
    query_offset: int,
    examples: Examples,
    options: LeakageOptions,
) -> DatasetLeakage:
    ds, qids = bench.datasets[d], bench.query_ids[d]
    start, pstart, end = int(bench.starts[d]), bench.passage_start(d), int(bench.starts[d + 1])
    mine = bench_hits.take(np.flatnonzero((bench_hits.item >= start) & (bench_hits.item < end)))
    _, first = np.unique(mine.item, return_index=True)  # one row per item, whichever source
    mine = mine.take(first)
    is_query = mine.item < pstart
    q_rows, p_rows = (mine.item[is_query] - start).tolist(), (mine.item[~is_query] - pstart).tolist()
    doc_ids = ds.doc_ids
    passage_hits = doc_ids.gather(p_rows).to_list() if p_rows else []
    hit_set = set(passage_hits)
    relevant = [q for q in qids if any(g > 0 and doc in hit_set for doc, g in ds.qrels.get(q, {}).items())]
    judged = sum(1 for q in qids if any(g > 0 for g in ds.qrels.get(q, {}).values()))
    long_enough = int((tokens(bench.query_texts(d), options.fold_ascii).list.len() >= options.ngram).sum())

    best = finder.best
    rq = np.flatnonzero(best.score[query_offset : query_offset + len(qids)] > 0)
    refs = train.refs(best.record[query_offset + rq]) if len(rq) else []
    norm = joined(pl.Series([ds.queries[qids[k]].text for k in rq.tolist()], dtype=pl.Utf8), options.fold_ascii)
    repeats = [
        Repeat(
            query_id=qids[k],
            kind="exact" if best.score[query_offset + k] >= 100 else "near",
            score=round(float(best.score[query_offset + k]), 2),
            query=q,
            train=ref,
            train_query=best.text[query_offset + k] or "",
        )
        for k, ref, q in zip(rq.tolist(), refs, norm.to_list())
    ]

    hit_query_ids = [qids[k] for k in q_rows]
    flagged = set(hit_query_ids) | {r.query_id for r in repeats}
    dataset_train = np.unique(train_hits.item[train_hits.group == d])
    return DatasetLeakage(
        name=ds.name,
        path=str(ds.root),
        corpus_fingerprint=ds.corpus_fingerprint,
        queries=len(qids),
        passages=ds.n_docs,
        queries_long_enough=long_enough,
        judged_queries=judged,
        query_hits=hit_query_ids,
        passage_hits=passage_hits,
        relevant_hit_queries=relevant,
        repeats=repeats,
        contaminated_queries=[q for q in qids if q in flagged],
        train_hits=train.refs(dataset_train),
        examples=examples.of(d),
    )
