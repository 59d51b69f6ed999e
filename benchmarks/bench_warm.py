"""The rerun a user makes every day: the default configuration cold, then warm, and the demo's warm rerun.

    .venv/bin/python benchmarks/bench_warm.py [--data xquad|demo] [--replicas 8] [--work FOLDER] [--skip-demo]
        [--skip-flow] [--repeats 3] [--against OTHER/.venv/bin/terazi] [--layer-rounds 3]

Part 1. The default configuration (MiniLM first stage, BM25 and its fusion, five conditions, robustness both,
2000 bootstrap resamples) on XQuAD-tr replicated N× under new ids (N=8: 9,520 queries; `--data demo`: the bundled
demo set replicated), each run a fresh process against one Prefect server: the cold run (everything encoded and
scored; skipped when `--work` already holds its cache) and the warm run (the same config: every candidate frozen,
every pair stored). Per run: wall time of the process, seconds inside the flow, and per stage its wall time (first
start to last end of its Prefect task runs) and the peak RSS of the flow process while it ran (a thread sampling
/proc/self/status every 50 ms); then the bytes the warm run added to the disk (its results folder's files not
hard-linked to a file that existed before it, plus the cache's growth). With `--layer-rounds N`, N rounds of warm
runs follow, each round one with every cache layer and one with each of outputs, file-hashes and bootstraps switched off
in turn (a patch in the run's process): what each layer saves, read against runs of the same minutes.

Part 2. `terazi demo` as a user types it, warm (a cold run first fills its cache): wall time of the command on
Prefect's temporary server (no PREFECT_API_URL: the flow call starts it), then against a running server (`prefect
server start`, PREFECT_API_URL); `--repeats` rounds, each running both kinds in turn. After each run, its floor:
Prefect's own flow of one task on the same kind of server, so that a machine's speed, which moves by half over a day
here, is read off the same minute for both. `--against OTHER/terazi` times another installation's command (main's,
with its own cache and Prefect home) right after this one's, for an interleaved before/after.
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
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks.cache_layers import LAYERS, layer_table, switch_off
from benchmarks.measure import Sampler, dataset, environment, stages, task_runs
from benchmarks.record import record


def run_one(raw: dict, without: str = "") -> dict:
    """In a fresh process: the flow, its stages' times and peak RSS."""
    switch_off(without)
    sampler = Sampler()
    sampler.start()
    from terazi.flows.evaluate import evaluate as run_evaluation
    from terazi.schemas import EvalConfig

    imported = time.time()
    manifest = run_evaluation(EvalConfig.model_validate(raw))
    ended = time.time()
    sampler.done.set()
    start, runs = task_runs(manifest.flow_run_id)
    return {
        "imports_peak": max((r for t, r in sampler.samples if t <= imported), default=0),
        "peak": max(r for _, r in sampler.samples),
        "flow": manifest.seconds,
        "flow_run": ended - start,
        "stages": stages(runs, sampler.samples, start, ended),
        "queries": sum(v.n_queries for v in manifest.variants if v.condition == "clean"),
        "conditions": len({v.condition for v in manifest.variants}),
    }


