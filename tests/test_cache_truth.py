"""A stored result is the result today's code computes (terazi.store.derived, terazi.store.codehash): a code change
recomputes exactly the outputs that code makes, a results folder written in place never reaches the next run, a folder
with an unreadable file never says it is complete, and pruning makes a warm run recompute only what was pruned."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from terazi.schemas import EvalConfig
from terazi.store import codehash
from terazi.upkeep import health
from tests.conftest import make_tiny, three_rerankers, tiny_config


@pytest.fixture(scope="module")
def cold(prefect_server, tmp_path_factory, tiny_cross_encoder):
    """A cold run with a cache (bm25, a cross-encoder, a fusion row; clean and UPPERCASE) and its config."""
    from terazi.flows.evaluate import evaluate

    root = tmp_path_factory.mktemp("truth")
    rerankers = three_rerankers(tiny_cross_encoder, fused="tiny-ce")
    config = EvalConfig.model_validate(
        tiny_config(root, make_tiny(root / "tiny"), rerankers=rerankers, run_name="cold")
    )
    manifest = evaluate(config)
    assert any(r.pairs_scored for r in manifest.reranks)
    return config, manifest, root


def run(config: EvalConfig, name: str):
    from terazi.flows.evaluate import evaluate

    return evaluate(config.model_copy(update={"run_name": name}))


def stored(cache: Path) -> set[str]:
    """The stored outputs of a cache, by key (`stage-hash`, kept tables and plots by file name)."""
    return {p.name for p in (cache / "outputs").iterdir() if not p.name.startswith(".")}


def stage(key: str) -> str:
    return key.split(".")[0].rsplit("-", 1)[0]


def board(root: Path, name: str) -> pl.DataFrame:
    return pl.read_csv(root / "results" / name / "leaderboard.csv")


# the file whose code is "edited", and the stages whose outputs must be made again (every other one is linked)
EDITS = [
    ("terazi.rerank.stage", "terazi.rerank.ranking", {"ranking", "fusion"}),
    ("terazi.metrics.per_query", "terazi.metrics.families", {"per-query", "per-query-all", "first-stage-recall"}),
    ("terazi.results.export", "terazi.data.trec_writer", {"runs"}),
]
# code the frozen first stage runs too (its recall, its TREC copies): the set is made again from the kept vectors
REFROZEN = {"terazi.metrics.families", "terazi.data.trec_writer"}


@pytest.mark.parametrize(("maker", "module", "remade"), EDITS, ids=[e[1] for e in EDITS])
def test_a_code_change_recomputes_exactly_the_outputs_of_that_code(cold, monkeypatch, maker, module, remade):
    config, first, root = cold
    cache = root / "cache"
    warm = run(config, f"warm-{module}")
    before = stored(cache)
    assert all(r.pairs_scored == 0 for r in warm.reranks) and warm.candidates[0].reused

    path = codehash.closure(maker)[module]
    real = codehash._digest
    monkeypatch.setattr(codehash, "_digest", lambda p: f"edited {p}" if p == path else real(p))
    edited = run(config, f"edited-{module}")
    new = stored(cache) - before
    assert {stage(k) for k in new} == remade, sorted(new)
    # model scores are the model's: none scored again (BM25, cheaper to score than to store, is never stored)
    assert [r.pairs_scored for r in edited.reranks if r.system == "tiny-ce"] == [0]
    cand = edited.candidates[0]
    assert cand.fingerprint == first.candidates[0].fingerprint
    # the frozen set records its recall (the metric engine) and holds TREC copies (the writer): its files are made
    # again from the vectors kept in the cache (no text encoded), the same candidates; nothing else is upstream
    assert cand.reused == (module not in REFROZEN)
    assert cand.reused or cand.docs_encoded == cand.queries_encoded == 0
    assert board(root, f"edited-{module}").equals(board(root, "cold"))

    monkeypatch.undo()
    again = run(config, f"again-{module}")
    assert stored(cache) == before | new and again.candidates[0].reused  # the unedited code finds its outputs again


def edit_in_place(path: Path, data: bytes, append: bool) -> None:
    """What root can do to a read-only file of a results folder (an owner first lifts the mode)."""
    os.chmod(path, 0o644)
    with open(path, "ab" if append else "r+b") as f:
        f.write(data)


def test_a_results_folder_written_in_place_never_reaches_the_next_run(cold, caplog, monkeypatch):
    from terazi.cli.application import app

    config, first, root = cold
    a, cache = root / "results" / "cold", root / "cache"
    trec = next((a / "runs").rglob("bm25.trec"))
    clean_trec = trec.read_bytes()
    size = (a / "per_query.parquet").stat().st_size
    edit_in_place(trec, b"q1 Q0 planted 1 99.0 planted\n", append=True)
    edit_in_place(a / "per_query.parquet", b"\0" * 64, append=False)  # the parquet's first bytes overwritten
    assert (a / "per_query.parquet").stat().st_size == size

    assert CliRunner().invoke(app, ["cache", "check", "--cache", str(cache)]).exit_code == 2
    monkeypatch.setattr(logging.getLogger("terazi"), "propagate", True)  # the command kept its lines off the root
    problems = {p.problem for p in health.check(cache)}
    assert {
        f"runs/{trec.relative_to(a / 'runs')} was changed after it was stored",
        "per_query.parquet was changed after it was stored",
    } <= problems

    b = run(config, "after-edit")
    folder = Path(b.run_dir)
    assert (folder / trec.relative_to(a)).read_bytes() == clean_trec
    assert not os.path.samefile(folder / trec.relative_to(a), trec)
    pl.read_parquet(folder / "per_query.parquet")  # readable: made again, not linked
    assert board(root, "after-edit").equals(board(root, "cold")) and (folder / "manifest.json").is_file()
    assert "set aside in quarantine/" in caplog.text
    assert CliRunner().invoke(app, ["cache", "check", "--cache", str(cache)]).exit_code == 0  # set aside already
    assert any(p.name.startswith("outputs-") for p in (cache / "quarantine").iterdir())


def test_a_folder_with_an_unreadable_file_is_never_marked_complete(cold, monkeypatch):
    from terazi.base.errors import IncompleteRunError
    from terazi.results import aggregate

    config, _, root = cold
    folder = root / "results" / "torn"
    real = aggregate.leaderboard_markdown

    def and_tear_a_table(*args, **kwargs):  # a table left torn (a killed writer, a disk error) after the statistics
        (folder / "rankings" / "tiny" / "torn.parquet").write_bytes(b"PAR1 torn")
        return real(*args, **kwargs)

    monkeypatch.setattr(aggregate, "leaderboard_markdown", and_tear_a_table)
    with pytest.raises(Exception) as e:
        run(config, "torn")
    assert isinstance(e.value, IncompleteRunError) and "rankings/tiny/torn.parquet" in str(e.value)
    assert not (folder / "manifest.json").exists()
    marker = json.loads((folder / ".terazi-incomplete").read_text())
    assert marker["status"] == "stopped" and "torn.parquet" in marker["reason"]


def test_prune_dry_run_then_prune_then_a_warm_run_recomputes_only_what_was_pruned(cold):
    from terazi.cli.application import app

    config, _, root = cold
    cache = root / "cache"
    before = Path(run(config, "before-prune").run_dir)
    used = {p.name for p in (before / "rankings" / "tiny").iterdir()}
    rankings = [
        p
        for p in (cache / "outputs").iterdir()
        if stage(p.name) == "ranking"
        and any(
            os.path.samefile(f, before / "rankings" / "tiny" / f.name)
            for f in (p / "rankings" / "tiny").iterdir()
            if f.name in used
        )
    ]
    assert len(rankings) == 2  # bm25's and the cross-encoder's (the fusion row is a stage of its own)
    old = time.time() - 40 * 86400
    for p in rankings:
        os.utime(p / ".meta.json", (old, old))
    keys = stored(cache)

    dry = CliRunner().invoke(app, ["cache", "prune", "--cache", str(cache), "--older-than", "30d", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert dry.output.count("would remove outputs") == len(rankings) and stored(cache) == keys
    pruned = CliRunner().invoke(app, ["cache", "prune", "--cache", str(cache), "--older-than", "30d"])
    assert pruned.exit_code == 0 and pruned.output.count("removed outputs") == len(rankings)
    assert stored(cache) == keys - {p.name for p in rankings}

    after = run(config, "after-prune")
    assert stored(cache) == keys  # made again, under the same keys
    assert [r.pairs_scored for r in after.reranks if r.system == "tiny-ce"] == [0]
    du = CliRunner().invoke(app, ["cache", "du", "--cache", str(cache)])
    assert du.exit_code == 0 and "outputs" in du.output and "never pruned" in du.output
    bad = CliRunner().invoke(app, ["cache", "prune", "--cache", str(cache), "--max-size", "lots"])
    assert bad.exit_code != 0 and "error: --max-size: 'lots' is not a size" in bad.output
