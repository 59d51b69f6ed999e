"""The Turkish Q keyboard: which keys neighbour a letter (a mobile slip, a typo), and keeping a letter's case."""

from __future__ import annotations

import random

from terazi.base.turkish import tr_lower, tr_upper

# Turkish Q layout, letter keys only; each row is offset like a real keyboard.
_ROWS = ("qwertyuıopğü", "asdfghjklşi", "zxcvbnmöç")
_OFFSETS = (0.0, 0.25, 0.75)


def _neighbours() -> dict[str, str]:
    pos = {ch: (r, c + _OFFSETS[r]) for r, row in enumerate(_ROWS) for c, ch in enumerate(row)}
    out = {}
    for a, (ra, ca) in pos.items():
        out[a] = "".join(b for b, (rb, cb) in pos.items() if b != a and abs(ra - rb) <= 1 and abs(ca - cb) <= 1.0)
    return out


KEY_NEIGHBOURS = _neighbours()


def is_upper(ch: str) -> bool:
    return ch != tr_lower(ch)


def match_case(ch: str, like: str) -> str:
    return tr_upper(ch) if is_upper(like) else ch


def neighbour_key(ch: str, rng: random.Random, ascii_only: bool = False) -> str | None:
    keys = [k for k in KEY_NEIGHBOURS.get(tr_lower(ch), "") if k.isascii() or not ascii_only]
    return match_case(rng.choice(keys), ch) if keys else None
