"""What the golden test (tests/test_golden.py) compares and how: every output normalised (timings, time stamps and
absolute paths out, timing columns of tables blanked), then compared with its file under tests/golden/ (frames and
JSON to 1e-12, printed text line by line, TREC files by their sorted records, the models' scores by sums), or written
there with TERAZI_UPDATE_GOLDEN=1; the configs of the tiny runs, which tests/test_recipe.py runs in process too.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("TERAZI_UPDATE_GOLDEN") == "1"
TIMING_KEYS = {
    "items",
    "seconds",
    "started",
    "stopped",
    "flow_run_id",
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_queries",
}
TIMING_COLUMNS = {
    "Pairs/s",
    "Model s/query",
    "Çift/sn",
    "p50 ms/query",
    "p95 ms/query",
    "Timed",
    "Çift/sn (×)",
    "Pairs/s (×)",
}
RESULT_FILES = (
    "leaderboard.csv",
    "scores.csv",
    "conditions.csv",
    "comparisons.csv",
    "datasets.csv",
    "retention.csv",
    "retention_datasets.csv",
    "robustness.csv",
    "ranks.csv",
    "variants.csv",
    "costs.csv",
    "depths.csv",
    "ceiling.csv",
    "protocol.csv",
)
CSV_TIMING = {"items", "seconds", "per_second", "latency_p50_ms", "latency_p95_ms", "speed_ratio", "seconds_per_query"}


# ---------------------------------------------------------------- normalising


class Paths:
    """Absolute paths of this test's run, replaced by placeholders wherever they appear."""

    def __init__(self, tokens: dict[str, str] | None = None, **named: Path):
        self.named = sorted(
            [*((str(Path(p).resolve()), f"<{k}>") for k, p in named.items()), *(tokens or {}).items()],
            key=lambda x: -len(x[0]),
        )

    def __call__(self, text: str) -> str:
        for path, name in self.named:
            text = text.replace(path, name)
        return text


def _json_clean(obj):
    if isinstance(obj, dict):
        return {k: _json_clean(v) for k, v in obj.items() if k not in TIMING_KEYS}
    if isinstance(obj, list):
        return [_json_clean(v) for v in obj]
    return obj


def _table_clean(columns: list[str], rows: list[list[str]]) -> list[list[str]]:
    timed = [i for i, c in enumerate(columns) if c in TIMING_COLUMNS]
    return [["<t>" if i in timed else v for i, v in enumerate(r)] for r in rows]


def _tables_clean(obj):
    """Display tables ({columns, rows, notes}) anywhere in tables.json, their timing cells blanked."""
    if isinstance(obj, dict):
        if "columns" in obj and "rows" in obj:
            obj = {**obj, "rows": _table_clean(obj["columns"], obj["rows"])}
        return {k: _tables_clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_tables_clean(v) for v in obj]
    if isinstance(obj, str):
        return _rates(obj)
    return obj


def _rates(text: str) -> str:
    """Measured speeds in running text (judged-variant sentences): `3.1 → 4.0 pairs/s (×1.3)`."""
    text = re.sub(r"[\d.,]+ → [\d.,]+ (pairs|texts|çift|metin)/s[n]? \(×[\d.e+-]+\)", "<speed>", text)
    return re.sub(r"[\d.,]+ (pairs|texts|çift|metin)/s[n]?", "<rate>", text)


def markdown_clean(text: str) -> str:
    """Markdown tables with their timing columns blanked (the header row says which)."""
    out, header = [], None
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            if header is None:
                header = cells
            elif not set(line) <= set("|-: "):
                cells = _table_clean(header, [cells])[0]
                line = "| " + " | ".join(cells) + " |"
        else:
            header = None
        out.append(_rates(line))
    return "\n".join(out) + "\n"


