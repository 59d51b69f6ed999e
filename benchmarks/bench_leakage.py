"""The leakage check at scale: 100k training passages against a 500k-passage benchmark, beside plain Python sets.

    .venv/bin/python benchmarks/bench_leakage.py [--train 100000] [--passages 500000] [--plain-fraction 1.0]

Synthetic Turkish-looking texts (words drawn from a 30k-word vocabulary with Zipf frequencies, 40–90 words a
passage; queries of 4–12 words). Planted leakage, so the answer is known: 1% of the training passages carry a
10-word window of a benchmark passage among their own words, every other one upper-cased the Turkish way and
every third one in NFD; 2% of the training queries repeat a benchmark query (half exactly, half with one letter
changed). Each method runs in a fresh process, timed from reading the files to its answer (for terazi: loading
and validating the BEIR folder with `load_beir`, then `terazi.leakage.check`), its peak RSS read from
/proc/self/status. The plain-Python method is the same n-gram check written with Python sets of word tuples
(normalised by `terazi.base.turkish` and a regular expression), in three passes: training n-grams into a set, benchmark
texts looked up in it (collecting the n-grams met), training texts looked up in those; plus exact repeats by a set
of normalised queries (no near repeats: it has no counterpart to rapidfuzz's banded search). With
--plain-fraction below 1 it runs on that share of both sides and its time is extrapolated (its work is linear in
each side's size; the extrapolation is said in the output); its peak memory is then not extrapolated.
Data are written once to /tmp/terazi-bench-leakage-<sizes>/ and reused.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import resource
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.record import record

NGRAM = 8


def _vocab(rng: random.Random, size: int) -> tuple[list[str], list[float]]:
    syll = [a + b for a in "bcçdfgğhklmnprsştvyz" for b in "aeıioöuü"] + ["ar", "en", "il", "on", "ür", "ış"]
    words = sorted({"".join(rng.choice(syll) for _ in range(rng.randint(1, 4))) for _ in range(size * 2)})[:size]
    rng.shuffle(words)
    return words, list(itertools.accumulate(1 / (r + 10) for r in range(len(words))))


def generate(folder: Path, n_train: int, n_passages: int, n_queries: int, n_train_queries: int) -> dict:
    """Write the benchmark (BEIR) and training (JSON lines) files; return what was planted."""
    from terazi.base.turkish import tr_upper
    from terazi.data.beir import write_beir

    rng = random.Random(25)
    words, cumulative = _vocab(rng, 30_000)

    def sentence(lo, hi):
        return " ".join(rng.choices(words, cum_weights=cumulative, k=rng.randint(lo, hi)))

    docs = [{"_id": f"d{i}", "text": sentence(40, 90).capitalize() + "."} for i in range(n_passages)]
    queries = [{"_id": f"q{i}", "text": sentence(4, 12) + "?"} for i in range(n_queries)]
    qrels = [(f"q{i}", f"d{rng.randrange(n_passages)}", 1) for i in range(n_queries)]
    write_beir(folder / "bench", docs, queries, qrels)
    planted_docs, planted_queries = {}, {}
    with open(folder / "train.jsonl", "w", encoding="utf-8") as f:
        for i in range(n_train):
            text, query = sentence(40, 90), sentence(4, 12)
            if i % 100 == 7:  # a 10-word window of a benchmark passage among the passage's own words
                d = rng.randrange(n_passages)
                src = docs[d]["text"].rstrip(".").split()
                at = rng.randrange(len(src) - 10)
                window = " ".join(src[at : at + 10])
                window = tr_upper(window) if i % 200 == 7 else window
                window = unicodedata.normalize("NFD", window) if i % 300 == 7 else window
                own = text.split()
                cut = rng.randrange(len(own))
                text = " ".join(own[:cut] + [window] + own[cut:])
                planted_docs[f"d{d}"] = i + 1
            if i < n_train_queries and i % 50 == 3:
                q = rng.randrange(n_queries)
                query = queries[q]["text"].rstrip("?")
                if i % 100 == 3:
                    k = rng.randrange(len(query))
                    query = query[:k] + ("a" if query[k] != "a" else "e") + query[k + 1 :]
                planted_queries[f"q{q}"] = i + 1
            row = {"text": text, "query": query} if i < n_train_queries else {"text": text, "query": None}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return {"planted_passages": len(planted_docs), "planted_queries": len(planted_queries)}


def cpu_seconds() -> float:
    """User and system CPU time of this process, all threads: steadier than wall time on a shared machine."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def peak_rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("VmHWM not in /proc/self/status")


