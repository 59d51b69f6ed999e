"""Cost beside quality: warm throughput that a slow model load or a slow cache cannot change, figures remembered for
cached runs, the score identity that keeps precisions and devices apart, batch sizes from free GPU memory."""

from __future__ import annotations

import shutil
import time

import numpy as np

from terazi.models import costs
from terazi.present.labels import params_text, size_text, speed_text
from terazi.rerank import metering as row_costs
from terazi.rerank.backends import make_scorer
from terazi.rerank.backends.base import auto_batch, precision_of
from terazi.rerank.backends.torch_cross import TorchCrossEncoder
from terazi.rerank.pairs import Pair
from terazi.rerank.store import Scores
from terazi.schemas import CrossEncoderSpec, ModelCost
from tests.conftest import ONNX
from tests.stages import corpus_of, rerank_row, wrap_scorers
from tests.test_rerank import inputs


def spec(model: str, **kw) -> CrossEncoderSpec:
    return CrossEncoderSpec(**{"name": "ce", "kind": "cross-encoder", "model": model, "max_length": 64, **kw})


class SlowCache(Scores):
    """A score store on a slow disk: every write takes half a second."""

    def put_many(self, *a, **k):
        time.sleep(0.5)
        super().put_many(*a, **k)


def test_throughput_excludes_model_load_and_cache_io(tmp_path, tiny_dataset, tiny_cross_encoder, monkeypatch):
    import torch

    from terazi.rerank import stage

    ds, cands, variants, _ = inputs(tiny_dataset)
    monkeypatch.setattr(row_costs, "LATENCY_QUERIES", 0)  # no latency probe: the wall clock is load, writes, scoring
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: no stalls from cores shared with other processes

    def measured(name: str):
        """The row's cost as the flow records it (its chunks' meters) and its wall clock (plan to ranking)."""
        result, _ = rerank_row(
            ds, cands, variants, spec(tiny_cross_encoder, batch_size=8), tmp_path / name, rerank_depth=10
        )
        return result.cost, result

    fast, _ = measured("a")
    load = TorchCrossEncoder._load
    monkeypatch.setattr(TorchCrossEncoder, "_load", lambda self: (time.sleep(3), load(self))[1])
    monkeypatch.setattr(stage, "Scores", SlowCache)  # the store every step of the row opens
    try:
        slow, stats = measured("b")
    finally:
        torch.set_num_threads(threads)
    # 80 pairs in two blocks of 64 and 16 (two slow writes); the first pair is the untimed warm-up
    assert slow.items == fast.items == 79
    assert (
        stats.seconds - slow.seconds > 3 + 2 * 0.5 - 0.1
    )  # the wall clock sees the load and the writes, the meter not
    assert slow.per_second > fast.per_second / 4  # with the load in it, it would be about 100 times slower


def test_a_cached_run_reports_the_figures_of_the_run_that_scored(
    tmp_path, tiny_dataset, tiny_cross_encoder, monkeypatch
):
    """A row's cost as the flow settles it: metered chunks, the latency probe in the last one, then the cost step."""
    from terazi.rerank import metering as rerank_costs

    monkeypatch.setattr(rerank_costs, "MIN_PROBE_S", 60.0)  # a loaded machine would stop the probe after 2 queries
    ds, cands, variants, _ = inputs(tiny_dataset)
    s1, _ = rerank_row(ds, cands, variants, spec(tiny_cross_encoder), tmp_path, rerank_depth=10)
    c1 = s1.cost
    assert not c1.cached and c1.items == s1.pairs_scored - 1 == 79
    assert c1.latency_queries == 4  # the tiny set has 4 queries, all timed within the budget the test gives
    assert 0 < c1.latency_p50_ms <= c1.latency_p95_ms
    assert c1.params > 1_000_000 and c1.size_bytes > 1_000_000 and (c1.device, c1.precision) == ("cpu", "fp32")

    built = []  # every scorer the second run builds
    wrap_scorers(lambda s: built.append(s) or s, monkeypatch.setattr)
    s2, _ = rerank_row(ds, cands, variants, spec(tiny_cross_encoder), tmp_path, rerank_depth=10)
    c2 = s2.cost
    assert s2.pairs_scored == 0 and built and all(s.inner._model is None for s in built)  # nothing scored or loaded
    assert c2.cached and (c2.items, c2.seconds, c2.latency_p50_ms) == (c1.items, c1.seconds, c1.latency_p50_ms)
    assert speed_text(c2).startswith("cached: ") and speed_text(c2).endswith("pairs/s (cpu fp32)")

    other = tmp_path / "other-cache"  # never scored anywhere: size only, no speed
    fresh = make_scorer(spec(tiny_cross_encoder), corpus_of(tiny_dataset, other), "", True, str(other))
    c3 = row_costs.settle(fresh.identity, [], 0, str(other), lambda: fresh)
    assert c3.cached and c3.items == 0 and c3.params == c1.params and speed_text(c3) == "cached"


