"""The third round of hostile inputs (issue 37), as users meet them: `terazi card` writing onto its results folder or
the run's dataset, a results table holding NaN or text, cross-field config errors, the card's Hugging Face metadata
as the Hub reads its two files. docs/reliability.md lists every case with the test that covers it.
"""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from terazi.cli import app
from terazi.errors import DatasetError, describe
from terazi.present.card import build_card
from tests.test_card import kalbur_run
from tests.test_hostile_files import refused, snapshot


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return kalbur_run(tmp_path_factory.mktemp("round3"), conditions=["clean", "mobile"],
                      systems=["kalbur", "seroe", "first-stage"], n=20)


# ---------------------------------------------------------------- 1, 2: the card never writes onto an input

@pytest.mark.parametrize("target, fmt", [("leaderboard.csv", "markdown"), ("leaderboard", "all"),
                                         ("per_query.parquet", "json")])
def test_1_the_card_never_overwrites_its_results_folder(run, target, fmt):
    before = snapshot(run.parent)
    refused(["card", str(run), "--system", "kalbur", "--format", fmt, "--out", str(run / target)],
            rf"error: card file {run}/{target}\S* lies inside the results folder {run}: outputs never overlap inputs")
    assert snapshot(run.parent) == before


def test_2_the_card_never_overwrites_the_runs_dataset(run):
    corpus = run.parent / "data" / "quora-tr" / "corpus.jsonl"
    before = corpus.read_bytes()
    refused(["card", str(run), "-s", "kalbur", "--out", str(corpus)],
            rf"card file {corpus} lies inside the dataset folder {corpus.parent}: outputs never overlap inputs")
    assert corpus.read_bytes() == before


# ---------------------------------------------------------------- 3: values read back are checked like input

@pytest.mark.parametrize("cell, problem", [("nan", "'nan' is not a finite number"), ("inf", "'inf' is not a finite "
                                           "number"), ("zero", "'zero' is not a number")])
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


# ---------------------------------------------------------------- 4: cross-field errors name their fields

@pytest.mark.parametrize("extra, message", [
    ({"depth": 100, "rerank_depths": [0, 10]}, "fields 'rerank_depths', 'depth': rerank_depths [0, 10] must lie in "
                                               "1..depth (100)"),
    ({"rerank_depth": 20, "depth": 10}, "fields 'rerank_depth', 'depth': rerank_depth (20) exceeds depth (10)"),
    ({"first_stages": [{"name": "a"}, {"name": "A", "kind": "bm25"}]},
     "field 'first_stages': first stage names must be unique, got ['a', 'A']"),
    ({"rerankers": [{"name": "x", "kind": "bm25"}, {"name": "x", "kind": "bm25"}]},
     "field 'rerankers': reranker names must be unique, got ['x', 'x']"),
    ({"featured": "nope"}, "field 'featured': featured system 'nope' is not a row"),
])
def test_4_cross_field_errors_name_their_fields(tmp_path, extra, message):
    from pydantic import ValidationError

    from terazi.schemas import EvalConfig

    with pytest.raises(ValidationError) as e:
        EvalConfig.model_validate({"datasets": [{"path": str(tmp_path)}], **extra})
    text = describe(e.value)
    assert text.startswith(message) and "'record'" not in text, text


# ---------------------------------------------------------------- 8: the card's metadata as the Hub reads it

def test_8_the_hub_reads_the_front_matter_and_the_eval_results_files_apart(run, tmp_path):
    from huggingface_hub import ModelCard, ModelCardData, metadata_load, parse_eval_result_entries

    out = tmp_path / "repo" / "kalbur"
    res = CliRunner().invoke(app, ["card", str(run), "-s", "kalbur", "--format", "all", "--out", str(out),
                                   "--model-name", "kalbur-reranker"])
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
    assert {(r.dataset_type, r.metric_name): r.metric_value for r in results} == \
           {(d, f"nDCG@10 ({'Temiz' if c == 'clean' else 'Mobil'})"): v for (d, c), v in ranked.items()}
    entries = parse_eval_result_entries(yaml.safe_load((tmp_path / "repo" / ".eval_results" / "kalbur.yaml")
                                                       .read_text(encoding="utf-8")))
    assert {(e.dataset_id, e.task_id): e.value for e in entries} == ranked
    assert all(e.source_url is None and "terazi (pusula)" in e.notes for e in entries)
    # --format yaml alone is the front matter (one document), --format eval-results alone the entries
    single = CliRunner().invoke(app, ["card", str(run), "-s", "kalbur", "--format", "yaml"]).output
    assert ModelCardData(**yaml.safe_load(single)).eval_results == ModelCardData(**yaml.safe_load(front)).eval_results
    listed = CliRunner().invoke(app, ["card", str(run), "-s", "kalbur", "--format", "eval-results"]).output
    assert len(parse_eval_result_entries(yaml.safe_load(listed))) == len(entries)
    refused(["card", str(run), "-s", "kalbur", "--format", "all"], r"--format all writes each part to its own file")


