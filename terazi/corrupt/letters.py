"""Case and letters: Turkish UPPERCASE (i → İ, ı → I) and Turkish letters stripped, all of them or each with a
probability."""

from __future__ import annotations

import random

from terazi.base.turkish import seen_letters, to_ascii, tr_upper


def upper(text: str, rng: random.Random | None = None) -> str:
    return tr_upper(text)


def ascii_full(text: str, rng: random.Random | None = None) -> str:
    return to_ascii(text)


def ascii_partial(text: str, rng: random.Random, rate: float = 0.5) -> str:
    # letter by letter, as people see letters (base.turkish.seen_letters): an NFD ş is s plus a combining cedilla,
    # which no letter rule sees, and the lower case of İ is i plus a combining dot even in NFC
    return "".join(to_ascii(ch) if rng.random() < rate else ch for ch in seen_letters(text))
