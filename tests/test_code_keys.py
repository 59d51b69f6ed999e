"""The code in a stored output's key (terazi.store.codehash): a module's import closure within terazi, followed through
lazy and multi-line imports, and the versions of the libraries that write the bytes."""

from __future__ import annotations

from terazi.store import codehash


def names(module: str) -> set[str]:
    return set(codehash.closure(module))


def test_each_stage_is_keyed_by_the_code_it_runs_and_nothing_else():
    per_query, ranking, export = (
        names(m) for m in ("terazi.metrics.per_query", "terazi.rerank.stage", "terazi.results.export")
    )
    assert {"terazi.metrics.engine", "terazi.metrics.contracts", "terazi.schemas.tables"} <= per_query
    assert "terazi.rerank.ranking" not in per_query and "terazi.metrics.engine" not in ranking
    assert {"terazi.rerank.ranking", "terazi.rerank.work", "terazi.store.derived"} <= ranking
    assert {"terazi.data.runfolder", "terazi.data.trec"} <= export
    assert not any(n.startswith(("terazi.flows", "terazi.cli", "terazi.api")) for n in per_query | ranking | export)


def test_lazy_parenthesised_and_aliased_imports_are_followed(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        "import os\nfrom terazi.metrics import (\n    engine,\n    contracts as c,  # why\n)\n\n"
        "def f():\n    import terazi.rerank.ranking as r\n    from terazi.store.derived import key, reuse\n"
        "    return r\n# from terazi.cli import nothing (a comment is not an import)\n"
    )
    found = set(codehash._imports("m", source))
    assert {
        "terazi.metrics",
        "terazi.metrics.engine",
        "terazi.metrics.contracts",
        "terazi.rerank.ranking",
        "terazi.store.derived",
        "terazi.store.derived.key",
    } <= found
    assert not any("cli" in n for n in found)
    assert codehash._path("terazi.store.derived.key") is None and codehash._path("terazi.store.derived") is not None


def test_the_hash_moves_with_a_file_of_the_closure_or_a_library_and_not_otherwise(monkeypatch):
    before = codehash.of_module("terazi.metrics.per_query")
    engine = codehash.closure("terazi.metrics.per_query")["terazi.metrics.engine"]
    ranking = codehash.closure("terazi.rerank.stage")["terazi.rerank.ranking"]
    real = codehash._digest
    with monkeypatch.context() as mp:
        mp.setattr(codehash, "_digest", lambda p: "edited" if p == ranking else real(p))
        assert codehash.of_module("terazi.metrics.per_query") == before  # ranking.py is not per-query code
    with monkeypatch.context() as mp:
        mp.setattr(codehash, "_digest", lambda p: "edited" if p == engine else real(p))
        assert codehash.of_module("terazi.metrics.per_query") != before
    with monkeypatch.context() as mp:
        real_libraries = codehash.libraries()
        mp.setattr(codehash, "libraries", lambda: real_libraries.replace("polars=", "polars=99.0+"))
        assert codehash.of_module("terazi.metrics.per_query") != before
    assert codehash.of_module("terazi.metrics.per_query") == before