def cpu_of_children() -> float:
    """CPU seconds (user + system) of every child process waited for so far, their own children included."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def spawn(raw: dict, env: dict, without: str = "") -> dict:
    t, cpu = time.perf_counter(), cpu_of_children()
    out = subprocess.run(
        [sys.executable, __file__, "--run", json.dumps(raw), "--without", without],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if out.returncode:
        raise SystemExit(out.stderr[-3000:])
    return {
        **json.loads(out.stdout.strip().splitlines()[-1]),
        "wall": time.perf_counter() - t,
        "cpu": cpu_of_children() - cpu,
    }


def files(folder: Path) -> dict[tuple[int, int], int]:
    """(device, inode) → size of every file under `folder`."""
    out = {}
    for p in folder.rglob("*"):
        if p.is_file() and not p.is_symlink():
            st = p.stat()
            out[st.st_dev, st.st_ino] = st.st_size
    return out


def new_bytes(before: dict, cache: Path, results: Path) -> tuple[int, int]:
    """Bytes of the files of the results folder, and of the cache folder, that did not exist before the run
    (`before`: every file of the work folder; a hard link to an older file is not new)."""
    mine, cached = files(results), files(cache)
    return (
        sum(v for k, v in mine.items() if k not in before),
        sum(v for k, v in cached.items() if k not in before and k not in mine),
    )


def config(data: Path, work: Path, run_name: str) -> dict:
    """The default configuration: only what names the data, the folders and the run."""
    return {
        "datasets": [{"path": str(data), "name": data.name}],
        "out_dir": str(work / "results"),
        "cache_dir": str(work / "cache"),
        "run_name": run_name,
        "offline": True,
    }


def flow_part(args: argparse.Namespace, work: Path, env: dict) -> dict:
    from prefect.server.api.server import SubprocessASGIServer

    data = dataset(args.data, args.replicas, work)
    server = SubprocessASGIServer()
    server.start(timeout=180)
    env = {**env, "PREFECT_API_URL": server.api_url}
    os.environ["PREFECT_API_URL"] = server.api_url
    rows, layers = {}, {}
    try:
        if not (work / "cache").exists():
            rows["cold"] = spawn(config(data, work, "cold"), env)
            print(f"cold: {rows['cold']['wall']:.0f}s", flush=True)
        warm = work / "results" / "warm"
        if warm.exists():
            subprocess.run(["rm", "-rf", str(warm)], check=True)
        before = files(work)
        rows["warm"] = spawn(config(data, work, "warm"), env)
        rows["warm"]["new_results"], rows["warm"]["new_cache"] = new_bytes(before, work / "cache", warm)
        rows["warm"]["results"] = sum(files(warm).values())
        for r in range(args.layer_rounds):  # interleaved: every layer's row read at the same machine speed
            for layer in ("", *LAYERS):
                subprocess.run(["rm", "-rf", str(warm)], check=True)
                row = spawn(config(data, work, "warm"), env, layer)
                layers.setdefault(layer or "all", []).append(row)
                print(
                    f"round {r + 1}, {'without ' + layer if layer else 'all layers'}: flow {row['flow']:.2f}s, "
                    f"wall {row['wall']:.1f}s, peak {row['peak'] / 2**20:.0f} MB",
                    flush=True,
                )
    finally:
        server.stop()
    if layers:
        layer_table(layers)
    return rows


FLOOR = """
from prefect import flow, task


@task
def one(x: int) -> int:
    return x + 1


@flow
def floor() -> int:
    return one(1)