def test_3_a_per_query_nan_is_named(run, tmp_path):
    import shutil

    import polars as pl

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    pq = pl.read_parquet(copy / "per_query.parquet")
    pq.with_columns(value=pl.when(pl.int_range(pl.len()) == 3).then(float("nan")).otherwise(pl.col("value"))) \
        .write_parquet(copy / "per_query.parquet")
    with pytest.raises(DatasetError, match=r"per_query.parquet: row 4, column 'value': nan is not a finite number"):
        build_card(copy, "kalbur")


# ---------------------------------------------------------------- 5: depths and first stages are bounded work

def test_5_the_number_of_depths_is_bounded_and_first_stages_multiply_the_pairs(tmp_path, tiny_dataset, monkeypatch):
    from terazi.data.loading import load_dataset
    from terazi.errors import LimitError
    from terazi.policy import NO_LIMITS, ServicePolicy
    from terazi.preflight import preflight, within_limits
    from terazi.schemas import EvalConfig, Limits

    monkeypatch.delenv(NO_LIMITS, raising=False)
    monkeypatch.delenv("PREFECT__RUNTIME__DEPLOYMENT__ID", raising=False)
    base = {"datasets": [{"path": str(tiny_dataset)}], "out_dir": str(tmp_path / "r"), "cache_dir": str(tmp_path / "c"),
            "offline": True, "depth": 20_000, "rerank_depth": 10}
    many = EvalConfig.model_validate({**base, "rerank_depths": list(range(1, 1001))})
    with pytest.raises(LimitError, match=r"^rerank_depths \(depths in the sweep\): 1,000 is over the limit of 100; "
                                         r"lower it, or allow more with `terazi run --no-limits`"):
        preflight(many, announce=False)
    assert not (tmp_path / "c").exists()  # refused before anything was read or written
    # a served run: the server's limit (terazi serve --max-depths), which the form cannot lift
    monkeypatch.setenv(NO_LIMITS, "1")
    served = ServicePolicy(results_root=str(tmp_path), cache_root=str(tmp_path), limits=Limits(depths=5))
    monkeypatch.setenv("TERAZI_SERVICE_POLICY", served.model_dump_json())
    monkeypatch.setenv("PREFECT__RUNTIME__DEPLOYMENT__ID", "00000000-0000-0000-0000-000000000001")
    six = EvalConfig.model_validate({**base, "depth": 100, "rerank_depths": [1, 2, 3, 4, 5]})  # 10 is added: 6
    with pytest.raises(LimitError, match=r"rerank_depths \(depths in the sweep\): 6 is over the limit of 5; lower it, "
                                         r"or ask whoever serves it \(set by `terazi serve --max-depths`\)"):
        preflight(six, announce=False)
    # two first stages rank every variant twice: 4 judged queries × 2 variants (clean, upper) × depth 10 × 2
    two = EvalConfig.model_validate({**base, "depth": 10, "conditions": ["clean", "upper"],
                                     "first_stages": [{"name": "dense"}, {"name": "bm25", "kind": "bm25"}]})
    datasets = [load_dataset(two.datasets[0], two.cache_dir, announce=False)]
    within_limits(two, Limits(pairs=160), "", datasets)
    with pytest.raises(LimitError, match=r"^first-stage pairs \(4 judged queries × 2 variants × depth 10 × 2 first "
                                         r"stages\): 160 is over the limit of 159"):
        within_limits(two, Limits(pairs=159), "", datasets)


# ---------------------------------------------------------------- 6: a first stage that tells nothing apart

def test_6_a_first_stage_whose_scores_all_tie_is_warned_about(tmp_path, caplog):
    import logging

    import polars as pl

    from terazi.rerank.stage import first_stage_ranking
    from terazi.schemas import CandidateSet, DatasetManifest

    rows = [(cond, 0, q, r + 1, f"d{r}", 0.0 if cond == "upper" else float(-r))
            for cond in ("clean", "upper") for q in ("q1", "q2") for r in range(5)]
    rows[0] = ("clean", 0, "q1", 1, "d0", 0.0)  # clean: q2 tells its candidates apart, so clean is not all tied
    path = tmp_path / "candidates.parquet"
    pl.DataFrame(rows, schema=["condition", "sample", "query_id", "rank", "doc_id", "score"], orient="row") \
        .write_parquet(path)
    cs = CandidateSet(fingerprint="f" * 16, lookup_key="0" * 16, dataset="empty", dataset_fingerprint="x",
                      encoder="bm25", encoder_identity="bm25", index={}, depth=5, faiss_version="", path=str(path),
                      trec_dir=str(tmp_path), recall={}, reused=False, queries_encoded=0, docs_encoded=0, seconds=0)
    ds = DatasetManifest(name="empty", path=str(tmp_path), split="test", task_type="retrieval", in_ranking=True,
                         fingerprint="x", corpus_fingerprint="x", n_docs=5, n_queries=2, n_judgments=2,
                         n_queries_without_relevant=0)
    log = logging.getLogger("terazi.rerank")
    log.addHandler(caplog.handler)  # whether or not a command made the terazi logger stop propagating
    try:
        first_stage_ranking(ds, cs, str(tmp_path / "run"))
    finally:
        log.removeHandler(caplog.handler)
    warned = sorted({r.getMessage() for r in caplog.records if r.levelno == logging.WARNING})
    assert len(warned) == 1 and "first stage bm25 on empty: every query's candidates have one score under upper:" \
        in warned[0] and "tie order of the document ids" in warned[0], warned


