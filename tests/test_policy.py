"""The serving side's policy for form runs, and the form itself (the deployment's parameter schema)."""

from __future__ import annotations

from pathlib import Path

import pytest

from terazi.base.errors import PolicyError
from terazi.config.policy import ServicePolicy
from terazi.schemas import EvalConfig


@pytest.fixture
def served(tmp_path, tiny_dataset):
    return EvalConfig.model_validate(
        {
            "datasets": [{"path": str(tiny_dataset)}],
            "out_dir": str(tmp_path / "results"),
            "cache_dir": str(tmp_path / "cache"),
        }
    )


def form(tmp_path, tiny_dataset, **extra) -> EvalConfig:
    return EvalConfig.model_validate(
        {
            "datasets": [{"path": str(tiny_dataset)}],
            "out_dir": str(tmp_path / "results"),
            "cache_dir": str(tmp_path / "cache"),
            **extra,
        }
    )


def test_remote_code_needs_the_server_to_allow_it(tmp_path, tiny_dataset, tiny_cross_encoder, served):
    ask = form(
        tmp_path,
        tiny_dataset,
        rerankers=[{"name": "ce", "kind": "cross-encoder", "model": tiny_cross_encoder, "trust_remote_code": True}],
    )
    strict = ServicePolicy.for_service(served, models=[tiny_cross_encoder])
    with pytest.raises(
        PolicyError, match=r"rerankers\.ce\.trust_remote_code: refused by the service policy .*--allow-remote-code"
    ):
        strict.apply(ask)
    assert ServicePolicy.for_service(served, allow_remote_code=True, models=[tiny_cross_encoder]).apply(ask)
    enc = form(tmp_path, tiny_dataset, encoder={"trust_remote_code": True})
    with pytest.raises(PolicyError, match=r"^encoder\.trust_remote_code"):
        strict.apply(enc)
    stage = form(tmp_path, tiny_dataset, first_stages=[{"name": "own", "encoder": {"trust_remote_code": True}}])
    with pytest.raises(PolicyError, match=r"^first_stages\.own\.encoder\.trust_remote_code"):
        strict.apply(stage)  # a first stage's own encoder is a model the run loads like any other


def test_models_come_from_the_allow_list(tmp_path, tiny_dataset, tiny_cross_encoder, served):
    policy = ServicePolicy.for_service(served, models=["BAAI/*", str(Path(tiny_cross_encoder).parent)])
    ok = form(
        tmp_path,
        tiny_dataset,
        rerankers=[
            {"name": "a", "kind": "cross-encoder", "model": "BAAI/bge-reranker-base"},
            {"name": "b", "kind": "cross-encoder", "model": tiny_cross_encoder},
        ],
    )
    policy.apply(ok)
    for model in ("evil/remote-model", "/etc", str(Path(tiny_cross_encoder).parent.parent)):
        bad = form(tmp_path, tiny_dataset, rerankers=[{"name": "x", "kind": "bi-encoder", "model": model}])
        with pytest.raises(PolicyError, match=r"rerankers\.x\.model .*not allowed by the service policy"):
            policy.apply(bad)
        bad = form(tmp_path, tiny_dataset, first_stages=[{"name": "own", "encoder": {"model": model}}])
        with pytest.raises(PolicyError, match=r"first_stages\.own\.encoder\.model .*not allowed by the service"):
            policy.apply(bad)


def test_paths_stay_inside_the_service_roots(tmp_path, tiny_dataset, served, monkeypatch):
    policy = ServicePolicy.for_service(served)
    monkeypatch.chdir(tmp_path)
    relative = policy.apply(form(tmp_path, tiny_dataset, out_dir="results/sub"))
    assert relative.out_dir == str(tmp_path / "results" / "sub")  # relative to where the server runs
    for field, value, words in (
        ("out_dir", "/tmp/elsewhere", "outside the service's results root"),
        ("out_dir", "results/../../x", "outside the service's results root"),
        ("cache_dir", "/", "outside the service's cache root"),
        ("task_runner_address", "tcp://attacker:8786", "not the service's own cluster"),
    ):
        with pytest.raises(PolicyError, match=f"^{field} .*{words}"):
            policy.apply(form(tmp_path, tiny_dataset, **{field: value}))
    with pytest.raises(PolicyError, match=r"datasets\.0\.path '/etc': outside the service's data roots"):
        policy.apply(
            EvalConfig.model_validate(
                {
                    "datasets": [{"path": "/etc"}],
                    "out_dir": str(tmp_path / "results"),
                    "cache_dir": str(tmp_path / "cache"),
                }
            )
        )


def test_without_a_policy_a_served_run_gets_the_strictest(monkeypatch, tmp_path, tiny_dataset):
    monkeypatch.delenv("TERAZI_SERVICE_POLICY", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PolicyError, match="data roots"):
        ServicePolicy.from_env().apply(form(tmp_path, tiny_dataset))