floor()
"""  # Prefect alone: a flow of one task, as a user's own script would run it


def running_server(env: dict, home: Path) -> tuple[subprocess.Popen, str]:
    """`prefect server start` on a free port of 127.0.0.1, as docs/service.md starts it, with its database in `home`
    (not the one the temporary servers open meanwhile); its API URL once it answers."""
    import socket

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("prefect")), "server", "start", "--port", str(port)],
        env={**env, "PREFECT_HOME": str(home), "PREFECT_SERVER_API_PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url, deadline = f"http://127.0.0.1:{port}/api", time.monotonic() + 300
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return server, url
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    server.kill()
    raise SystemExit("prefect server start did not answer")


def demo_part(work: Path, env: dict, repeats: int, commands: dict[str, str]) -> dict:
    """Each round: `terazi demo` (each of `commands`: name → executable, each with its own cache and Prefect home) on
    Prefect's temporary server and on a running one, each run followed by the floor beside it: Prefect's own
    one-task flow on the same kind of server, so that the two are read at the same machine speed."""
    env = {k: v for k, v in env.items() if k != "PREFECT_API_URL"}
    os.environ.pop("PREFECT_API_URL", None)

    def timed(command: list[str], run_env: dict) -> float:
        t = time.perf_counter()
        out = subprocess.run(command, env=run_env, capture_output=True, text=True, check=False)
        if out.returncode:
            raise SystemExit(f"{' '.join(command[:2])} failed:\n{out.stderr[-3000:]}")
        return time.perf_counter() - t

    def demo(name: str, run_env: dict) -> float:
        if name != "this":  # its own Prefect home, and its own code (not this checkout's, on PYTHONPATH)
            run_env = {
                **{k: v for k, v in run_env.items() if k != "PYTHONPATH"},
                "PREFECT_HOME": str(work / f"prefect-{name}"),
            }
        return timed(
            [commands[name], "demo", "--out", str(work / f"demo-{name}"), "--cache", str(work / f"demo-cache-{name}")],
            run_env,
        )

    for name in commands:  # cold: computes each command's demo cache, not measured
        demo(name, env)
    server, url = running_server(env, work / "prefect-server")
    kinds = {
        "temporary server, started per run": env,
        "running server (PREFECT_API_URL)": {**env, "PREFECT_API_URL": url},
    }
    out = {(kind, name): [] for kind in kinds for name in [*commands, "floor"]}
    try:
        for _ in range(repeats):
            for kind, run_env in kinds.items():
                for name in commands:
                    out[kind, name].append(demo(name, run_env))
                out[kind, "floor"].append(timed([sys.executable, "-c", FLOOR], run_env))
    finally:
        server.terminate()
        server.wait(timeout=30)
    return out


def table(rows: dict) -> None:
    names = list(dict.fromkeys(s for r in rows.values() for s in r["stages"]))
    print(f"\n{'stage':<24}" + "".join(f" {n + ' s':>9} {n + ' MB':>9}" for n in rows))
    for s in names:
        cells = [rows[n]["stages"].get(s) for n in rows]
        print(
            f"{s:<24}"
            + "".join(f" {c['seconds']:>9.2f} {c['peak'] / 2**20:>9.0f}" if c else f" {'':>9} {'':>9}" for c in cells)
        )
    print(f"{'flow run':<24}" + "".join(f" {r['flow_run']:>9.2f} {r['peak'] / 2**20:>9.0f}" for r in rows.values()))
    print(f"{'manifest seconds':<24}" + "".join(f" {r['flow']:>9.2f} {'':>9}" for r in rows.values()))
    print(
        f"{'process wall':<24}"
        + "".join(f" {r['wall']:>9.2f} {r['imports_peak'] / 2**20:>9.0f}" for r in rows.values())
        + "   (MB: after imports)"
    )
    print(f"{'process CPU':<24}" + "".join(f" {r['cpu']:>9.2f} {'':>9}" for r in rows.values()))
    record("bench_warm", {"units": "seconds, bytes", **rows})
    w = rows["warm"]
    print(
        f"\nwarm: {w['queries']:,} queries × {w['conditions']} conditions; results folder {w['results'] / 2**20:.1f} "
        f"MB, of which new on disk {w['new_results'] / 2**20:.2f} MB; new files in the cache "
        f"{w['new_cache'] / 2**20:.2f} MB"
    )


def demo_table(work: Path, env: dict, repeats: int, against: str | None) -> None:
    """Part 2's table: per kind of server, each command's warm demo runs and the floor runs interleaved with them."""
    commands = {"this": str(Path(sys.executable).with_name("terazi")), **({"against": against} if against else {})}
    rows = demo_part(work, env, repeats, commands)
    print(f"\n{'terazi demo, warm':<34} {'command':<8} {'wall s':>34} {'median':>7} {'median / floor':>15}")
    for (kind, name), walls in rows.items():
        floor = statistics.median(rows[kind, "floor"])
        print(
            f"{kind:<34} {name:<8} {', '.join(f'{x:.1f}' for x in walls):>34} {statistics.median(walls):>7.2f} "
            f"{statistics.median(walls) / floor:>15.2f}"
        )
    print(
        "(floor: Prefect's own flow of one task on the same kind of server, run after the demo runs of each round; "
        "wall times include the server a run starts)"
    )
    record("bench_warm_demo", {"against": against, "walls": {f"{kind}: {name}": w for (kind, name), w in rows.items()}})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", choices=("xquad", "demo"), default="xquad")
    ap.add_argument("--replicas", type=int, default=8)
    ap.add_argument("--work", type=Path, help="kept between invocations: a second invocation measures warm only")
    ap.add_argument("--skip-demo", action="store_true")
    ap.add_argument("--skip-flow", action="store_true")
    ap.add_argument("--repeats", type=int, default=3, help="rounds of warm demo runs (each with its floor)")
    ap.add_argument("--against", help="another installation's `terazi`, timed interleaved with this one's")
    ap.add_argument(
        "--layer-rounds",
        type=int,
        default=0,
        help="rounds of warm runs with each cache layer (outputs, file-hashes, bootstraps) switched off in turn",
    )
    ap.add_argument("--run", help=argparse.SUPPRESS)
    ap.add_argument("--without", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run:
        print(json.dumps(run_one(json.loads(args.run), args.without)))
        return
    work = args.work or Path(tempfile.mkdtemp(prefix="terazi-bench-warm-"))
    work.mkdir(parents=True, exist_ok=True)
    env = environment(work / "prefect")
    os.environ.update(env)
    load = os.getloadavg()[0]
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load {load:.1f} on {os.cpu_count()} cores; work {work}")
    if not args.skip_flow:
        table(flow_part(args, work, env))
    if not args.skip_demo:
        demo_table(work, env, args.repeats, args.against)
    print(f"load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