# ---------------------------------------------------------------- 7: letters as people see them, NFD included

@pytest.mark.parametrize("args", [["--condition", "ascii_partial", "--rate", "1"],
                                  ["--condition", "mobile", "--mobile", "ascii_letter=1", "--mobile", "lowercase=0",
                                   "--mobile", "ascii_query=0", "--slip-rate", "0"]])
def test_7_the_lower_case_of_dotted_capital_i_is_folded(tmp_path, args):
    import json
    import unicodedata

    text = unicodedata.normalize("NFD", "İyi akşamlar".lower())  # 'i̇yi akşamlar': i + U+0307 stays so in NFC too
    assert "i\u0307" in unicodedata.normalize("NFC", text)
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"_id": "q1", "text": text}, ensure_ascii=False) + "\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["corrupt", str(queries), *args])
    out = json.loads(res.output.splitlines()[0])
    assert out["text"].startswith("iyi ") and "\u0307" not in out["text"] and out["changed"], out


# ---------------------------------------------------------------- 9: leakage finds the copies training data holds

def test_9_training_records_named_by_id_mixed_fields_read_a_record_with_none_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from terazi.contamination import TrainSource, check
    from tests.leakage_inputs import PLANTED, bench_dataset, jsonl, window

    bench = bench_dataset(tmp_path)
    copy = window(8).upper()  # as a non-Turkish tool upper-cases it: i → I, read ı by Turkish rules
    mixed = jsonl(tmp_path / "mixed.jsonl", [{"id": "r1", "query": "elma nerede"},   # a query record
                                             {"_id": 7, "text": f"x {copy} y"},   # a passage record, numeric id
                                             {"text": PLANTED}])                  # no id: named by its line
    r = check([bench], [TrainSource(path=str(mixed), fields=("text", "query"))])
    assert r.train_hits == [f"{mixed}:2 (id 7)", f"{mixed}:3"] and r.datasets[0].passage_hits == ["d1"]
    table = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "text": ["yok", copy]}), table)  # no `query` column: skipped
    assert check([bench], [TrainSource(path=str(table), fields=("text", "query"))]).train_hits == [f"{table}:2 (id b)"]
    bad = jsonl(tmp_path / "bad.jsonl", [{"text": "yok"}, {"body": copy, "id": "r9"}])
    with pytest.raises(DatasetError, match=r"bad.jsonl, line 2: no field 'text' or 'query' \(fields: body, id\)"):
        check([bench], [TrainSource(path=str(bad), fields=("text", "query"))])


# ---------------------------------------------------------------- 10: the form's defaults pass the server's policy

def test_10_form_defaults_always_lie_inside_the_policys_roots(tmp_path, monkeypatch, tiny_dataset):
    from terazi.deployments.evaluate import form_defaults
    from terazi.policy import ServicePolicy
    from terazi.schemas import EvalConfig

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    served = EvalConfig.model_validate({"datasets": [{"path": str(tiny_dataset), "first_stage_runs": "runs"}],
                                        "out_dir": "results", "cache_dir": "cache", "exclude": "leak"})
    for roots in ({}, {"results_root": str(tmp_path / "R")}, {"cache_root": "/srv/cache", "results_root": "R2"}):
        policy = ServicePolicy.for_service(served, **roots)
        params = form_defaults(served, policy)["config"]
        applied = policy.apply(EvalConfig.model_validate(params))  # pressing Run with the defaults: never refused
        assert applied.out_dir == policy.results_root and applied.cache_dir == policy.cache_root, roots


# ---------------------------------------------------------------- 11, 12: a full disk under any command's output

def test_12_a_full_disk_under_a_commands_declared_output_is_named(run, tmp_path, monkeypatch):
    import errno
    from pathlib import Path

    def full(self, *a, **k):  # a buffered write's ENOSPC: no file named
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    monkeypatch.setattr("terazi.paths._free_bytes", lambda folder: 0)
    out = tmp_path / "cards" / "kalbur.md"
    refused(["card", str(run), "-s", "kalbur", "--out", str(out)],
            rf"error: disk full under the folder of the card file {out.parent} \(0 KiB free\): free space on that "
            r"disk or point --out at another one")