def html_clean(text: str) -> str:
    """report.html as lines of text: the time stamp and images out, table cells as `a | b`, timing cells blanked."""
    text = re.sub(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "Generated <time>", text)
    text = re.sub(r'src="data:image/png;base64,[^"]+"', 'src="<png>"', text)
    text = re.sub(r"<style>.*?</style>", "", text, flags=re.S)
    lines = []
    for chunk in re.split(r"(<table.*?</table>)", text, flags=re.S):
        if not chunk.startswith("<table"):
            lines += [x for x in re.split(r"(?=<h[1-3]|<p|<li|<img|<ul)", chunk) if x.strip()]
            continue
        rows = [
            [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r, flags=re.S)]
            for r in re.findall(r"<tr[^>]*>(.*?)</tr>", chunk, flags=re.S)
        ]
        lines.append(re.match(r"<table[^>]*>", chunk)[0])
        lines += [" | ".join(r) for r in [rows[0], *_table_clean(rows[0], rows[1:])]] if rows else []
    return "\n".join(_rates(x) for x in lines) + "\n"


NUMBER = re.compile(r"(-?\d+\.\d+(?:e[-+]?\d+)?)")


def same_line(got: str, want: str) -> bool:
    """Lines of printed text equal, their full-precision numbers to 1e-12 (a sum in another order moves the last
    bit)."""
    a, b = NUMBER.split(got), NUMBER.split(want)
    return len(a) == len(b) and all(
        x == y if i % 2 == 0 else math.isclose(float(x), float(y), rel_tol=1e-12, abs_tol=1e-12)
        for i, (x, y) in enumerate(zip(a, b))
    )


