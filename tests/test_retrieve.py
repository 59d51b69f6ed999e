"""Frozen first stage: stable fingerprints, reuse, and sensitivity to corpus, encoder and depth."""

from __future__ import annotations

import json
import shutil

import polars as pl
import pytest

from terazi.corrupt.variants import corrupt_queries
from terazi.data.loading import load_dataset
from terazi.schemas import CorruptionSpec, DatasetSpec, EncoderSpec
from tests.stages import first_stage


def prepare(root, out):
    ds = load_dataset(DatasetSpec(path=str(root), name="tiny"))
    vs = [corrupt_queries(ds, c, CorruptionSpec(), 13, str(out)) for c in ("clean", "upper")]
    return ds, vs


def test_fingerprint_stable_and_reused(tmp_path, tiny_dataset):
    ds, vs = prepare(tiny_dataset, tmp_path / "run")
    a = first_stage(ds, vs, EncoderSpec(), 10, str(tmp_path / "c1"), offline=True)
    b = first_stage(ds, vs, EncoderSpec(), 10, str(tmp_path / "c1"), offline=True)
    assert not a.reused and b.reused and a.fingerprint == b.fingerprint
    fresh = first_stage(ds, vs, EncoderSpec(), 10, str(tmp_path / "c2"), offline=True)  # recomputed from scratch
    assert not fresh.reused and fresh.fingerprint == a.fingerprint
    cands = pl.read_parquet(a.path)
    assert cands.group_by("condition", "query_id").len()["len"].to_list() == [10] * 8
    assert (tmp_path / "c1" / "candidates" / a.lookup_key / "runs" / "upper.trec").is_file()
    assert a.recall["clean"] > 0 and a.index == {"type": "IndexFlatIP"}
    manifest = json.loads((tmp_path / "c1" / "candidates" / a.lookup_key / "manifest.json").read_text())
    assert manifest["fingerprint"] == a.fingerprint and manifest["faiss_version"]

    # named by fingerprint: reused as it is, even with another encoder in the config
    named = first_stage(ds, vs, EncoderSpec(model="/nonexistent"), 10, str(tmp_path / "c1"), True, frozen=a.fingerprint)
    assert named.reused and named.fingerprint == a.fingerprint
    with pytest.raises(ValueError, match="no frozen candidates"):
        first_stage(ds, vs, EncoderSpec(), 10, str(tmp_path / "c1"), True, frozen="0" * 16)


def test_fingerprint_changes_with_corpus_encoder_and_depth(tmp_path, tiny_dataset, tiny_bi_encoder):
    ds, vs = prepare(tiny_dataset, tmp_path / "run")
    cache = str(tmp_path / "cache")
    base = first_stage(ds, vs, EncoderSpec(), 10, cache, offline=True).fingerprint
    assert first_stage(ds, vs, EncoderSpec(), 9, cache, offline=True).fingerprint != base
    assert first_stage(ds, vs, EncoderSpec(model=tiny_bi_encoder), 10, cache, offline=True).fingerprint != base
    hnsw = first_stage(ds, vs, EncoderSpec(index="hnsw"), 10, cache, offline=True)
    assert hnsw.index["type"] == "IndexHNSWFlat" and hnsw.index_recall == 1.0 and hnsw.index_recall_queries == 8
    assert first_stage(ds, vs, EncoderSpec(), 10, cache, offline=True).index_recall is None  # exact: nothing to measure

    changed = tmp_path / "changed"
    shutil.copytree(tiny_dataset, changed)
    with open(changed / "corpus.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps({"_id": "d13", "text": "Karadeniz'de hamsi kışın bol olur."}, ensure_ascii=False) + "\n")
    ds2, vs2 = prepare(changed, tmp_path / "run2")
    assert ds2.fingerprint != ds.fingerprint
    assert first_stage(ds2, vs2, EncoderSpec(), 10, cache, offline=True).fingerprint != base
