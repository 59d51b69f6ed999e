"""A config's errors, as `EvalConfig` reports them: each one names its field (a check across fields, all of
them, never `record`) and says what is wrong."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from terazi.base.errors import describe
from terazi.schemas import EvalConfig


def test_bad_config_is_rejected_with_a_readable_message():
    with pytest.raises(ValidationError, match="unknown condition"):
        EvalConfig.model_validate({"datasets": [{"path": "x"}], "conditions": ["shouting"]})
    with pytest.raises(ValidationError, match="rerank_depth"):
        EvalConfig.model_validate({"datasets": [{"path": "x"}], "depth": 10, "rerank_depth": 30})
    with pytest.raises(ValidationError, match="rows listed above it"):
        EvalConfig.model_validate(
            {
                "datasets": [{"path": "x"}],
                "rerankers": [
                    {"name": "h", "kind": "rrf", "fuse": ["first-stage", "b"]},
                    {"name": "b", "kind": "bm25"},
                ],
            }
        )
    with pytest.raises(ValidationError, match="rerankers.0.cross-encoder.model\n  Field required"):
        EvalConfig.model_validate({"datasets": [{"path": "x"}], "rerankers": [{"name": "c", "kind": "cross-encoder"}]})


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
    with pytest.raises(ValidationError) as e:
        EvalConfig.model_validate({"datasets": [{"path": str(tmp_path)}], **extra})
    text = describe(e.value)
    assert text.startswith(message) and "'record'" not in text, text
