"""Model references: local folders become absolute, hub ids fail fast offline, identities are stable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from terazi.models.refs import ModelError, resolve
from terazi.schemas import BUNDLED_ENCODER


def test_bundled_encoder_is_an_absolute_local_folder(minilm_path):
    ref = resolve(BUNDLED_ENCODER)
    assert ref.local and os.path.isabs(ref.location) and ref.location == minilm_path
    assert ref.identity == resolve(BUNDLED_ENCODER).identity and "#" in ref.identity


def test_relative_local_path_is_made_absolute(tmp_path, monkeypatch, tiny_cross_encoder):
    monkeypatch.chdir(os.path.dirname(tiny_cross_encoder))
    ref = resolve(os.path.basename(tiny_cross_encoder))
    assert ref.local and ref.location == tiny_cross_encoder  # not mistaken for a hub id


def test_identity_follows_the_files(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    first = resolve(str(folder)).identity
    (folder / "weights.bin").write_bytes(b"\0" * 10)
    from terazi.models.refs import _folder_hash

    _folder_hash.cache_clear()
    assert resolve(str(folder)).identity != first


def test_hub_id_offline_fails_without_a_lookup_and_names_the_model():
    with pytest.raises(ModelError, match="'org/some-reranker' is not a local folder and offline mode is on"):
        resolve("org/some-reranker", offline=True)


def test_hub_id_online_keeps_its_revision(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    ref = resolve("BAAI/bge-reranker-v2-m3", revision="abc123")
    assert not ref.local and ref.identity == "BAAI/bge-reranker-v2-m3@abc123"


def test_missing_local_folder_is_reported():
    with pytest.raises(ModelError, match="not found"):
        resolve("./no/such/model")


def test_weights_are_counted_from_the_safetensors_header(tiny_cross_encoder, minilm_path):
    from transformers import AutoModel, AutoModelForSequenceClassification

    from terazi.models.refs import weights_info

    for folder, cls in ((tiny_cross_encoder, AutoModelForSequenceClassification), (minilm_path, AutoModel)):
        params, size = weights_info(folder)
        model = cls.from_pretrained(folder)
        assert params == sum(p.numel() for p in model.parameters())  # MiniLM's file also holds int64 position ids
        assert size == sum(p.stat().st_size for p in Path(folder).glob("*.safetensors"))
    assert weights_info(Path(tiny_cross_encoder).parent) == (None, None)  # no weights there


def test_a_models_files_and_config_are_read_without_loading_it(tiny_cross_encoder):
    from terazi.models.refs import model_config, model_file

    ref = resolve(tiny_cross_encoder)
    assert model_config(ref)["num_labels" if "num_labels" in model_config(ref) else "id2label"]
    assert model_file(ref, "config.json") == Path(tiny_cross_encoder) / "config.json"
    assert model_file(ref, "onnx/model.onnx", required=False) is None
    with pytest.raises(ModelError, match="has no file 'onnx/model.onnx'"):
        model_file(ref, "onnx/model.onnx")
