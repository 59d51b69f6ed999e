"""A user scaling up: the default configuration, cold, on XQuAD-tr replicated ×2, ×8 and ×64, and the memory it needs.

    .venv/bin/python benchmarks/bench_scale_up.py [--replicas 2 8 64] [--work FOLDER] [--no-save]

The default configuration (first stage, BM25 and its fusion, five conditions, robustness both, 2000 bootstrap
resamples) with a tiny random bi-encoder as the first stage (`benchmarks/tiny.py`), so that the model is not what
grows. Each run is a fresh process with a fresh cache against one Prefect server. Per run: the peak RSS of the whole
process (the kernel's high-water mark, as GNU time reports it), and per stage its wall time and the peak RSS sampled
while it ran (a thread reading /proc/self/statm every 50 ms); beside them the floor: a process that imported terazi
and loaded the encoder, and nothing else. Then the peak's growth per added question between each pair of sizes.

The figures are written to benchmarks/results/scale_up.json (dated, with the commit and the machine's load).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

RESULTS = ROOT / "benchmarks" / "results" / "scale_up.json"


def config(data: Path, work: Path, encoder: str) -> dict:
    """The default configuration but for the encoder: only what names the data, the folders and the run."""
    return {
        "datasets": [{"path": str(data), "name": data.name}],
        "encoder": {"model": encoder},
        "out_dir": str(work / "results"),
        "cache_dir": str(work / "cache"),
        "run_name": "cold",
        "offline": True,
    }


def run_one(raw: dict) -> dict:
    """In a fresh process: the flow, its stages' times and peak RSS, the process's high-water mark."""
    from benchmarks.measure import Sampler, stages, task_runs
    from benchmarks.tiny import peak_rss

    sampler = Sampler()
    sampler.start()
    from terazi.flows.evaluate import evaluate as run_evaluation
    from terazi.schemas import EvalConfig

    t = time.time()
    manifest = run_evaluation(EvalConfig.model_validate(raw))
    ended = time.time()
    sampler.done.set()
    start, runs = task_runs(manifest.flow_run_id)
    return {
        "peak": peak_rss(),
        "flow_seconds": ended - t,
        "stages": stages(runs, sampler.samples, start, ended),
        "queries": sum(v.n_queries for v in manifest.variants if v.condition == "clean"),
    }


def floor(encoder: str) -> dict:
    """In a fresh process: terazi and its flow imported, the encoder loaded as the first stage loads it."""
    from benchmarks.tiny import peak_rss
    from terazi.flows.evaluate import evaluate  # noqa: F401  (what the runs import)
    from terazi.models.encoders import shared_bi_encoder
    from terazi.models.refs import resolve

    model, _ = shared_bi_encoder(resolve(encoder, None, True), "cpu", None)
    model.encode(["bir sorgu"])  # its first call allocates its buffers
    return {"peak": peak_rss()}


def commit() -> str:
    out = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return out.stdout.strip() or "unknown"


def report(rows: dict[int, dict], base: dict) -> list[str]:
    """The table: per stage its seconds and peak MB at each size; the process's peak; growth per added question."""

    def mb(b: int) -> str:
        return f"{b / 2**20:,.0f}"

    sizes = sorted(rows)
    names = list(dict.fromkeys(s for n in sizes for s in rows[n]["stages"]))
    lines = [f"{'stage':<24}" + "".join(f" {f'×{n} s':>9} {f'×{n} MB':>9}" for n in sizes)]
    for s in names:
        cells = [rows[n]["stages"].get(s) for n in sizes]
        lines.append(
            f"{s:<24}"
            + "".join(f" {c['seconds']:>9.1f} {mb(c['peak']):>9}" if c else f" {'':>9} {'':>9}" for c in cells)
        )
    lines.append(
        f"{'process (peak RSS)':<24}" + "".join(f" {rows[n]['wall']:>9.1f} {mb(rows[n]['peak']):>9}" for n in sizes)
    )
    lines.append(f"{'floor (models loaded)':<24}" + "".join(f" {'':>9} {mb(base['peak']):>9}" for _ in sizes))
    lines.append("questions: " + ", ".join(f"×{n} {rows[n]['queries']:,}" for n in sizes))
    for a, b in itertools.pairwise(sizes):
        grow = (rows[b]["peak"] - rows[a]["peak"]) / (rows[b]["queries"] - rows[a]["queries"])
        lines.append(f"peak growth ×{a} → ×{b}: {grow / 1000:.1f} kB per added question")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--replicas", type=int, nargs="+", default=[2, 8, 64])
    ap.add_argument("--work", type=Path, help="where the data, caches and results go (default: a new temporary folder)")
    ap.add_argument("--no-save", action="store_true", help=f"print only; do not write {RESULTS.relative_to(ROOT)}")
    ap.add_argument("--run", help=argparse.SUPPRESS)
    ap.add_argument("--floor", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run or args.floor:
        print(json.dumps(run_one(json.loads(args.run)) if args.run else floor(json.loads(args.floor))))
        return
    from prefect.server.api.server import SubprocessASGIServer

    from benchmarks.measure import dataset, environment, spawn
    from benchmarks.tiny import bi_encoder

    work = args.work or Path(tempfile.mkdtemp(prefix="terazi-bench-scale-up-"))
    work.mkdir(parents=True, exist_ok=True)
    env = environment(work / "prefect")
    os.environ.update(env)
    load = os.getloadavg()[0]
    when = datetime.now(UTC)
    print(f"{when:%Y-%m-%d %H:%M} UTC, load {load:.1f} on {os.cpu_count()} cores; work {work}", flush=True)
    encoder = bi_encoder(work / "tiny-encoder")
    server = SubprocessASGIServer()
    server.start(timeout=180)
    env["PREFECT_API_URL"] = os.environ["PREFECT_API_URL"] = server.api_url
    rows = {}
    try:
        base = spawn(__file__, "--floor", encoder, env)
        for n in args.replicas:
            data = dataset("xquad", n, work)
            run = work / f"x{n}"
            subprocess.run(["rm", "-rf", str(run)], check=True)  # cold: a fresh cache and results folder
            rows[n] = spawn(__file__, "--run", config(data, run, encoder), env)
            print(
                f"×{n}: {rows[n]['queries']:,} questions, {rows[n]['wall']:.0f}s, peak {rows[n]['peak'] / 2**20:,.0f}"
                " MB",
                flush=True,
            )
    finally:
        server.stop()
    lines = report(rows, base)
    print("\n" + "\n".join(lines))
    print(f"load at the end {os.getloadavg()[0]:.1f}")
    if not args.no_save:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(
            json.dumps(
                {
                    "benchmark": "benchmarks/bench_scale_up.py",
                    "date": f"{when:%Y-%m-%d %H:%M} UTC",
                    "commit": commit(),
                    "machine": f"{os.cpu_count()} cores, load {load:.1f} at the start, "
                    f"{os.getloadavg()[0]:.1f} at the end",
                    "floor_peak_bytes": base["peak"],
                    "runs": {f"x{n}": r for n, r in rows.items()},
                    "table": lines,
                },
                indent=1,
                ensure_ascii=False,
            )
            + "\n"
        )
        print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