def test_form_schema_is_typed_and_described():
    from terazi.flows.evaluate import evaluate

    schema = evaluate.parameters.model_dump()
    defs = schema["definitions"]
    rerankers = defs["EvalConfig"]["properties"]["rerankers"]["items"]
    assert rerankers["discriminator"]["propertyName"] == "kind"
    assert set(rerankers["discriminator"]["mapping"]) == {
        "cross-encoder",
        "bi-encoder",
        "llm-reranker",
        "bm25",
        "http",
        "listwise",
        "rrf",
    }
    listwise = defs["ListwiseSpec"]["properties"]  # the form shows a listwise row's own fields and RankLLM's defaults
    assert {"url", "model", "prompt", "window", "stride", "passage_words", "api_key_env"} <= set(listwise)
    assert (listwise["window"]["default"], listwise["stride"]["default"]) == (20, 10)
    fields = {k: set(defs[k]["properties"]) for k in ("CrossEncoderSpec", "BiEncoderSpec", "BM25Spec", "RRFSpec")}
    assert {"k1", "b", "fuse"}.isdisjoint(fields["CrossEncoderSpec"])
    assert {"model", "fuse", "max_length"}.isdisjoint(fields["BM25Spec"])
    assert {"model", "k1", "b"}.isdisjoint(fields["RRFSpec"])
    conditions = defs["EvalConfig"]["properties"]["conditions"]["items"]
    assert "upper" in conditions["description"] and conditions["pattern"].startswith("^(clean|")
    assert "nDCG@10" in defs["EvalConfig"]["properties"]["metrics"]["items"]["description"]
    undescribed = [
        f"{name}.{prop}"
        for name, d in defs.items()
        for prop, p in d.get("properties", {}).items()
        if not p.get("description") and prop != "kind"
    ]
    assert not undescribed, undescribed


def test_form_defaults_are_absolute(tmp_path, monkeypatch):
    from terazi.deployments.evaluate import form_defaults, load_config

    monkeypatch.chdir(tmp_path)
    params = form_defaults(load_config(None))["config"]
    assert Path(params["out_dir"]).is_absolute() and Path(params["cache_dir"]).is_absolute()
    assert all(Path(d["path"]).is_absolute() for d in params["datasets"])
    assert [r["name"] for r in params["rerankers"]] == ["bm25-tr", "hybrid-rrf"]  # the defaults everywhere


def test_form_defaults_keep_named_datasets_and_pass_the_servers_own_policy(tmp_path, monkeypatch, tiny_dataset):
    from terazi.deployments.evaluate import form_defaults

    monkeypatch.chdir(tmp_path)
    served = EvalConfig.model_validate(
        {
            "datasets": [
                {"path": "hf:org/served@v1"},
                {"path": "mteb:SomeTask#tur"},
                {"path": "hf:./local-copy"},
                {"path": str(tiny_dataset)},
            ],
            "out_dir": "results",
            "cache_dir": "cache",
        }
    )
    params = form_defaults(served)["config"]
    assert [d["path"] for d in params["datasets"]] == [
        "hf:org/served@v1",
        "mteb:SomeTask#tur",
        f"hf:{tmp_path / 'local-copy'}",
        str(tiny_dataset),
    ]
    policy = ServicePolicy.for_service(served)
    assert policy.apply(EvalConfig.model_validate(params)).datasets[0].path == "hf:org/served@v1"


def test_a_local_hf_datasets_subset_is_kept(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    served = EvalConfig.model_validate(
        {"datasets": [{"path": "hf:./copy#tur"}], "out_dir": "results", "cache_dir": "c"}
    )
    assert ServicePolicy.for_service(served).apply(served).datasets[0].path == f"hf:{tmp_path / 'copy'}#tur"


def test_a_named_datasets_root_is_no_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    named = tmp_path / "hf:org" / "served@v1"  # a folder spelt like the served name must not count as a data root
    named.mkdir(parents=True)
    served = EvalConfig.model_validate(
        {"datasets": [{"path": "hf:org/served@v1"}], "out_dir": "results", "cache_dir": "cache"}
    )
    policy = ServicePolicy.for_service(served)
    with pytest.raises(PolicyError, match=r"datasets\.0\.path .*outside the service's data roots"):
        policy.apply(
            EvalConfig.model_validate(
                {"datasets": [{"path": f"./{named.relative_to(tmp_path)}"}], "out_dir": "results", "cache_dir": "cache"}
            )
        )
    with pytest.raises(PolicyError, match=r"datasets\.0\.first_stage_runs .*outside the service's data roots"):
        policy.apply(
            EvalConfig.model_validate(
                {
                    "datasets": [{"path": "hf:org/served@v1", "first_stage_runs": str(named)}],
                    "out_dir": "results",
                    "cache_dir": "cache",
                }
            )
        )


def test_a_hub_pattern_allows_hub_ids_only_not_local_paths_that_match_it(tmp_path, monkeypatch, tiny_cross_encoder):
    import shutil

    monkeypatch.chdir(tmp_path)
    (tmp_path / "BAAI" / "clone").mkdir(parents=True)  # a server keeping clones of hub models under their org names
    shutil.copytree(tiny_cross_encoder, tmp_path / "private-model")
    served = form(tmp_path, tmp_path)
    policy = ServicePolicy.for_service(served, models=["BAAI/*"])
    policy.apply(
        form(tmp_path, tmp_path, rerankers=[{"name": "a", "kind": "cross-encoder", "model": "BAAI/bge-reranker-base"}])
    )
    for model in ("BAAI/clone/../../private-model", "BAAI/clone/sub"):
        with pytest.raises(PolicyError, match=r"rerankers\.x\.model .*not allowed by the service policy"):
            policy.apply(form(tmp_path, tmp_path, rerankers=[{"name": "x", "kind": "cross-encoder", "model": model}]))
    # a hub-shaped id the pattern allows, spelt like a folder the server keeps: resolve() would load the folder
    with pytest.raises(PolicyError, match=r"rerankers\.x\.model 'BAAI/clone': a folder of that name exists"):
        policy.apply(
            form(tmp_path, tmp_path, rerankers=[{"name": "x", "kind": "cross-encoder", "model": "BAAI/clone"}])
        )


def test_10_form_defaults_always_lie_inside_the_policys_roots(tmp_path, monkeypatch, tiny_dataset):
    from terazi.deployments.evaluate import form_defaults

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
