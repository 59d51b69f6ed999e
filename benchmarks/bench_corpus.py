"""The corpus axis: XQuAD-tr's questions against a corpus grown to N passages, terazi cold beside the floor.

    .venv/bin/python benchmarks/bench_corpus.py [--passages 50000 200000] [--work FOLDER] [--side terazi|floor]
        [--variants RESULTS] [--max-length 128] [--keep] [--no-save]

XQuAD-tr's 1,190 questions against its 240 passages and distractor passages made of its own sentences (seeded:
3 to 7 sentences drawn from the whole set, so every distractor reads like a passage and shares its words), up to N
passages. terazi runs the default configuration cold (a fresh cache) with a tiny random 64-d bi-encoder
(`benchmarks/tiny.py`), so that the model is not what grows; beside it the floor, a plain script doing the same
first-stage work with the libraries alone: every text in a Python list, sentence-transformers `encode`, FAISS
`IndexFlatIP` top 100, bm25s (PyStemmer's Turkish stems) index and top 100, for the same query variants (the ones
terazi's run made). Each side runs in a fresh process; per side its wall time, its peak RSS (the kernel's
high-water mark) and per stage its time and the peak RSS sampled meanwhile (`benchmarks/measure.py`); then the
ratios and the peak's growth per added passage. Figures to benchmarks/results/bench_corpus.json
(`benchmarks/record.py`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

DEPTH = 100
SENTENCE = re.compile(r"(?<=[.!?])\s+")


def grown(folder: Path, passages: int) -> Path:
    """XQuAD-tr as BEIR with distractors `x0`, `x1`, … after its own passages, up to `passages` in all."""
    import numpy as np

    from benchmarks.measure import XQUAD
    from terazi.data.squad import squad_to_beir

    target = folder / f"xquad-tr-{passages}"
    if (target / "corpus.jsonl").is_file():
        return target
    if not XQUAD.is_file():
        raise SystemExit(f"{XQUAD} not found: this benchmark reads XQuAD from ../shared")
    squad_to_beir(XQUAD, source := folder / "xquad-tr")
    own = [json.loads(line) for line in (source / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    sentences = [s for d in own for s in SENTENCE.split(d["text"]) if s]
    rng = np.random.default_rng(47)
    tmp = folder / f".{target.name}.tmp"
    (tmp / "qrels").mkdir(parents=True, exist_ok=True)
    with open(tmp / "corpus.jsonl", "w", encoding="utf-8") as f:
        for d in own:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
        for i in range(passages - len(own)):
            picked = rng.integers(0, len(sentences), size=int(rng.integers(3, 8)))
            text = " ".join(sentences[j] for j in picked)
            f.write(json.dumps({"_id": f"x{i}", "text": text}, ensure_ascii=False) + "\n")
    for name in ("queries.jsonl", "qrels/test.tsv"):
        (tmp / name).write_bytes((source / name).read_bytes())
    tmp.rename(target)
    return target


def floor(job: dict) -> dict:
    """In a fresh process: the first stage's work with the libraries alone, each step timed."""
    import bm25s
    import faiss
    import polars as pl
    import Stemmer
    from sentence_transformers import SentenceTransformer

    from benchmarks.measure import Sampler
    from benchmarks.tiny import peak_rss

    sampler = Sampler()
    sampler.start()
    marks = [("start", time.time())]

    def mark(stage: str) -> None:
        marks.append((stage, time.time()))

    texts = []
    with open(Path(job["data"]) / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            texts.append(f"{d['title']}. {d['text']}" if d.get("title") else d["text"])
    queries = pl.concat([pl.read_parquet(p, columns=["text"]) for p in job["variants"]])["text"].unique().to_list()
    mark("read")
    model = SentenceTransformer(job["encoder"], device="cpu")
    mark("load encoder")
    docs = model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    mark("encode corpus")
    q = model.encode(queries, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    mark("encode queries")
    index = faiss.IndexFlatIP(docs.shape[1])
    index.add(docs)
    index.search(q, DEPTH)
    mark("faiss top 100")
    stemmer = Stemmer.Stemmer("turkish")
    bm25 = bm25s.BM25()
    bm25.index(bm25s.tokenize(texts, stopwords=None, stemmer=stemmer, show_progress=False), show_progress=False)
    mark("bm25 index")
    bm25.retrieve(
        bm25s.tokenize(queries, stopwords=None, stemmer=stemmer, show_progress=False),
        k=DEPTH,
        show_progress=False,
        n_threads=1,
    )
    mark("bm25 top 100")
    sampler.done.set()
    stages = {}
    for (_, a), (name, z) in itertools.pairwise(marks):
        inside = [rss for t, rss in sampler.samples if a - 0.05 <= t <= z + 0.05]
        stages[name] = {"seconds": z - a, "peak": max(inside, default=0)}
    return {"peak": peak_rss(), "stages": stages, "query_texts": len(queries)}


def with_cpu(run: Callable[..., dict], *args) -> dict:
    """`run(*args)`'s figures with the CPU seconds (user and system) of the process it waited for: on a shared machine
    a side's wall time depends on what else runs, its CPU time much less."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = run(*args)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {**out, "cpu": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime}


def report(rows: dict[int, dict]) -> list[str]:
    """Per size: each side's wall and peak, their ratios, terazi's stages; the peak's growth per added passage."""

    def mb(b: int) -> str:
        return f"{b / 2**20:,.0f}"

    lines = []
    for n, r in sorted(rows.items()):
        cells = [
            f"{side} {r[side]['wall']:.0f} s (CPU {r[side]['cpu']:.0f} s), peak {mb(r[side]['peak'])} MiB"
            for side in ("terazi", "floor")
            if side in r
        ]
        if len(cells) == 2:
            t, f = r["terazi"], r["floor"]
            ratio = {k: t[k] / f[k] for k in ("wall", "cpu", "peak")}
            cells.append(f"ratio wall {ratio['wall']:.2f}×, CPU {ratio['cpu']:.2f}×, peak {ratio['peak']:.2f}×")
        lines.append(f"{n:>9,} passages: " + "; ".join(cells))
        for side in ("terazi", "floor"):
            if side in r:
                lines.append(
                    f"    {side}: "
                    + ", ".join(f"{s} {c['seconds']:.1f} s {mb(c['peak'])}" for s, c in r[side]["stages"].items())
                )
    for a, b in itertools.pairwise(sorted(rows)):
        for side in ("terazi", "floor"):
            if side in rows[a] and side in rows[b]:
                grow = (rows[b][side]["peak"] - rows[a][side]["peak"]) / (b - a)
                lines.append(f"{side} peak growth {a:,} → {b:,}: {grow / 1000:.2f} kB per added passage")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passages", type=int, nargs="+", default=[50_000, 200_000])
    ap.add_argument("--work", type=Path, help="where the data, caches and results go (default: a new temporary folder)")
    ap.add_argument("--side", choices=["both", "terazi", "floor"], default="both", help="run one side only")
    ap.add_argument("--variants", type=Path, help="the floor's query variants: an earlier run's results folder")
    ap.add_argument("--max-length", type=int, default=128, help="the tiny encoder's tokens per text (default 128)")
    ap.add_argument("--keep", action="store_true", help="keep each run's results folder (to compare runs)")
    ap.add_argument("--no-save", action="store_true", help="print only; do not write benchmarks/results/")
    ap.add_argument("--floor", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.floor:
        print(json.dumps(floor(json.loads(args.floor))))
        return
    from prefect.server.api.server import SubprocessASGIServer

    from benchmarks import bench_scale_up
    from benchmarks.measure import environment, spawn
    from benchmarks.tiny import bi_encoder

    work = args.work or Path(tempfile.mkdtemp(prefix="terazi-bench-corpus-"))
    work.mkdir(parents=True, exist_ok=True)
    env = environment(work / "prefect")
    os.environ.update(env)
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; work {work}", flush=True)
    encoder = bi_encoder(work / f"tiny-encoder-{args.max_length}", max_length=args.max_length)
    server = SubprocessASGIServer()
    if args.side != "floor":  # the floor has no flow
        server.start(timeout=180)
        env["PREFECT_API_URL"] = os.environ["PREFECT_API_URL"] = server.api_url
    rows: dict[int, dict] = {}
    try:
        for n in args.passages:
            data = grown(work, n)
            run, rows[n] = work / f"n{n}", {}
            if args.side != "floor":
                subprocess.run(["rm", "-rf", str(run)], check=True)  # cold: a fresh cache and results folder
                rows[n]["terazi"] = with_cpu(
                    spawn, bench_scale_up.__file__, "--run", bench_scale_up.config(data, run, encoder), env
                )
                print(f"{n:,}: terazi {rows[n]['terazi']['wall']:.0f} s", flush=True)
            if args.side != "terazi":
                found = (args.variants or run / "results").glob("**/variants/*/*.parquet")
                job = {"data": str(data), "encoder": encoder, "variants": sorted(str(p) for p in found)}
                rows[n]["floor"] = with_cpu(spawn, __file__, "--floor", job, env)
                print(f"{n:,}: floor {rows[n]['floor']['wall']:.0f} s", flush=True)
            if not args.keep:
                subprocess.run(["rm", "-rf", str(run / "cache")], check=True)
    finally:
        if args.side != "floor":
            server.stop()
    lines = report(rows)
    print("\n" + "\n".join(lines))
    if not args.no_save:
        from benchmarks.record import record

        record("bench_corpus", {"runs": {str(n): r for n, r in rows.items()}, "table": lines})


if __name__ == "__main__":
    main()