def trec_lines(path: Path) -> list[str]:
    """A TREC file's records, sorted: split on whitespace, so any layout of the same records compares equal."""
    return sorted(" ".join(line.split()) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def tree_digest(folder: Path, columns: slice = slice(None)) -> dict[str, str]:
    """relative path → hash of the sorted records (`columns` of each) of every TREC or text file below `folder`."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            lines = [" ".join(x.split()[columns]) for x in trec_lines(p)]
            out[str(p.relative_to(folder))] = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
    return out


# ---------------------------------------------------------------- comparing


def _close(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b))
    return a == b


def same_frame(got: pl.DataFrame, want: pl.DataFrame, where: str) -> None:
    assert got.columns == want.columns, f"{where}: columns {got.columns} != {want.columns}"
    assert got.height == want.height, f"{where}: {got.height} rows, golden {want.height}"
    for c in got.columns:
        for i, (a, b) in enumerate(zip(got[c].to_list(), want[c].to_list())):
            assert _close(a, b), f"{where}: column {c!r}, row {i}: {a!r} != golden {b!r}"


def same_json(got, want, where: str) -> None:
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), f"{where}: keys {list(got)} != {list(want)}"
        for k in want:
            same_json(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got!r:.200} != golden {want!r:.200}"
        for i, (a, b) in enumerate(zip(got, want)):
            same_json(a, b, f"{where}[{i}]")
    else:
        if isinstance(want, float) or isinstance(got, float):
            got, want = float(got), float(want)
        assert _close(got, want), f"{where}: {got!r} != golden {want!r}"


def check(name: str, value) -> None:
    """Compare `value` (a frame, JSON-able data or text) with golden/<name>, or write it there when updating."""
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(value, pl.DataFrame):
            value.write_csv(path)
        elif isinstance(value, str):
            path.write_text(value, encoding="utf-8")
        else:
            path.write_text(json.dumps(value, indent=1, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8")
        return
    assert path.is_file(), f"no golden file {path}: write it with TERAZI_UPDATE_GOLDEN=1"
    if isinstance(value, pl.DataFrame):
        same_frame(value, pl.read_csv(path, infer_schema_length=None), name)
    elif isinstance(value, str):
        want = path.read_text(encoding="utf-8")
        if value != want:
            diff = next(
                (
                    i
                    for i, (a, b) in enumerate(zip(value.splitlines() + [""], want.splitlines() + [""]))
                    if not same_line(a, b)
                ),
                None,
            )
            if diff is None and len(value.splitlines()) == len(want.splitlines()):
                return
            raise AssertionError(
                f"{name}, line {diff + 1}:\n  got    {value.splitlines()[diff : diff + 1]}\n"
                f"  golden {want.splitlines()[diff : diff + 1]}"
            )
    else:
        same_json(json.loads(json.dumps(value)), json.loads(path.read_text(encoding="utf-8")), name)


def same_scores(name: str, got: dict) -> None:
    """`trec_scores` against golden/<name>: the same files and records, each sum within 2e-6 per record (one unit of
    the 6th decimal, either way) and each sum of squares within 4e-6 per record, both times max(1, largest |score|)."""
    if UPDATE:
        check(name, got)
        return
    want = json.loads((GOLDEN / name).read_text(encoding="utf-8"))
    assert list(got) == list(want), f"{name}: files {list(got)} != golden {list(want)}"
    for f, g in got.items():
        w, n, m = want[f], want[f]["records"], max(1.0, want[f]["max_abs"])
        assert g["records"] == n, f"{name}: {f} has {g['records']} records, golden {n}"
        assert abs(g["sum"] - w["sum"]) <= 2e-6 * n * m, f"{name}: {f} sum {g['sum']} != golden {w['sum']}"
        assert abs(g["sum_sq"] - w["sum_sq"]) <= 4e-6 * n * m * m, f"{name}: {f} sum of squares {g['sum_sq']} != {w}"


def trec_scores(manifest: dict, run: Path) -> dict:
    """The frozen first stage's and runs/' scores (the systems' own), per file: records, sum, sum of squares, largest
    |score|. Models' scores move in their last digits with the machine's float kernels (AVX2 against AVX-512, a torch
    build): compared to that (`same_scores`), not as bytes; ids and ranks are pinned exactly (files.json)."""
    out, files = (
        {},
        [
            (f"{cs['dataset']}/{p.name}", p)
            for cs in manifest["candidates"]
            for p in sorted((Path(cs["path"]).parent / "runs").glob("*.trec"))
        ],
    )
    for name, p in files + [(str(p.relative_to(run)), p) for p in sorted((run / "runs").rglob("*.trec"))]:
        scores = [float(line.split()[4]) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
        out[name] = {
            "records": len(scores),
            "sum": math.fsum(scores),
            "sum_sq": math.fsum(x * x for x in scores),
            "max_abs": max(map(abs, scores), default=0.0),
        }
    return out


def check_results(prefix: str, run: Path, clean: Paths) -> None:
    """Every file of a results folder that a user or a tool reads. (The benchmark's `systems` part hashes the
    rerankers' settings, model paths included: a temporary folder's name, so it is left out.)"""
    for name in RESULT_FILES:
        if (run / name).is_file():
            frame = pl.read_csv(run / name, infer_schema_length=None)
            check(f"{prefix}/{name}", frame.drop([c for c in frame.columns if c in CSV_TIMING]))
    pq = pl.read_parquet(run / "per_query.parquet")
    check(f"{prefix}/per_query.csv", pq.sort("dataset", "system", "condition", "query_id", "measure"))
    check(f"{prefix}/tables.json", _tables_clean(json.loads(clean((run / "tables.json").read_text(encoding="utf-8")))))
    check(f"{prefix}/leaderboard.md", markdown_clean(clean((run / "leaderboard.md").read_text(encoding="utf-8"))))
    check(f"{prefix}/report.txt", html_clean(clean((run / "report.html").read_text(encoding="utf-8"))))
    if (run / "protocol.md").is_file():
        check(f"{prefix}/protocol.md", markdown_clean(clean((run / "protocol.md").read_text(encoding="utf-8"))))
    if not (run / "manifest.json").is_file():  # another first stage's folder (first-stages/<name>/): the run's manifest
        return
    raw = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    if raw.get("candidates"):
        same_scores(f"{prefix}/trec-scores.json", trec_scores(raw, run))
    manifest = _json_clean(json.loads(clean((run / "manifest.json").read_text(encoding="utf-8"))))
    manifest["benchmark"]["parts"].pop("systems")
    for cs in manifest.get("candidates", []):  # the frozen files' names; their bytes hold scores (above)
        cs["files"] = dict.fromkeys(cs["files"], "<digest>")
    check(f"{prefix}/manifest.json", manifest)
    files = {
        part: tree_digest(run / part, slice(0, 4) if part == "runs" else slice(None))  # runs' scores: above
        for part in ("runs", "qrels", "changed")
        if (run / part).is_dir()
    }
    if (run / "candidates").is_dir():  # the frozen first stage: ids and ranks (their scores: trec-scores.json)
        files["candidates"] = tree_digest(run / "candidates", slice(0, 4))
    files["datasets.yaml"] = (run / "datasets.yaml").read_text(encoding="utf-8")
    check(f"{prefix}/files.json", files)


def cli(*args: str, clean: Paths, env: dict) -> str:
    """`terazi ARGS` as a user runs it; its output (stdout, then stderr) with paths replaced."""
    res = subprocess.run(
        [sys.executable, "-m", "terazi.cli", *args], capture_output=True, text=True, env=env, timeout=300
    )
    return clean(f"exit {res.returncode}\n{res.stdout}" + (f"--- stderr\n{res.stderr}" if res.stderr.strip() else ""))


# ---------------------------------------------------------------- the runs


def tiny_run(tiny: Path, ce: str, minilm: str, out: Path, cache: Path) -> dict:
    """The tiny benchmark: a cross-encoder, a bi-encoder, judged variants, Turkish labels, Holm, a 90% level."""
    return {
        "benchmark": "golden-tiny",
        "datasets": [
            {"path": str(tiny), "name": "tiny"},
            {"path": str(tiny), "name": "tiny-copy", "in_ranking": False, "reason": "the same queries again"},
        ],
        "rerankers": [
            {"name": "bm25", "kind": "bm25"},
            {"name": "ce", "kind": "cross-encoder", "model": ce, "max_length": 64},
            {"name": "ce-32", "kind": "cross-encoder", "model": ce, "max_length": 32},
            {"name": "bi", "kind": "bi-encoder", "model": minilm, "max_length": 64},
            {"name": "fused", "kind": "rrf", "fuse": ["first-stage", "ce", "bm25"]},
        ],
        "conditions": ["upper", "ascii_full", "mobile", "typo", "upper+typo"],
        "corruption": {"samples": 2},
        "depth": 8,
        "rerank_depth": 5,
        "metrics": ["nDCG@10", "RR@10", "R@8", "AP", "nDCG(dcg='exp-log2')@5"],
        "variants": [{"base": "ce", "variant": "ce-32", "label": "kısa sürüm"}],
        "subset": 3,
        "featured": "ce",
        "labels": "tr",
        "confidence": 0.9,
        "holm": True,
        "bootstrap_resamples": 500,
        "seed": 7,
        "out_dir": str(out),
        "cache_dir": str(cache),
        "run_name": "tiny",
        "offline": True,
    }


def protocol_run(tiny: Path, ce: str, out: Path, cache: Path) -> dict:
    """The protocol's config: two first stages, each reranked at depths 3, 5 and 8 from one scoring."""
    return {
        "benchmark": "golden-protocol",
        "datasets": [{"path": str(tiny), "name": "tiny"}],
        "encoder": {"model": "bundled:all-MiniLM-L6-v2"},
        "first_stages": [{"name": "dense", "kind": "dense"}, {"name": "bm25", "kind": "bm25"}],
        "rerankers": [
            {"name": "bm25", "kind": "bm25"},
            {"name": "ce", "kind": "cross-encoder", "model": ce, "max_length": 64},
        ],
        "conditions": ["clean", "upper", "ascii_full"],
        "robustness": "end-to-end",
        "corruption": {"samples": 1},
        "depth": 8,
        "rerank_depth": 5,
        "rerank_depths": [3, 5, 8],
        "bootstrap_resamples": 200,
        "seed": 7,
        "out_dir": str(out),
        "cache_dir": str(cache),
        "run_name": "protocol",
        "offline": True,
    }


def golden_paths(root: Path, ce: str, minilm: str) -> Paths:
    """The placeholders of the runs under `root` (results/, cache/, tiny/, models/); in braces (html_clean drops
    <tags>), the tiny cross-encoder's folder hash (transformers writes its version into config.json) and the frozen
    sets' lookup keys (they hold the code that made them, terazi.store.codehash): this install's, this commit's."""
    from terazi.config.config_files import DEMO_DIR
    from terazi.models.refs import resolve

    tiny_ce_hash = resolve(ce).identity.rsplit("#", 1)[1]
    keys = {p.name: "{lookup-key}" for p in (root / "cache" / "candidates").glob("[!.]*")}
    folders = {"out": root / "results", **{name: root / name for name in ("cache", "tiny", "models")}}
    return Paths(
        {tiny_ce_hash: "{tiny-ce-hash}", **keys}, **folders, demo=DEMO_DIR, minilm=minilm, root=root, golden=GOLDEN
    )
