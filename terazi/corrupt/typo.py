"""Typos: keyboard-neighbour substitution on the Turkish Q layout, deletion, insertion, doubling, transposition and
spacing slips, each letter the site of one slip with a set probability, every edit recorded."""

from __future__ import annotations

import random
from dataclasses import dataclass

from terazi.base.turkish import tr_lower
from terazi.corrupt.keyboard import KEY_NEIGHBOURS, match_case, neighbour_key

# Relative weights of the slips at a letter picked for an edit, renormalised over those that fit
# there: a word's last letter before a space can lose that space, a letter inside a word can be
# followed by a stray space or swap with the next letter. docs/corruptions.md gives the measured mix.
TYPO_OPS = {
    "substitute": 0.35,
    "delete": 0.2,
    "insert": 0.12,
    "double": 0.12,
    "transpose": 0.12,
    "missing_space": 0.4,
    "extra_space": 0.04,
}


@dataclass(frozen=True)
class Edit:
    """One typo: op at character position `at` of the original text, `before` → `after`."""

    op: str  # substitute | delete | insert | double | transpose | missing_space | extra_space
    at: int
    before: str
    after: str


def _typo_ops(text: str, i: int) -> list[str]:
    ch, nxt = text[i], text[i + 1 : i + 2]
    word_letter = (i > 0 and text[i - 1].isalpha()) or nxt.isalpha()
    ops = ["double"]
    if tr_lower(ch) in KEY_NEIGHBOURS:
        ops += ["substitute", "insert"]
    if word_letter:
        ops.append("delete")  # never a whole one-letter word
    if nxt.isalpha():
        ops.append("extra_space")
        if tr_lower(nxt) != tr_lower(ch):
            ops.append("transpose")
    elif nxt == " " and text[i + 2 : i + 3].isalnum():
        ops.append("missing_space")
    return ops


def _apply(text: str, i: int, op: str, rng: random.Random) -> tuple[str, Edit]:
    ch = text[i]
    if op == "substitute":
        new = neighbour_key(ch, rng)
        return new, Edit(op, i, ch, new)
    if op == "insert":
        new = ch + neighbour_key(ch, rng)
        return new, Edit(op, i, ch, new)
    if op == "double":
        return ch + ch, Edit(op, i, ch, ch + ch)
    if op == "delete":
        return "", Edit(op, i, ch, "")
    if op == "extra_space":
        return ch + " ", Edit(op, i, ch, ch + " ")
    if op == "missing_space":
        return ch, Edit(op, i, ch + " ", ch)
    nxt = text[i + 1]  # transpose: the letters swap, each position keeps its case (Ren → Ern)
    new = match_case(tr_lower(nxt), ch) + match_case(tr_lower(ch), nxt)
    return new, Edit(op, i, ch + nxt, new)


def typo_with_edits(
    text: str, rng: random.Random, rate: float = 0.05, min_edits: int = 0, max_tries: int = 50
) -> tuple[str, list[Edit]]:
    """Typos and the edits that made them. Each letter is an edit site with probability `rate`; a
    transposition or a missing space also uses the character after it, which then gets no edit."""
    for _ in range(max_tries):
        pieces, edits, i = [], [], 0
        while i < len(text):
            if text[i].isalpha() and rng.random() < rate:
                ops = _typo_ops(text, i)
                op = rng.choices(ops, weights=[TYPO_OPS[o] for o in ops])[0]
                piece, edit = _apply(text, i, op, rng)
                pieces.append(piece)
                edits.append(edit)
                i += 2 if op in ("transpose", "missing_space") else 1
            else:
                pieces.append(text[i])
                i += 1
        if len(edits) >= min_edits:
            return "".join(pieces), edits
    return "".join(pieces), edits


def typo(text: str, rng: random.Random, rate: float = 0.05, min_edits: int = 0) -> str:
    return typo_with_edits(text, rng, rate, min_edits)[0]
