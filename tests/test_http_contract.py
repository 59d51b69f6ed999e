"""The HTTP reranker's contract without a server: what each dialect sends and accepts back, how `Retry-After` and the
backoff set the waits, the spec keeping secrets out of the address, the key variable checked before a run, and a
served deployment sending pairs only where its own config does. tests/test_http_reranker.py tests it against a
real server."""

from __future__ import annotations

import math
import os
from datetime import UTC

import pytest

from terazi.base.errors import ConfigError, PolicyError, ServiceError
from terazi.rerank.backends import dialects
from terazi.rerank.backends.service import pause, retry_after
from terazi.schemas import EvalConfig
from tests.rerank_server import http_spec


def test_the_dialects_send_one_query_and_read_scores_back_by_index():
    spec = http_spec("http://h/rerank", extra_body={"max_tokens_per_doc": 512})
    assert dialects.body(spec, "q", ["a", "b"]) == {
        "model": "tiny-ce",
        "query": "q",
        "documents": ["a", "b"],
        "top_n": 2,
        "max_tokens_per_doc": 512,
    }
    tei = http_spec("http://h/rerank", dialect="tei", extra_body={"truncate": True})
    assert dialects.body(tei, "q", ["a"]) == {"query": "q", "texts": ["a"], "truncate": True}
    answer = {
        "results": [
            {"index": 2, "relevance_score": 0.9},
            {"index": 0, "relevance_score": 0.1},
            {"index": 1, "relevance_score": -3},
        ]
    }
    assert dialects.scores("cohere", answer, 3, "w").tolist() == [0.1, -3.0, 0.9]
    assert dialects.scores("tei", [{"index": 1, "score": 2.5}, {"index": 0, "score": 1}], 2, "w").tolist() == [1, 2.5]


@pytest.mark.parametrize(
    "results, problem",
    [
        ([{"index": 0, "relevance_score": 0.1}], "1 results for 2 documents"),
        ([{"index": 0, "relevance_score": 0.1}, {"relevance_score": 0.2}], "result index None"),
        ([{"index": 0, "relevance_score": 0.1}, {"index": 2, "relevance_score": 0.2}], "result index 2"),
        ([{"index": 0, "relevance_score": 0.1}, {"index": True, "relevance_score": 0.2}], "result index True"),
        ([{"index": 0, "relevance_score": 0.1}, {"index": 0, "relevance_score": 0.2}], "index 0 is given twice"),
        ([{"index": 0, "relevance_score": math.nan}, {"index": 1, "relevance_score": 0.2}], "is nan, not a finite"),
        ([{"index": 0, "relevance_score": "0.1"}, {"index": 1, "relevance_score": 0.2}], "is '0.1', not a finite"),
        ({"index": 0}, "got dict"),
    ],
)
def test_malformed_answers_are_refused_naming_what_is_wrong(results, problem):
    payload = {"results": results} if isinstance(results, list) else results
    with pytest.raises(ServiceError, match=r"^served \(u\): malformed answer \(.*" + problem):
        dialects.scores("cohere" if isinstance(results, list) else "tei", payload, 2, "served (u)")


def test_retry_after_is_read_in_seconds_or_as_a_date_and_backoff_has_jitter():
    from datetime import datetime, timedelta
    from email.utils import format_datetime

    import httpx

    def response(value):
        return httpx.Response(429, headers={"Retry-After": value} if value is not None else {})

    assert retry_after(response("3")) == 3.0 and retry_after(response(None)) is None
    assert retry_after(response("soon")) is None and retry_after(response("-5")) == 0.0
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 28 <= retry_after(response(later)) <= 30
    waits = [pause(0, 2.0) for _ in range(200)]
    assert min(waits) >= 2.0 and max(waits) <= 2.4 and len(set(waits)) > 100  # what was asked, plus jitter
    backoffs = [pause(3, None) for _ in range(200)]
    assert min(backoffs) >= 2.0 and max(backoffs) <= 4.0 and len(set(backoffs)) > 100  # 0.5 × 2³, halved at most
    assert max(pause(20, None) for _ in range(50)) <= 30.0


def test_secrets_stay_out_of_the_address_and_the_cli_reads_a_row():
    from pydantic import ValidationError

    from terazi.schemas.rerankers import parse_reranker

    with pytest.raises(ValidationError, match="no credentials in the address"):
        http_spec("https://user:pw@api.example/rerank")
    with pytest.raises(ValidationError, match="no key or token in the query string"):
        http_spec("https://api.example/rerank?api_key=abc")
    with pytest.raises(ValidationError, match="not an http"):
        http_spec("ftp://api.example/rerank")
    with pytest.raises(ValidationError, match="extra_body: query are set by terazi"):
        http_spec("https://api.example/rerank", extra_body={"query": "x"})
    assert "api_key_env" not in parse_reranker("http:https://api.example/v2/rerank")
    os.environ["TERAZI_API_KEY"] = "x"
    try:
        row = parse_reranker("http:rerank-v3.5@https://api.example/v2/rerank=hosted")
    finally:
        del os.environ["TERAZI_API_KEY"]
    assert row == {
        "name": "hosted",
        "kind": "http",
        "url": "https://api.example/v2/rerank",
        "model": "rerank-v3.5",
        "api_key_env": "TERAZI_API_KEY",
    }


def test_an_unset_key_variable_stops_the_run_before_it_starts(tmp_path, tiny_dataset, monkeypatch):
    from terazi.config.preflight import preflight

    monkeypatch.delenv("TERAZI_NO_SUCH_KEY", raising=False)
    config = EvalConfig.model_validate(
        {
            "datasets": [{"path": str(tiny_dataset), "name": "tiny"}],
            "offline": True,
            "rerankers": [
                {
                    "name": "hosted",
                    "kind": "http",
                    "url": "https://api.example/v2/rerank",
                    "api_key_env": "TERAZI_NO_SUCH_KEY",
                }
            ],
            "out_dir": str(tmp_path / "out"),
            "cache_dir": str(tmp_path / "cache"),
        }
    )
    with pytest.raises(
        ConfigError,
        match=r"^rerankers\.hosted\.api_key_env: the environment variable "
        r"TERAZI_NO_SUCH_KEY is not set",
    ):
        preflight(config, announce=False)


def test_a_served_deployment_sends_pairs_only_to_the_served_configs_endpoints(tmp_path, tiny_dataset, monkeypatch):
    from terazi.config.policy import ServicePolicy

    monkeypatch.chdir(tmp_path)

    def config(url: str, key_env: str | None = "COHERE_KEY") -> EvalConfig:
        return EvalConfig.model_validate(
            {
                "datasets": [{"path": str(tiny_dataset)}],
                "rerankers": [{"name": "hosted", "kind": "http", "url": url, "api_key_env": key_env}],
            }
        )

    policy = ServicePolicy.for_service(config("https://api.example/v2/rerank"))
    assert policy.apply(config("https://api.example/v2/rerank"))
    with pytest.raises(PolicyError, match=r"^rerankers\.hosted: https://evil\.example/ with key variable COHERE_KEY"):
        policy.apply(config("https://evil.example/"))
    with pytest.raises(PolicyError, match="with key variable AWS_SECRET_ACCESS_KEY is not a rerank API"):
        policy.apply(config("https://api.example/v2/rerank", "AWS_SECRET_ACCESS_KEY"))
