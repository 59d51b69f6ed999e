"""terazi's metrics vs pytrec_eval and ranx on 10,000 queries × 100 documents, file parsing included.

    .venv/bin/pip install ranx        # optional; skipped with a note when absent
    .venv/bin/python benchmarks/bench_metrics.py [--queries 10000] [--depth 100] [--corpus 500] [--repeat 5]

Writes a TREC qrels and run file and computes nDCG@10, RR@10, P@10, R@100 and AP@100 for every
query, two ways:

1. whole process, as a user runs it: `python -m terazi.cli score` (table output, and JSON) against a
   plain pytrec_eval script (read both files, evaluate, print the means), each a fresh subprocess with
   interpreter start-up and imports, interleaved, `--repeat` times; the means must agree to 1e-9;
2. in process (imports done): read both files + evaluate, per-query values checked to 1e-9.

Prints best and median wall times (with CPU time: user + system of every thread) and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.record import record

MEASURES = {"nDCG@10": "ndcg_cut_10", "RR@10": None, "P@10": "P_10", "R@100": "recall_100", "AP@100": "map_cut_100"}


def make_files(folder: Path, n_q: int, depth: int, corpus: int = 500, seed: int = 0) -> tuple[Path, Path]:
    """Per query: `depth` documents from a corpus of `corpus` ids, scores rounded to 3 decimals (ties happen), and
    about 20 judgments (grades 0–2): 5 of the retrieved documents and 15 drawn from the corpus."""
    rng = np.random.default_rng(seed)
    qrels, run = folder / "qrels.txt", folder / "run.txt"
    with open(qrels, "w") as fq, open(run, "w") as fr:
        for q in range(n_q):
            docs = rng.choice(corpus, size=depth, replace=False)
            judged = np.unique(np.concatenate([rng.choice(docs, size=5, replace=False), rng.choice(corpus, size=15)]))
            fq.writelines(f"q{q} 0 d{d} {rng.integers(0, 3)}\n" for d in judged)
            scores = np.round(rng.random(depth), 3)
            ranked = sorted(zip(docs, scores), key=lambda x: -x[1])
            fr.writelines(f"q{q} Q0 d{d} {rank} {s} bench\n" for rank, (d, s) in enumerate(ranked, start=1))
    return qrels, run


def run_terazi(qrels: Path, run: Path) -> dict[str, dict[str, float]]:
    from terazi.data.trec import read_qrels, read_run
    from terazi.metrics.engine import evaluate

    ev = evaluate(read_qrels(qrels), read_run(run), list(MEASURES))
    return {m: ev.per_query_dict(m) for m in MEASURES}


def run_pytrec(qrels: Path, run: Path) -> dict[str, dict[str, float]]:
    import pytrec_eval

    with open(qrels) as f:
        qd = pytrec_eval.parse_qrel(f)
    with open(run) as f:
        rd = pytrec_eval.parse_run(f)
    res = pytrec_eval.RelevanceEvaluator(
        qd, {"ndcg_cut.10", "P.10", "recall.100", "map_cut.100", "recip_rank"}
    ).evaluate(rd)
    # trec_eval's recip_rank has no cutoff: RR@10 is computed from it only where the first hit is in the top 10
    out = {m: {q: v[k] for q, v in res.items()} for m, k in MEASURES.items() if k}
    out["RR@10"] = {q: (v["recip_rank"] if v["recip_rank"] >= 0.1 else 0.0) for q, v in res.items()}
    return out


def run_ranx(qrels: Path, run: Path) -> dict[str, dict[str, float]]:
    from ranx import Qrels, Run, evaluate

    q = Qrels.from_file(str(qrels), kind="trec")
    r = Run.from_file(str(run), kind="trec")
    names = {
        "nDCG@10": "ndcg@10",
        "RR@10": "mrr@10",
        "P@10": "precision@10",
        "R@100": "recall@100",
        "AP@100": "map@100",
    }
    res = evaluate(q, r, list(names.values()), return_mean=False)
    ids = list(r.keys())
    return {m: dict(zip(ids, np.asarray(res[n]).tolist())) for m, n in names.items()}


PYTREC_SCRIPT = """\
import json, sys
import pytrec_eval

with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
measures = {"ndcg_cut.10", "P.10", "recall.100", "map_cut.100", "recip_rank"}
res = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
n = len(res)
means = {m: sum(v[k] for v in res.values()) / n for m, k in
         (("nDCG@10", "ndcg_cut_10"), ("P@10", "P_10"), ("R@100", "recall_100"), ("AP@100", "map_cut_100"))}
