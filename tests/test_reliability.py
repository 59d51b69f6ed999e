"""The catalogue of bad inputs and faults (docs/reliability.md lists the same cases).

Each case prepares a dataset, config or fault and runs `terazi run` the way a user would. A failure
must be one `error:` line that names the file (and line) or field and what to do, exit 2, no
traceback; an accepted oddity must run to the end. Either way no partial result may look complete.
"""

from __future__ import annotations

import codecs
import errno
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner

from terazi.cli import app
from tests.conftest import make_tiny

DOCS = Path(__file__).resolve().parents[1] / "docs" / "reliability.md"


@dataclass
class Case:
    name: str
    prepare: Callable[[Path, Path], list[str]]  # (tmp, dataset) -> extra CLI args (after `run`)
    message: str = ""  # regex the error line must match; "" = must succeed
    code: int = 2
    needs_flow: bool = False  # runs Prefect (session server)
    env: dict[str, str] = field(default_factory=dict)
    out: bool = True  # pass --out (the config's own run_name is tested otherwise)


def edit(rel: str, fn: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def apply(ds: Path) -> None:
        p = ds / rel
        p.write_bytes(fn(p.read_bytes()))

    return apply


def with_data(*edits: Callable[[Path], None], args: tuple[str, ...] = ()) -> Callable[[Path, Path], list[str]]:
    def prepare(tmp: Path, ds: Path) -> list[str]:
        for e in edits:
            e(ds)
        return ["--dataset", str(ds), *args]

    return prepare


def with_config(text: str, suffix: str = ".yaml") -> Callable[[Path, Path], list[str]]:
    def prepare(tmp: Path, ds: Path) -> list[str]:
        cfg = tmp / f"eval{suffix}"
        cfg.write_text(text.replace("DATASET", str(ds)))
        return ["--config", str(cfg)]

    return prepare


def replace_line(n: int, new: bytes) -> Callable[[bytes], bytes]:
    def fn(data: bytes) -> bytes:
        lines = data.split(b"\n")
        lines[n - 1] = new
        return b"\n".join(lines)

    return fn


def append(extra: bytes) -> Callable[[bytes], bytes]:
    return lambda data: data + extra


def out_is_a_file(tmp: Path, ds: Path) -> list[str]:
    (tmp / "taken").write_text("a file")
    return ["--dataset", str(ds), "--out", str(tmp / "taken" / "run")]


def cache_under_a_file(tmp: Path, ds: Path) -> list[str]:
    (tmp / "blocker").write_text("a file")
    return ["--dataset", str(ds), "--cache", str(tmp / "blocker" / "cache")]


FLOW_ARGS = ("--condition", "upper", "--depth", "10", "--rerank-depth", "5")

CASES = [
    # dataset files
    Case(
        "corpus not UTF-8",
        with_data(edit("corpus.jsonl", replace_line(3, b'{"_id": "d3", "text": "Bir saat \xff"}'))),
        r"corpus\.jsonl, line 3: not valid UTF-8 \(byte 0xff at column 33\)",
    ),
    Case(
        "queries not UTF-8 (Latin-5 bytes)",
        with_data(edit("queries.jsonl", replace_line(2, '{"_id": "q2", "text": "dağ"}'.encode("iso-8859-9")))),
        r"queries\.jsonl, line 2: not valid UTF-8 \(byte 0xf0 at column 26\)",
    ),
    Case(
        "qrels not UTF-8",
        with_data(edit("qrels/test.tsv", append(b"q1\td\xe71\t1\n"))),
        r"test\.tsv, line 13: not valid UTF-8 \(byte 0xe7 at column 5\)",
    ),
    Case(
        "corpus line not JSON",
        with_data(edit("corpus.jsonl", replace_line(2, b'{"_id": "d2", "text": '))),
        r"corpus\.jsonl, line 2: not valid JSON",
    ),
    Case(
        "corpus line not an object",
        with_data(edit("corpus.jsonl", replace_line(4, b'["d4", "text"]'))),
        r"corpus\.jsonl, line 4: expected a JSON object",
    ),
    Case(
        "corpus duplicate id",
        with_data(edit("corpus.jsonl", append(b'{"_id": "d1", "text": "again"}\n'))),
        r"corpus\.jsonl, line 13: duplicate id 'd1' \(first on line 1\)",
    ),
    Case(
        "corpus record without _id",
        with_data(edit("corpus.jsonl", replace_line(5, b'{"text": "no id"}'))),
        r"corpus\.jsonl, line 5: field '_id': Field required",
    ),
    Case(
        "blank query",
        with_data(edit("queries.jsonl", replace_line(1, b'{"_id": "q1", "text": "   "}'))),
        r"queries\.jsonl, line 1: field 'text': query text is blank",
    ),
    Case(
        "qrels unknown document",
        with_data(edit("qrels/test.tsv", append(b"q1\tnope\t1\n"))),
        r"test\.tsv, line 13: unknown document id 'nope' \(not in the corpus\)",
    ),
    Case(
        "qrels unknown query",
        with_data(edit("qrels/test.tsv", append(b"q9\td1\t1\n"))),
        r"test\.tsv, line 13: unknown query id 'q9' \(not in queries\)",
    ),
    Case(
        "qrels negative grade",
        with_data(edit("qrels/test.tsv", append(b"q1\td4\t-1\n"))),
        r"test\.tsv, line 13: negative grade -1",
    ),
    Case(
        "qrels grade not an integer",
        with_data(edit("qrels/test.tsv", append(b"q1\td4\t0.5\n"))),
        r"test\.tsv, line 13: grade '0\.5' is not an integer",
    ),
    Case(
        "qrels duplicate judgment",
        with_data(edit("qrels/test.tsv", append(b"q1\td1\t1\n"))),
        r"test\.tsv, line 13: duplicate judgment for query 'q1', document 'd1'",
    ),
    Case(
        "qrels wrong column count",
        with_data(edit("qrels/test.tsv", append(b"q1\td4\n"))),
        r"test\.tsv, line 13: expected 3 whitespace-separated columns, got 2",
    ),
    Case(
        "corpus file missing",
        with_data(lambda ds: (ds / "corpus.jsonl").unlink()),
        r"corpus\.jsonl: missing corpus file",
    ),
    Case(
        "dataset folder missing",
        lambda tmp, ds: ["--dataset", str(tmp / "nowhere")],
        r"nowhere: dataset folder not found",
    ),
    # accepted oddities: the run completes
    Case(
        "byte-order mark and CRLF line ends",
        with_data(
            edit("corpus.jsonl", lambda b: codecs.BOM_UTF8 + b.replace(b"\n", b"\r\n")),
            edit("qrels/test.tsv", lambda b: b.replace(b"\n", b"\r\n")),
            args=FLOW_ARGS,
        ),
        code=0,
        needs_flow=True,
    ),
    Case(
        "document id with a space",
        with_data(
            edit("corpus.jsonl", lambda b: b.replace(b'"d10"', b'"d 10"')),
            edit("qrels/test.tsv", lambda b: b.replace(b"\td10\t", b"\td 10\t")),
            args=FLOW_ARGS,
        ),
        code=0,
        needs_flow=True,
    ),
    # configuration
    Case(
        "YAML syntax error",
        with_config("datasets:\n  - {path: DATASET\ndepth: 10\n"),
        r"eval\.yaml, line \d+: not valid YAML",
    ),
    Case(
        "YAML Python tag",
        with_config("datasets: !!python/object/apply:os.system ['echo hi']\n"),
        r"eval\.yaml, line 1: not valid YAML: .*tags such as !!python/\.\.\. are refused",
    ),
    Case(
        "JSON syntax error",
        with_config('{"datasets": [{"path": "DATASET"}],\n "depth": }', ".json"),
        r"eval\.json, line 2: not valid JSON \(Expecting value at column 11\)",
    ),
    Case(
        "TOML syntax error",
        with_config('depth = 10\n[[datasets]]\npath = "DATASET\n', ".toml"),
        r"eval\.toml: not valid TOML",
    ),
    Case(
        "config not UTF-8",
        lambda tmp, ds: (
            tmp.joinpath("e.yaml").write_bytes(b"seed: 1\ndepth: 1\xfe0\n"),
            ["--config", str(tmp / "e.yaml")],
        )[1],
        r"e\.yaml, line 2: not valid UTF-8 \(byte 0xfe at column 9\)",
    ),
    Case(
        "unknown config field",
        with_config("datasets: [{path: DATASET}]\ndepht: 10\n"),
        r"invalid configuration:\s+field 'depht': Extra inputs are not permitted",
    ),
    Case(
        "dataset name climbing out",
        with_config("datasets: [{path: DATASET, name: ../../x}]\n"),
        r"field 'datasets\.0\.name': '\.\./\.\./x' is not a safe name",
    ),
    Case(
        "absolute reranker name",
        with_config("datasets: [{path: DATASET}]\nrerankers: [{name: /abs/sys, kind: bm25}]\n"),
        r"field 'rerankers\.0\.bm25\.name': '/abs/sys' is not a safe name",
    ),
    Case("run name '..'", with_data(args=("--out", "results/..")), r"field 'run_name': '\.\.' is not a safe name"),
    Case(
        "run name with a slash",
        with_config("datasets: [{path: DATASET}]\nrun_name: a/b\n"),
        r"field 'run_name': 'a/b' is not a safe name",
        out=False,
    ),
    Case("unknown condition", with_data(args=("--condition", "shouting")), r"unknown condition\(s\) \['shouting'\]"),
    Case(
        "rerank depth above depth",
        with_data(args=("--depth", "10", "--rerank-depth", "20")),
        r"rerank_depth \(20\) exceeds depth \(10\)",
    ),
    Case(
        "zero samples",
        with_data(args=("--samples", "0")),
        r"--samples: must be ≥ 1, got 0",
    ),
    # models
    Case(
        "hub model while offline",
        with_data(args=("--reranker", "cross-encoder:BAAI/bge-reranker-v2-m3", "--offline")),
        r"rerankers\.bge-reranker-v2-m3: model 'BAAI/bge-reranker-v2-m3' is not a local folder and offline mode is on",
    ),
    Case(
        "missing local model folder",
        with_data(args=("--encoder", "/nonexistent/model")),
        r"encoder: model folder '/nonexistent/model' not found",
    ),
    # output, cache, environment
    Case("results path inside a file", out_is_a_file, r"results folder .*taken is a file"),
    Case("cache path under a file", cache_under_a_file, r"cache folder .*blocker/cache is not writable"),
    Case(
        "Prefect API unreachable",
        with_data(),
        r"cannot reach the Prefect API at http://127\.0\.0\.1:9/api",
        env={"PREFECT_API_URL": "http://127.0.0.1:9/api"},
    ),
]


def run_cli(tmp_path: Path, args: list[str], env: dict[str, str] | None = None, out: bool = True):
    base = [
        "run",
        *(["--out", str(tmp_path / "results" / "run")] if out else []),
        "--cache",
        str(tmp_path / "cache"),
        "--offline",
    ]
    return CliRunner().invoke(app, [*base, *args], env=env)


def assert_nothing_looks_complete(tmp_path: Path) -> None:
    """No results folder may hold a manifest (the mark of a finished run) after a failure."""
    results = tmp_path / "results"
    left = list(results.rglob("manifest.json")) if results.exists() else []
    assert not left, f"a failed run left a manifest: {left}"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_catalogue(case: Case, tmp_path: Path, request):
    if case.needs_flow:
        request.getfixturevalue("prefect_server")
    ds = make_tiny(tmp_path / "tiny")
    result = run_cli(tmp_path, case.prepare(tmp_path, ds), case.env, case.out)
    out = result.output
    assert "Traceback" not in out, out
    if case.code == 0:
        assert result.exit_code == 0, out
        assert (tmp_path / "results" / "run" / "manifest.json").is_file()
        return
    assert result.exit_code == case.code, out
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, out
    assert re.search(case.message, out), out
    assert_nothing_looks_complete(tmp_path)


def test_bad_qrels_line_is_loaded_once(tmp_path, monkeypatch):
    import terazi.data.beir as beir

    calls = []
    real = beir.read_qrels
    monkeypatch.setattr(beir, "read_qrels", lambda *a, **k: calls.append(1) or real(*a, **k))
    ds = make_tiny(tmp_path / "tiny")
    (ds / "qrels" / "test.tsv").write_bytes((ds / "qrels" / "test.tsv").read_bytes() + b"q1\tnope\t1\n")
    result = run_cli(tmp_path, ["--dataset", str(ds)])
    assert result.exit_code == 2 and len(calls) == 1
    assert not (tmp_path / "results" / "run").exists()  # stopped before any run folder or Prefect


def test_hub_id_offline_fails_before_any_encoding(tmp_path, monkeypatch):
    import terazi.retrieval.dense as dense

    monkeypatch.setattr(dense, "encode", lambda *a, **k: pytest.fail("encoded before the model check"))
    ds = make_tiny(tmp_path / "tiny")
    result = run_cli(tmp_path, ["--dataset", str(ds), "--encoder", "intfloat/multilingual-e5-small", "--offline"])
    assert (
        result.exit_code == 2
        and "encoder: model 'intfloat/multilingual-e5-small' is not a local folder" in result.output
    )
    assert not (tmp_path / "cache" / "embeddings").exists()


def test_disk_full_is_named_not_retried(prefect_server, tmp_path, monkeypatch):
    import polars as pl

    calls = []

    def full(self, path, *a, **k):
        calls.append(str(path))
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(pl.DataFrame, "write_parquet", full)
    ds = make_tiny(tmp_path / "tiny")
    result = run_cli(tmp_path, ["--dataset", str(ds), *FLOW_ARGS])
    assert result.exit_code == 2, result.output
    assert re.search(
        r"error: disk full under the (results|cache) folder .*, writing .*\.parquet\): free space on "
        r"that disk or point --(out|cache) at another one",
        result.output,
    ), result.output
    assert "Traceback" not in result.output
    assert len({c for c in calls}) == len(calls)  # no write was retried
    marker = json.loads((tmp_path / "results" / "run" / ".terazi-incomplete").read_text())
    assert marker["status"] == "stopped" and marker["reason"].startswith("disk full under the"), marker


def test_docs_list_the_catalogue():
    text = DOCS.read_text()
    missing = [c.name for c in CASES if c.name not in text]
    assert not missing, f"docs/reliability.md does not list: {missing}"
