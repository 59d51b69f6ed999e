"""The measuring tools the warm, scale-up and corpus benchmarks (bench_warm.py, bench_scale_up.py, bench_corpus.py)
share: the data set they run on (XQuAD-tr or the demo set, replicated), the environment their processes run in, a
side run in a fresh process, a thread sampling the process's RSS, and a flow run's task runs read back from the
Prefect server as stages, each with its wall time and peak RSS.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
XQUAD = ROOT.parent / "shared" / "data" / "xquad" / "xquad.tr.json"
STAGES = {  # task function → stage (a task run's key is the function's name and a hash)
    "preflight": "preflight",
    "corrupt_queries": "corrupt",
    "plan_retrieval": "first-stage plan",
    "encode_shard": "encode",
    "search": "search",
    "add_isolated": "isolated",
    "first_stage_ranking": "first-stage row",
    "plan_rerank": "rerank plan",
    "score_chunk": "rerank chunks",
    "finish_rerank": "rankings",
    "fuse_systems": "fusion",
    "score_system": "per-query metrics",
    "build_leaderboard": "statistics+tables",
    "export_runs": "export runs/",
    "publish_candidates": "publish candidates",
}


def environment(prefect_home: Path) -> dict:
    """What scripts/quiet-prefect.sh sets, with Prefect's state in the benchmark's folder."""
    return {
        **os.environ,
        "PREFECT_HOME": str(prefect_home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "PYTHONPATH": str(ROOT),
    }


def dataset(kind: str, replicas: int, folder: Path) -> Path:
    """XQuAD-tr (or the demo set) as BEIR, replicated under new ids: copy k's texts end in a word of their own."""
    from benchmarks.bench_pairs import replicate
    from terazi.config.config_files import DEMO_DIR
    from terazi.data.squad import squad_to_beir

    target = folder / f"{kind}-x{replicas}"
    if (target / "corpus.jsonl").is_file():
        return target
    source = DEMO_DIR
    if kind == "xquad":
        if not XQUAD.is_file():
            raise SystemExit(f"{XQUAD} not found: this benchmark reads XQuAD from ../shared")
        squad_to_beir(XQUAD, source := folder / "xquad-tr")
    return replicate(Path(source), target, replicas)


def spawn(script: str, argument: str, payload: dict | str, env: dict) -> dict:
    """`script argument PAYLOAD` (the payload as JSON) in a fresh Python process: the JSON of its last line of
    output, with its wall time (`wall`); its stderr's end when it fails."""
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, script, argument, json.dumps(payload)], capture_output=True, text=True, env=env, check=False
    )
    if out.returncode:
        raise SystemExit(out.stderr[-3000:])
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "wall": time.perf_counter() - t}


class Sampler(threading.Thread):
    """RSS of this process every `every` seconds, with the wall-clock time of each sample."""

    def __init__(self, every: float = 0.05):
        super().__init__(daemon=True)
        self.every, self.samples, self.done = every, [], threading.Event()

    def run(self) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        with open("/proc/self/statm") as f:
            while not self.done.is_set():
                f.seek(0)
                self.samples.append((time.time(), int(f.read().split()[1]) * page))
                time.sleep(self.every)


def task_runs(flow_run_id: str) -> tuple[float, list]:
    """The flow run's start (wall clock) and its task runs."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def read():
        async with get_client() as client:
            flow = await client.read_flow_run(flow_run_id)
            runs, page = [], 200  # the API answers a page at a time: a benchmark-sized run has more task runs
            while len(runs) % page == 0:
                more = await client.read_task_runs(
                    flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])), limit=page, offset=len(runs)
                )
                runs += more
                if not more:
                    break
            return flow.start_time.timestamp(), runs

    for _ in range(30):  # the server records the last task runs' ends a moment after the flow returns
        start, runs = asyncio.run(read())
        if runs and all(r.end_time for r in runs):
            break
        time.sleep(1)
    return start, runs


def stages(runs: list, samples: list, flow_start: float, flow_end: float) -> dict[str, dict]:
    """Per stage: wall time (first start to last end of its task runs) and the peak RSS sampled meanwhile; and
    the flow's own time before its first task and after its last."""
    spans: dict[str, list] = {}
    for r in runs:
        stage = STAGES.get(r.task_key.rsplit("-", 1)[0], r.task_key.rsplit("-", 1)[0])
        if r.start_time and r.end_time:
            spans.setdefault(stage, []).append((r.start_time.timestamp(), r.end_time.timestamp()))
    bounds = {s: (min(b for b, _ in v), max(e for _, e in v)) for s, v in spans.items()}
    first, last = min(b for b, _ in bounds.values()), max(e for _, e in bounds.values())
    bounds = {
        "before the first task": (flow_start, first),
        **dict(sorted(bounds.items(), key=lambda kv: kv[1][0])),
        "after the last task": (last, flow_end),
    }
    out = {}
    for s, (b, e) in bounds.items():
        inside = [rss for t, rss in samples if b - 0.05 <= t <= e + 0.05]
        out[s] = {"seconds": e - b, "peak": max(inside, default=0)}
    return out
