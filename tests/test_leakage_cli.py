"""`terazi leakage`, the `terazi-leakage` flow and `terazi.leakage()`: the output folder and its artifacts, bad inputs
one line each (before Prefect where the first record shows them), outputs never inside an input."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from terazi.cli import app
from tests.leakage_inputs import PLANTED, bench_dataset, jsonl


@pytest.fixture
def bench(tmp_path):
    bench_dataset(tmp_path)
    return tmp_path / "bench"


def _train(tmp_path):
    return jsonl(
        tmp_path / "train.jsonl",
        [
            {"text": "başka bir şey", "query": "elma nerede"},
            {"text": f"önce {PLANTED} sonra", "query": "hiç ilgisiz bir soru"},
        ],
    )


def _one_error_line(res) -> str:
    lines = [x for x in res.output.splitlines() if x.strip() and not x.startswith("starting Prefect")]
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and len(lines) == 1 and lines[0].startswith("error: "), res.output
    return lines[0]


def test_the_command_writes_the_folder_and_publishes_its_artifacts(prefect_server, tmp_path, bench):
    from tests.conftest import artifacts_of

    train, out = _train(tmp_path), tmp_path / "out"
    res = CliRunner().invoke(
        app,
        [
            "leakage",
            "--train",
            str(train),
            "--dataset",
            str(bench),
            "--field",
            "text",
            "--field",
            "query",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    # the planted passage d1 is hit by training record 2; q2 "elma nerede" is repeated exactly by record 1
    assert (out / "bench" / "passages.txt").read_text() == "d1\n"
    assert (out / "bench" / "queries.txt").read_text() == "q2\n"
    assert (out / "bench" / "relevant_hit.txt").read_text() == "q1\n"
    assert (out / "train_hits.txt").read_text() == f"{train}:2\n"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["datasets"][0]["exact_repeats"] == 1 and summary["options"]["ngram"] == 8
    assert "bench" in res.output and "1 (50.0%)" in res.output  # the shares table on the terminal
    found = artifacts_of(keys=["leakage-summary", "leakage-report"])
    rows = found["leakage-summary"].data
    rows = json.loads(rows) if isinstance(rows, str) else rows
    assert [r["Dataset"] for r in rows] == ["bench"] and rows[0]["Passages hit"] == "1 (50.0%)"
    assert str(out / "report.html") in found["leakage-report"].data


def test_a_config_file_sets_sources_with_their_fields_and_options(prefect_server, tmp_path, bench):
    train = _train(tmp_path)
    config = tmp_path / "leakage.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "datasets": [{"path": str(bench), "name": "mine"}],
                "train": [{"path": str(train), "fields": ["text"], "name": "t"}],
                "options": {"ngram": 12, "near_threshold": None},
                "out": str(tmp_path / "o"),
            }
        )
    )
    res = CliRunner().invoke(app, ["leakage", "--config", str(config)])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    # 12 words: the planted 10-word sentence no longer counts; only `text` is read, so no query repeats
    assert summary["options"]["ngram"] == 12 and summary["options"]["near_threshold"] is None
    assert summary["datasets"][0]["name"] == "mine" and summary["datasets"][0]["passage_hits"] == 0
    assert summary["sources"][0]["name"] == "t" and summary["sources"][0]["query_texts"] == 0


def test_bad_inputs_are_one_line_each(prefect_server, tmp_path, bench, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    train = _train(tmp_path)
    jsonl(tmp_path / "nofield.jsonl", [{"body": "x"}])
    jsonl(tmp_path / "later.jsonl", [{"text": "a"}, {"body": "b"}])
    (tmp_path / "bad.jsonl").write_bytes(b'{"text": "a"}\n{"text": "\xfe"}\n')
    args = ["leakage", "--dataset", str(bench)]
    cases = {
        "missing.jsonl: training source not found": [*args, "--train", str(tmp_path / "missing.jsonl")],
        "nofield.jsonl, line 1: no field 'text' (fields: body)": [*args, "--train", str(tmp_path / "nofield.jsonl")],
        "later.jsonl, line 2: no field 'text' (fields: body)": [*args, "--train", str(tmp_path / "later.jsonl")],
        "bad.jsonl, line 2: not valid UTF-8 (byte 0xfe": [*args, "--train", str(tmp_path / "bad.jsonl")],
        "nosuch: dataset folder not found": ["leakage", "--dataset", str(tmp_path / "nosuch"), "--train", str(train)],
        "hf:nosuch/set": [
            "leakage",
            "--dataset",
            "hf:nosuch/set",
            "--train",
            str(train),
            "--cache",
            str(tmp_path / "cache"),
        ],
        "lies inside the dataset folder": [*args, "--train", str(train), "--out", str(bench / "leak")],
    }
    for expected, argv in cases.items():
        line = _one_error_line(
            CliRunner().invoke(app, [*argv, "--out", str(tmp_path / "o")] if "--out" not in argv else argv)
        )
        assert expected in line.replace("\n", ""), (expected, line)
    # the output folder is the dataset's, or the dataset's subfolder would land in the dataset (out = its parent)
    for out in (bench, tmp_path):
        line = _one_error_line(CliRunner().invoke(app, [*args, "--train", str(train), "--out", str(out)]))
        assert f"the dataset folder {bench}: outputs never overlap inputs" in line
    assert sorted(p.name for p in bench.iterdir()) == ["corpus.jsonl", "qrels", "queries.jsonl"]
    line = _one_error_line(CliRunner().invoke(app, [*args, "--train", str(train), "--near-threshold", "x"]))
    assert "--near-threshold: 'x' is not a number" in line


def test_an_output_folder_inside_a_training_folder_is_refused(tmp_path, bench):
    from terazi.base.errors import OutputPathError
    from terazi.leakage.checked import check_inputs
    from terazi.schemas.leakage import LeakageConfig

    folder = tmp_path / "train"
    folder.mkdir()
    _train(folder)
    config = LeakageConfig(datasets=[{"path": str(bench)}], train=[str(folder)], out=str(folder / "leak"))
    with pytest.raises(
        OutputPathError, match=r"leakage output folder \S+/train/leak lies inside the training source \S+/train:"
    ):
        check_inputs(config)
    assert check_inputs(config.model_copy(update={"out": str(tmp_path / "leak")}))[0].name == "bench"


def test_the_python_api_runs_the_flow_and_returns_the_counts(prefect_server, tmp_path, bench):
    import terazi
    from terazi.leakage import check  # noqa: F401  (the check loaded: terazi.leakage is still the function)

    train = _train(tmp_path)
    for k in range(2):  # twice: the second call finds terazi.leakage still the function
        manifest, counts = terazi.leakage(
            [str(bench)], [str(train)], out=tmp_path / f"o{k}", fields=("text", "query"), ngram=8
        )
        assert manifest.out == str(tmp_path / f"o{k}")
        assert counts.select("name", "contaminated_queries", "passage_hits", "relevant_hit_queries").rows() == [
            ("bench", 1, 1, 1)
        ]
    assert callable(terazi.card) and callable(terazi.leakage)


def test_the_package_imports_as_a_package_beside_the_function():
    import inspect
    import sys

    import terazi
    import terazi.leakage.overlap as overlap  # reached through `terazi.leakage`, which is also the API's function
    from terazi import api
    from terazi.leakage import check

    assert terazi.leakage.check is check is overlap.check and terazi.leakage.overlap is sys.modules[overlap.__name__]
    assert callable(terazi.leakage) and inspect.signature(terazi.leakage) == inspect.signature(api.leakage)