def test_runs_accumulate_in_the_store(tmp_path):
    store = costs.CostStore(tmp_path)
    store.add("m", ModelCost(items=100, seconds=2.0, latency_p50_ms=5.0, latency_queries=3))
    now = store.add("m", ModelCost(items=50, seconds=0.5))
    assert (now.items, now.seconds, now.latency_p50_ms) == (150, 2.5, 5.0) and now.per_second == 60
    assert store.get("other") is None


def test_a_damaged_cost_file_is_ignored_and_written_anew(tmp_path, caplog):
    store = costs.CostStore(tmp_path)
    store.add("m", ModelCost(items=10, seconds=1.0))
    for damage in ("{not json", '{"identity": "m", "cost": {"items": "many"}}', "[]"):
        store._path("m").write_text(damage, encoding="utf-8")
        assert store.get("m") is None and "damaged" in caplog.text
        assert store.add("m", ModelCost(items=5, seconds=1.0)).items == 5 and store.get("m").items == 5


def _add_many(folder: str) -> None:
    store = costs.CostStore(folder)
    for _ in range(40):
        store.add("m", ModelCost(items=1, seconds=0.001))


def test_runs_finishing_together_both_count(tmp_path):
    """Runs that share a cache folder fold their figures in turn: four processes adding at once lose nothing."""
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(4) as pool:
        pool.map(_add_many, [str(tmp_path)] * 4)
    assert costs.CostStore(tmp_path).get("m").items == 160


def test_costs_combine_over_datasets():
    a = ModelCost(items=100, seconds=1.0, latency_queries=2, latency_p50_ms=7.0)
    b = ModelCost(items=300, seconds=1.0, latency_queries=5, latency_p50_ms=9.0)
    cached = ModelCost(items=1000, seconds=1.0, cached=True)
    both = costs.combine([a, b, cached])
    assert (both.items, both.seconds, both.per_second, both.latency_p50_ms, both.cached) == (
        400,
        2.0,
        200.0,
        9.0,
        False,
    )
    only_cached = costs.combine([cached, None])
    assert only_cached.cached and only_cached.per_second == 1000
    assert costs.combine([None, None]) is None


def test_figures_print_as_the_card_prints_them():
    assert [params_text(n) for n in (568_000_000, 4_020_000_000, 278_000_000, 22_713_216, None)] == [
        "568M",
        "4.0B",
        "278M",
        "22.7M",
        "–",
    ]
    assert [size_text(n) for n in (570_000_000, 2_272_000_000, 90_868_376, None)] == [
        "570 MB",
        "2.3 GB",
        "90.9 MB",
        "–",
    ]
    cost = ModelCost(items=30, seconds=10.0, device="cpu", precision="int8")
    assert speed_text(cost) == "3.0 pairs/s (cpu int8)"
    assert speed_text(cost, "tr") == "3.0 çift/sn (cpu int8)"
    assert speed_text(None) == "–"


