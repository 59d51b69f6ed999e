"""What a model sees of a text: cut to the character budget of its `max_length` tokens before tokenisation.

Long texts cost what the model sees: a 1 MB document is not tokenised whole only for the tokenizer to keep its first
few hundred tokens. The first stage's encoder and every reranking backend cut the same way.
"""

from __future__ import annotations

CHARS_PER_TOKEN = 12  # far above the 3-6 characters a token covers in Turkish or English text


def clip(text: str, max_length: int | None) -> str:
    """`text` cut to the character budget of `max_length` tokens (unchanged when there is no limit)."""
    return text[: max_length * CHARS_PER_TOKEN] if max_length else text