means["RR@10"] = sum(v["recip_rank"] if v["recip_rank"] >= 0.1 else 0.0 for v in res.values()) / n
print(json.dumps(means))
"""


def whole_process(folder: Path, qrels: Path, run: Path, repeat: int) -> tuple[dict[str, list[float]], ...]:
    """Wall and CPU seconds of fresh processes, terazi and pytrec_eval interleaved; checks that their means agree."""
    script = folder / "pytrec_script.py"
    script.write_text(PYTREC_SCRIPT)
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    terazi = [
        sys.executable,
        "-m",
        "terazi.cli",
        "score",
        "--qrels",
        str(qrels),
        "--run",
        str(run),
        *(a for m in MEASURES for a in ("-m", m)),
    ]
    commands = {
        "terazi score": terazi,
        "terazi score --json": terazi + ["--format", "json"],
        "pytrec_eval script": [sys.executable, str(script), str(qrels), str(run)],
    }
    # byte-compile terazi as an installed package is (pip does it), even where PYTHONDONTWRITEBYTECODE is set;
    # pytrec_eval in site-packages is compiled already, and each tool's entry script is compiled on every run
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(root / "terazi")], check=True, stdout=subprocess.DEVNULL
    )
    ours = json.loads(subprocess.run(terazi + ["--format", "json"], env=env, check=True, capture_output=True).stdout)
    theirs = json.loads(subprocess.run(commands["pytrec_eval script"], env=env, check=True, capture_output=True).stdout)
    worst = max(abs(ours["aggregate"][m] - theirs[m]) for m in MEASURES)
    assert worst <= 1e-9, f"terazi score and the pytrec_eval script differ by {worst}"
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, cmd in commands.items():
            before, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            times[name].append(time.perf_counter() - t)
            cpu[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return times, cpu


def best_of(fn, repeat: int, *args):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--corpus", type=int, default=500, help="distinct document ids the run draws from (× depth)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        qrels, run = make_files(Path(tmp), args.queries, args.depth, args.corpus)
        print(
            f"{args.queries} queries × {args.depth} documents from a corpus of {args.corpus}; "
            f"measures {', '.join(MEASURES)}"
        )
        times, cpu = whole_process(Path(tmp), qrels, run, args.repeat)
        print(
            f"whole process (fresh interpreter, imports, both files read, {args.repeat} interleaved runs; "
            f"means agree within 1e-9):"
        )
        best = {name: min(t) for name, t in times.items()}
        median = {name: statistics.median(t) for name, t in times.items()}
        for name in times:
            print(
                f"{name:>20}: best {best[name]:6.3f} s   median {median[name]:6.3f} s   "
                f"(CPU best {min(cpu[name]):.3f} s: user + system, every thread)"
            )
        for name in ("terazi score", "terazi score --json"):
            print(
                f"{'ratio':>20}: best {best[name] / best['pytrec_eval script']:6.2f}×   median "
                f"{median[name] / median['pytrec_eval script']:6.2f}×  ({name} / pytrec_eval script)"
            )
        print("in process (imports done; read both files + evaluate):")
        t_ours, ours = best_of(run_terazi, args.repeat, qrels, run)
        t_trec, trec = best_of(run_pytrec, args.repeat, qrels, run)
        rows = [("terazi", t_ours), ("pytrec_eval", t_trec)]
        for m in MEASURES:
            diff = max(abs(ours[m][q] - trec[m][q]) for q in trec[m])
            assert diff <= 1e-9, f"{m}: terazi and pytrec_eval differ by {diff}"
        print("agreement with pytrec_eval: every measure, every query within 1e-9")
        try:
            run_ranx(qrels, run)  # first call compiles numba kernels; not timed
            t_ranx, rx = best_of(run_ranx, args.repeat, qrels, run)
            rows.append(("ranx (warm)", t_ranx))
            worst = max(abs(ours[m][q] - rx[m][q]) for m in MEASURES for q in rx[m])
            print(f"largest difference from ranx: {worst:.2e} (ranx breaks ties by input order, not trec_eval's rule)")
        except ImportError:
            print("ranx not installed: skipped (pip install ranx)")
        for name, t in rows:
            print(f"{name:>14}: {t:7.3f} s   ({t / t_ours:5.2f}× terazi)")
    record(
        "bench_metrics",
        {
            "queries": args.queries,
            "depth": args.depth,
            "corpus": args.corpus,
            "repeat": args.repeat,
            "whole_process_s": {
                name: {"walls": t, "best": best[name], "median": median[name], "cpu_best": min(cpu[name])}
                for name, t in times.items()
            },
            "ratio_to_pytrec_eval_script": {
                name: {
                    "best": best[name] / best["pytrec_eval script"],
                    "median": median[name] / median["pytrec_eval script"],
                }
                for name in ("terazi score", "terazi score --json")
            },
            "in_process_best_s": dict(rows),
        },
    )


if __name__ == "__main__":
    main()