def test_identity_names_everything_that_changes_a_score(tmp_path, tiny_dataset, tiny_cross_encoder):
    from terazi.models.refs import resolve

    corpus = corpus_of(tiny_dataset, tmp_path)
    settings = ({}, {"precision": "bf16"}, {"device": "mps"}, {"max_length": 128}) + (
        ({"backend": "onnx"},) if ONNX else ()
    )
    ids = {make_scorer(spec(tiny_cross_encoder, **kw), corpus, "", True, str(tmp_path)).identity: kw for kw in settings}
    assert len(ids) == len(settings)
    base = next(i for i, kw in ids.items() if not kw)
    assert base.startswith(f"cross-encoder:{resolve(tiny_cross_encoder).identity}:torch:fp32@cpu:len=64:act=Sigmoid")
    assert (
        any(":bf16@cpu:" in i for i in ids) and any(":fp32@mps:" in i for i in ids) and any("len=128" in i for i in ids)
    )
    identity_model = tmp_path / "identity-activation"  # same weights, another activation saved in its config
    shutil.copytree(tiny_cross_encoder, identity_model)
    cfg = (identity_model / "config.json").read_text()
    (identity_model / "config.json").write_text(
        cfg.replace(
            '"architectures"',
            '"sentence_transformers": {"activation_fn": "torch.nn.modules.linear.Identity"},\n  "architectures"',
            1,
        )
    )
    other = make_scorer(spec(str(identity_model)), corpus, "", True, str(tmp_path))
    assert other.identity.endswith("act=Identity")
    pairs = [Pair("soru", "d", "belge")]
    logit = other.score(pairs)[0]
    sig = make_scorer(spec(tiny_cross_encoder), corpus, "", True, str(tmp_path)).score(pairs)[0]
    assert abs(1 / (1 + np.exp(-logit)) - sig) < 1e-6  # the identity says what the scorer does


def test_precision_and_cuda_batch_size(tmp_path, tiny_dataset, tiny_cross_encoder, monkeypatch):
    import torch

    assert precision_of("auto", "cpu") == "fp32" and precision_of("auto", "cuda:1") == "fp16"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert precision_of("auto", "cuda", llm=True) == "bf16" and precision_of("fp32", "cuda", llm=True) == "fp32"
    cfg = {"hidden_size": 1024, "num_attention_heads": 16, "intermediate_size": 4096}
    sizes = [auto_batch(gib << 30, 1 << 30, cfg, 512, 2) for gib in (4, 16, 80)]
    assert sizes[0] < sizes[1] <= sizes[2] == 512 and all(s & (s - 1) == 0 for s in sizes)  # powers of two, capped
    assert auto_batch(16 << 30, 1 << 30, cfg, 128, 2) > sizes[1]  # shorter pairs, bigger batches
    assert auto_batch(1 << 30, 1 << 30, cfg, 512, 2) == 1  # no room: one at a time
    # on a CUDA device the backend sizes its batches from the free memory, without loading the model
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (16 << 30, 80 << 30))
    scorer = make_scorer(
        spec(tiny_cross_encoder, device="cuda"), corpus_of(tiny_dataset, tmp_path), "", True, str(tmp_path)
    )
    assert ":fp16@cuda:" in scorer.identity and scorer.inner._model is None
    from terazi.models.refs import model_config

    expected = auto_batch(16 << 30, 2 * scorer.inner.params(), model_config(scorer.inner.ref), 64, 2)
    assert scorer.batch_size == expected == 512 and scorer.inner._model is None


def test_latency_is_timed_on_the_texts_the_model_is_given():
    """The latency probe sees pairs cut to the model's character budget, as every scoring call does."""
    from terazi.models.text import CHARS_PER_TOKEN
    from terazi.rerank.backends.base import Metered

    class Longest:
        identity, max_length, batch_size = "longest", 8, 4

        def __init__(self):
            self.seen = 0

        def score(self, pairs):
            self.seen = max([self.seen, *(len(p.query) + len(p.doc) for p in pairs)])
            return np.zeros(len(pairs))

    inner = Longest()
    metered = Metered(inner)
    metered.score([Pair("q" * 500, "d1", "x" * 5000)])
    metered.time_queries([[Pair("q" * 500, "d2", "y" * 5000), Pair("q", "d3", "z" * 5000)]], budget_s=1.0)
    assert len(metered.latencies_ms) == 1
    assert inner.seen == 2 * 8 * CHARS_PER_TOKEN