def run_terazi(folder: Path) -> dict:
    from terazi.data.beir import load_beir
    from terazi.leakage import LeakageOptions, TrainSource, check

    t0, c0 = time.perf_counter(), cpu_seconds()
    ds = load_beir(folder / "bench")
    t1 = time.perf_counter()
    r = check(
        [ds], [TrainSource(path=str(folder / "train.jsonl"), fields=("text", "query"))], LeakageOptions(ngram=NGRAM)
    )
    t2 = time.perf_counter()
    d = r.datasets[0]
    return {
        "seconds": t2 - t0,
        "cpu": cpu_seconds() - c0,
        "load_seconds": t1 - t0,
        "check_seconds": t2 - t1,
        "peak": peak_rss(),
        "passages_hit": len(d.passage_hits),
        "queries_hit": len(d.query_hits),
        "train_hits": len(r.train_hits),
        "exact_repeats": sum(x.kind == "exact" for x in d.repeats),
        "near_repeats": sum(x.kind == "near" for x in d.repeats),
        "held": r.held,
        "held_ngrams": r.held_ngrams,
    }


_APOS = re.compile("['’‘ʼ`´]")
_SPLIT = re.compile(r"[^\w]+|_+")


def _plain_tokens(text: str) -> list[str]:
    from terazi.base.turkish import tr_lower

    return [t for t in _SPLIT.split(_APOS.sub("", tr_lower(text))) if t]


def _grams(toks: list[str]) -> list[tuple[str, ...]]:
    return [tuple(toks[i : i + NGRAM]) for i in range(len(toks) - NGRAM + 1)]


def run_plain(folder: Path, fraction: float) -> dict:
    """The same check with Python sets; `fraction` of each side (every k-th line)."""
    t0, c0 = time.perf_counter(), cpu_seconds()
    step = round(1 / fraction)

    def train_rows():
        with open(folder / "train.jsonl", encoding="utf-8") as f:
            for n, line in enumerate(f):
                if n % step == 0:
                    yield json.loads(line)

    def bench_texts():
        for name in ("queries.jsonl", "corpus.jsonl"):
            with open(folder / "bench" / name, encoding="utf-8") as f:
                for n, line in enumerate(f):
                    if n % step == 0:
                        yield json.loads(line)["text"]

    train_grams: set[tuple[str, ...]] = set()
    train_queries: set[str] = set()
    for row in train_rows():
        for field in ("text", "query"):
            if row[field]:
                train_grams.update(_grams(_plain_tokens(row[field])))
        if row["query"]:
            train_queries.add(" ".join(_plain_tokens(row["query"])))
    found: set[tuple[str, ...]] = set()
    bench_hits = repeats = 0
    with open(folder / "bench" / "queries.jsonl", encoding="utf-8") as f:
        repeats = sum(
            " ".join(_plain_tokens(json.loads(line)["text"])) in train_queries
            for n, line in enumerate(f)
            if n % step == 0
        )
    for text in bench_texts():
        met = train_grams.intersection(_grams(_plain_tokens(text)))
        if met:
            bench_hits += 1
            found |= met
    train_hits = sum(
        any(g in found for field in ("text", "query") if row[field] for g in _grams(_plain_tokens(row[field])))
        for row in train_rows()
    )
    return {
        "seconds": time.perf_counter() - t0,
        "cpu": cpu_seconds() - c0,
        "peak": peak_rss(),
        "bench_hits": bench_hits,
        "train_hits": train_hits,
        "exact_repeats": repeats,
        "fraction": 1 / step,
    }


