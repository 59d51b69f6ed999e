"""The third round of hostile inputs (issue 37), as users meet them: cross-field config errors, bounded work for depth
sweeps and several first stages, a first stage whose scores all tie, the lower case of dotted capital I, training
records for the leakage check, the serve form's defaults. docs/reliability.md lists every case with the test that
covers it; the cases that meet `terazi card` are in tests/test_round3_card.py.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from terazi.base.errors import DatasetError, describe
from terazi.cli import app

# ---------------------------------------------------------------- 4: cross-field errors name their fields


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            {"depth": 100, "rerank_depths": [0, 10]},
            "fields 'rerank_depths', 'depth': rerank_depths [0, 10] must lie in 1..depth (100)",
        ),
        ({"rerank_depth": 20, "depth": 10}, "fields 'rerank_depth', 'depth': rerank_depth (20) exceeds depth (10)"),
        (
            {"first_stages": [{"name": "a"}, {"name": "A", "kind": "bm25"}]},
            "field 'first_stages': first stage names must be unique, got ['a', 'A']",
        ),
        (
            {"rerankers": [{"name": "x", "kind": "bm25"}, {"name": "x", "kind": "bm25"}]},
            "field 'rerankers': reranker names must be unique, got ['x', 'x']",
        ),
        ({"featured": "nope"}, "field 'featured': featured system 'nope' is not a row"),
    ],
)
def test_4_cross_field_errors_name_their_fields(tmp_path, extra, message):
    from pydantic import ValidationError

    from terazi.schemas import EvalConfig

    with pytest.raises(ValidationError) as e:
        EvalConfig.model_validate({"datasets": [{"path": str(tmp_path)}], **extra})
    text = describe(e.value)
    assert text.startswith(message) and "'record'" not in text, text


# ---------------------------------------------------------------- 5: depths and first stages are bounded work


def test_5_the_number_of_depths_is_bounded_and_first_stages_multiply_the_pairs(tmp_path, tiny_dataset, monkeypatch):
    from terazi.base.errors import LimitError
    from terazi.config.policy import NO_LIMITS, ServicePolicy
    from terazi.config.preflight import preflight, within_limits
    from terazi.data.loading import load_dataset
    from terazi.schemas import EvalConfig, Limits

    monkeypatch.delenv(NO_LIMITS, raising=False)
    monkeypatch.delenv("PREFECT__RUNTIME__DEPLOYMENT__ID", raising=False)
    base = {
        "datasets": [{"path": str(tiny_dataset)}],
        "out_dir": str(tmp_path / "r"),
        "cache_dir": str(tmp_path / "c"),
        "offline": True,
        "depth": 20_000,
        "rerank_depth": 10,
    }
    many = EvalConfig.model_validate({**base, "rerank_depths": list(range(1, 1001))})
    with pytest.raises(
        LimitError,
        match=r"^rerank_depths \(depths in the sweep\): 1,000 is over the limit of 100; "
        r"lower it, or allow more with `terazi run --no-limits`",
    ):
        preflight(many, announce=False)
    assert not (tmp_path / "c").exists()  # refused before anything was read or written
    # a served run: the server's limit (terazi serve --max-depths), which the form cannot lift
    monkeypatch.setenv(NO_LIMITS, "1")
    served = ServicePolicy(results_root=str(tmp_path), cache_root=str(tmp_path), limits=Limits(depths=5))
    monkeypatch.setenv("TERAZI_SERVICE_POLICY", served.model_dump_json())
    monkeypatch.setenv("PREFECT__RUNTIME__DEPLOYMENT__ID", "00000000-0000-0000-0000-000000000001")
    six = EvalConfig.model_validate({**base, "depth": 100, "rerank_depths": [1, 2, 3, 4, 5]})  # 10 is added: 6
    with pytest.raises(
        LimitError,
        match=r"rerank_depths \(depths in the sweep\): 6 is over the limit of 5; lower it, "
        r"or ask whoever serves it \(set by `terazi serve --max-depths`\)",
    ):
        preflight(six, announce=False)
    # two first stages rank every variant twice: 4 judged queries × 2 variants (clean, upper) × depth 10 × 2
    two = EvalConfig.model_validate(
        {
            **base,
            "depth": 10,
            "conditions": ["clean", "upper"],
            "first_stages": [{"name": "dense"}, {"name": "bm25", "kind": "bm25"}],
        }
    )
    datasets = [load_dataset(two.datasets[0], two.cache_dir, announce=False)]
    within_limits(two, Limits(pairs=160), "", datasets)
    with pytest.raises(
        LimitError,
        match=r"^first-stage pairs \(4 judged queries × 2 variants × depth 10 × 2 first "
        r"stages\): 160 is over the limit of 159",
    ):
        within_limits(two, Limits(pairs=159), "", datasets)


# ---------------------------------------------------------------- 6: a first stage that tells nothing apart


def test_6_a_first_stage_whose_scores_all_tie_is_warned_about(tmp_path, caplog):
    import logging

    import polars as pl

    from terazi.rerank.stage import first_stage_ranking
    from terazi.schemas import CandidateSet, DatasetManifest

    rows = [
        (cond, 0, q, r + 1, f"d{r}", 0.0 if cond == "upper" else float(-r))
        for cond in ("clean", "upper")
        for q in ("q1", "q2")
        for r in range(5)
    ]
    rows[0] = ("clean", 0, "q1", 1, "d0", 0.0)  # clean: q2 tells its candidates apart, so clean is not all tied
    path = tmp_path / "candidates.parquet"
    pl.DataFrame(
        rows, schema=["condition", "sample", "query_id", "rank", "doc_id", "score"], orient="row"
    ).write_parquet(path)
    cs = CandidateSet(
        fingerprint="f" * 16,
        lookup_key="0" * 16,
        dataset="empty",
        dataset_fingerprint="x",
        encoder="bm25",
        encoder_identity="bm25",
        index={},
        depth=5,
        faiss_version="",
        path=str(path),
        trec_dir=str(tmp_path),
        recall={},
        reused=False,
        queries_encoded=0,
        docs_encoded=0,
        seconds=0,
    )
    ds = DatasetManifest(
        name="empty",
        path=str(tmp_path),
        split="test",
        task_type="retrieval",
        in_ranking=True,
        fingerprint="x",
        corpus_fingerprint="x",
        n_docs=5,
        n_queries=2,
        n_judgments=2,
        n_queries_without_relevant=0,
    )
    log = logging.getLogger("terazi.rerank")
    log.addHandler(caplog.handler)  # whether or not a command made the terazi logger stop propagating
    try:
        first_stage_ranking(ds, cs, str(tmp_path / "run"))
    finally:
        log.removeHandler(caplog.handler)
    warned = sorted({r.getMessage() for r in caplog.records if r.levelno == logging.WARNING})
    assert (
        len(warned) == 1
        and "first stage bm25 on empty: every query's candidates have one score under upper:" in warned[0]
        and "tie order of the document ids" in warned[0]
    ), warned


# ---------------------------------------------------------------- 7: letters as people see them, NFD included


@pytest.mark.parametrize(
    "args",
    [
        ["--condition", "ascii_partial", "--rate", "1"],
        [
            "--condition",
            "mobile",
            "--mobile",
            "ascii_letter=1",
            "--mobile",
            "lowercase=0",
            "--mobile",
            "ascii_query=0",
            "--slip-rate",
            "0",
        ],
    ],
)
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

    from terazi.leakage import TrainSource, check
    from tests.leakage_inputs import PLANTED, bench_dataset, jsonl, window

    bench = bench_dataset(tmp_path)
    copy = window(8).upper()  # as a non-Turkish tool upper-cases it: i → I, read ı by Turkish rules
    mixed = jsonl(
        tmp_path / "mixed.jsonl",
        [
            {"id": "r1", "query": "elma nerede"},  # a query record
            {"_id": 7, "text": f"x {copy} y"},  # a passage record, numeric id
            {"text": PLANTED},
        ],
    )  # no id: named by its line
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
    from terazi.config.policy import ServicePolicy
    from terazi.deployments.evaluate import form_defaults
    from terazi.schemas import EvalConfig

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    served = EvalConfig.model_validate(
        {
            "datasets": [{"path": str(tiny_dataset), "first_stage_runs": "runs"}],
            "out_dir": "results",
            "cache_dir": "cache",
            "leakage": "leak",
        }
    )
    for roots in ({}, {"results_root": str(tmp_path / "R")}, {"cache_root": "/srv/cache", "results_root": "R2"}):
        policy = ServicePolicy.for_service(served, **roots)
        params = form_defaults(served, policy)["config"]
        applied = policy.apply(EvalConfig.model_validate(params))  # pressing Run with the defaults: never refused
        assert applied.out_dir == policy.results_root and applied.cache_dir == policy.cache_root, roots
