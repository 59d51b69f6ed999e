"""`terazi card` as a careless or hostile user meets it (issue 37): the card writing onto its results folder or the
run's dataset, a results table holding NaN or text (also for `leaderboard` and `compare`, and every command's
`--verbose`), the card's Hugging Face metadata as the Hub reads its two files, a full disk under the card file.
docs/reliability.md lists every case with the test that covers it.
"""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from terazi.base.errors import DatasetError
from terazi.cli import app
from terazi.present.card import build_card
from tests.card_cases import kalbur_run
from tests.test_hostile_files import refused, snapshot


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return kalbur_run(
        tmp_path_factory.mktemp("card-command"),
        conditions=["clean", "mobile"],
        systems=["kalbur", "seroe", "first-stage"],
        n=20,
    )


# ---------------------------------------------------------------- 1, 2: the card never writes onto an input


@pytest.mark.parametrize(
    "target, fmt", [("leaderboard.csv", "markdown"), ("leaderboard", "all"), ("per_query.parquet", "json")]
)
def test_1_the_card_never_overwrites_its_results_folder(run, target, fmt):
    before = snapshot(run.parent)
    refused(
        ["card", str(run), "--system", "kalbur", "--format", fmt, "--out", str(run / target)],
        rf"error: card file {run}/{target}\S* lies inside the results folder {run}: outputs never overlap inputs",
    )
    assert snapshot(run.parent) == before


def test_2_the_card_never_overwrites_the_runs_dataset(run):
    corpus = run.parent / "data" / "quora-tr" / "corpus.jsonl"
    before = corpus.read_bytes()
    refused(
        ["card", str(run), "-s", "kalbur", "--out", str(corpus)],
        rf"card file {corpus} lies inside the dataset folder {corpus.parent}: outputs never overlap inputs",
    )
    assert corpus.read_bytes() == before


# ---------------------------------------------------------------- 3: values read back are checked like input


@pytest.mark.parametrize(
    "cell, problem",
    [
        ("nan", "'nan' is not a finite number"),
        ("inf", "'inf' is not a finite number"),
        ("zero", "'zero' is not a number"),
    ],
)
def test_3_a_bad_number_in_a_results_table_is_one_line(run, tmp_path, cell, problem):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    board = copy / "leaderboard.csv"
    lines = board.read_text().splitlines()
    header, row = lines[0].split(","), lines[2].split(",")
    row[header.index("mobile")] = cell
    board.write_text("\n".join([*lines[:2], ",".join(row), *lines[3:]]) + "\n")
    refused(["card", str(copy), "-s", "kalbur"], rf"error: {board}, line 3: column 'mobile': {problem}")
    refused(["leaderboard", str(copy)], rf"error: {board}, line 3: column 'mobile': {problem}")


def test_3_every_command_has_verbose_and_the_hint_names_it(run, tmp_path, monkeypatch):
    def bug(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("terazi.present.card.build_card", bug)
    monkeypatch.setenv("TERAZI_VERBOSE", "0")  # --verbose sets it for the process: undone after this test
    res = CliRunner().invoke(app, ["card", str(run), "-s", "kalbur"])
    assert res.exit_code == 1 and "RuntimeError: a bug  (run with --verbose for the traceback)" in res.output
    assert "Traceback" not in res.output
    res = CliRunner().invoke(app, ["card", str(run), "-s", "kalbur", "--verbose"])
    assert res.exit_code == 1 and "Traceback" in res.output


def test_3_a_per_query_nan_is_named(run, tmp_path):
    import shutil

    import polars as pl

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    pq = pl.read_parquet(copy / "per_query.parquet")
    pq.with_columns(
        value=pl.when(pl.int_range(pl.len()) == 3).then(float("nan")).otherwise(pl.col("value"))
    ).write_parquet(copy / "per_query.parquet")
    with pytest.raises(DatasetError, match=r"per_query.parquet: row 4, column 'value': nan is not a finite number"):
        build_card(copy, "kalbur")


# ---------------------------------------------------------------- 8: the card's metadata as the Hub reads it


def test_8_the_hub_reads_the_front_matter_and_the_eval_results_files_apart(run, tmp_path):
    from huggingface_hub import ModelCard, ModelCardData, metadata_load, parse_eval_result_entries

    out = tmp_path / "repo" / "kalbur"
    res = CliRunner().invoke(
        app, ["card", str(run), "-s", "kalbur", "--format", "all", "--out", str(out), "--model-name", "kalbur-reranker"]
    )
    assert res.exit_code == 0, res.output
    card = build_card(run, "kalbur", model_name="kalbur-reranker")
    want = {(c.dataset, c.condition): round(c.value, 3) for c in card.cells}
    ranked = {k: v for k, v in want.items() if k[0] != "msmarco-tr"}  # out of the ranking: left out of both
    front = (tmp_path / "repo" / "kalbur.yaml").read_text(encoding="utf-8")
    # the README a user makes of it: the file between `---` fences, the card's markdown below
    readme = tmp_path / "repo" / "README.md"
    readme.write_text(f"---\n{front}---\n\n{(tmp_path / 'repo' / 'kalbur.md').read_text(encoding='utf-8')}")
    assert set(metadata_load(readme)) == {"model-index"}
    results = ModelCard.load(readme).data.eval_results
    assert ModelCardData(**yaml.safe_load(front)).model_name == "kalbur-reranker"
    assert {(r.dataset_type, r.metric_name): r.metric_value for r in results} == {
        (d, f"nDCG@10 ({'Temiz' if c == 'clean' else 'Mobil'})"): v for (d, c), v in ranked.items()
    }
    entries = parse_eval_result_entries(
        yaml.safe_load((tmp_path / "repo" / ".eval_results" / "kalbur.yaml").read_text(encoding="utf-8"))
    )
    assert {(e.dataset_id, e.task_id): e.value for e in entries} == ranked
    assert all(e.source_url is None and "terazi (pusula)" in e.notes for e in entries)
    # --format yaml alone is the front matter (one document), --format eval-results alone the entries
    single = CliRunner().invoke(app, ["card", str(run), "-s", "kalbur", "--format", "yaml"]).output
    assert ModelCardData(**yaml.safe_load(single)).eval_results == ModelCardData(**yaml.safe_load(front)).eval_results
    listed = CliRunner().invoke(app, ["card", str(run), "-s", "kalbur", "--format", "eval-results"]).output
    assert len(parse_eval_result_entries(yaml.safe_load(listed))) == len(entries)
    refused(["card", str(run), "-s", "kalbur", "--format", "all"], r"--format all writes each part to its own file")


# ---------------------------------------------------------------- 11, 12: a full disk under any command's output


def test_12_a_full_disk_under_a_commands_declared_output_is_named(run, tmp_path, monkeypatch):
    import errno
    from pathlib import Path

    def full(self, *a, **k):  # a buffered write's ENOSPC: no file named
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    monkeypatch.setattr("terazi.base.paths._free_bytes", lambda folder: 0)
    out = tmp_path / "cards" / "kalbur.md"
    refused(
        ["card", str(run), "-s", "kalbur", "--out", str(out)],
        rf"error: disk full under the folder of the card file {out.parent} \(0 KiB free\): free space on that "
        r"disk or point --out at another one",
    )