def child(method: str, folder: Path, fraction: float) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", method, "--data", str(folder), "--plain-fraction", str(fraction)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", type=int, default=100_000)
    ap.add_argument("--passages", type=int, default=500_000)
    ap.add_argument("--queries", type=int, default=5_000)
    ap.add_argument("--train-queries", type=int, default=20_000)
    ap.add_argument("--plain-fraction", type=float, default=1.0)
    ap.add_argument("--child", choices=["terazi", "plain"])
    ap.add_argument("--data", type=Path)
    a = ap.parse_args()
    if a.child:
        res = run_terazi(a.data) if a.child == "terazi" else run_plain(a.data, a.plain_fraction)
        print(json.dumps(res))
        return
    folder = Path(f"/tmp/terazi-bench-leakage-{a.train}-{a.passages}-{a.queries}-{a.train_queries}")
    if not (folder / "planted.json").is_file():
        t = time.perf_counter()
        folder.mkdir(parents=True, exist_ok=True)
        planted = generate(folder, a.train, a.passages, a.queries, a.train_queries)
        (folder / "planted.json").write_text(json.dumps(planted))
        print(f"data written to {folder} in {time.perf_counter() - t:.0f} s")
    planted = json.loads((folder / "planted.json").read_text())
    sizes = {p.name: p.stat().st_size for p in [folder / "train.jsonl", folder / "bench" / "corpus.jsonl"]}
    print(
        f"{a.train:,} training passages ({a.train_queries:,} with a query; {sizes['train.jsonl'] / 2**20:.0f} MB) "
        f"against {a.passages:,} benchmark passages and {a.queries:,} queries "
        f"({sizes['corpus.jsonl'] / 2**20:.0f} MB); {NGRAM}-grams; {os.cpu_count()} cores"
    )
    print(
        f"planted: {planted['planted_passages']:,} benchmark passages copied into training, "
        f"{planted['planted_queries']:,} benchmark queries repeated (half exactly)"
    )
    t = child("terazi", folder, 1.0)
    p = child("plain", folder, a.plain_fraction)
    scale = 1 / p["fraction"]  # each of its passes is linear in one side's size, and both sides were cut alike
    plain_s, plain_cpu = p["seconds"] * scale, p["cpu"] * scale
    print(f"{'method':<28} {'wall s':>8} {'CPU s':>7} {'peak RSS MB':>12}  answer")
    print(
        f"{'terazi.leakage.check':<28} {t['seconds']:>8.1f} {t['cpu']:>7.1f} {t['peak'] / 2**20:>12.0f}  "
        f"{t['passages_hit']:,} passages + {t['queries_hit']:,} queries hit, {t['train_hits']:,} training records, "
        f"{t['exact_repeats']:,} exact + {t['near_repeats']:,} near repeats "
        f"(load_beir {t['load_seconds']:.1f} s + check {t['check_seconds']:.1f} s; {t['held']} side held, "
        f"{t['held_ngrams']:,} n-grams)"
    )
    note = (
        ""
        if p["fraction"] == 1
        else f" (ran on 1/{round(1 / p['fraction'])} of each side in {p['seconds']:.1f} s: "
        f"time extrapolated ×{scale:.0f}, answer and memory of the sample)"
    )
    print(
        f"{'plain Python sets':<28} {plain_s:>8.1f} {plain_cpu:>7.1f} {p['peak'] / 2**20:>12.0f}  "
        f"{p['bench_hits']:,} benchmark items hit, {p['train_hits']:,} training records, "
        f"{p['exact_repeats']:,} exact repeats{note}"
    )
    print(
        f"planted overlaps found by terazi: {t['passages_hit']:,} passages hit of {planted['planted_passages']:,} "
        f"planted; {t['exact_repeats'] + t['near_repeats']:,} repeats of {planted['planted_queries']:,} planted"
    )
    print(
        f"terazi against plain Python: {plain_s / t['seconds']:.1f}× as fast in wall time, "
        f"{plain_cpu / t['cpu']:.1f}× in CPU time, {p['peak'] / t['peak']:.1f}× less peak memory"
    )
    record(
        "bench_leakage",
        {
            "units": "seconds, bytes",
            "train": a.train,
            "passages": a.passages,
            "queries": a.queries,
            "train_queries": a.train_queries,
            "sizes": sizes,
            "planted": planted,
            "terazi": t,
            "plain": p | {"extrapolated_seconds": plain_s, "extrapolated_cpu": plain_cpu},
        },
    )


if __name__ == "__main__":
    main()
