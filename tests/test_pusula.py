"""configs/pusula.yaml reproduces the Kalbur card's setup and is a valid EvalConfig."""

from __future__ import annotations

from pathlib import Path

from terazi.config.config_files import read_config_file
from terazi.schemas import EvalConfig

PRESET = Path(__file__).resolve().parents[1] / "configs" / "pusula.yaml"


def test_pusula_preset_is_the_cards_setup():
    config = EvalConfig.model_validate(read_config_file(PRESET))
    assert config.conditions == ["clean", "upper", "ascii_full", "mobile"]
    assert len(config.datasets) * len(config.conditions) == 20  # the card's 20 cells
    assert (config.depth, config.rerank_depth, config.headline) == (100, 30, "nDCG@10")
    out = [d for d in config.datasets if not d.in_ranking]
    assert [d.name for d in out] == ["msmarco-tr"] and "MS MARCO" in out[0].reason
    assert [d.name for d in config.datasets if d.in_ranking] == ["quora-tr", "fiqa-tr", "dmm", "arzuhal"]
    assert {r.max_length for r in config.rerankers} == {512} and all(
        r.kind == "cross-encoder" for r in config.rerankers
    )
    assert config.encoder.max_length == 512 and config.corruption.samples == 1
    assert (config.retention, config.featured, config.labels) == ("macro", "kalbur", "tr")
    assert all(d.path.startswith("/path/to/") for d in config.datasets)  # placeholders users replace
