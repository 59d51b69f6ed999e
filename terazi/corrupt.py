"""Query corruptions: the way people really type Turkish.

Each condition is a pure function of (text, rng, parameters). Deterministic conditions ignore the
random generator; stochastic ones draw from a generator seeded by (seed, condition, query id,
sample), so a query's variant does not depend on which other queries are in the set.

Conditions
- ``clean``: the query as written.
- ``upper``: Turkish UPPERCASE (i → İ, ı → I).
- ``ascii_full``: every Turkish letter stripped (ç ğ ı ö ş ü → c g i o s u, capitals too).
- ``ascii_partial``: each Turkish letter stripped with probability ``rate``.
- ``typo``: each word of 3+ letters, with probability ``rate``, gets one edit: a Turkish-Q
  keyboard neighbour substitution, a deletion, an insertion of a neighbour key, or a
  transposition of two adjacent letters. Resampled when nothing changed.
- ``colloquial``: spoken-style spellings (see ``COLLOQUIAL_RULES``).
- ``mobile``: colloquial spellings, lowercase, no Turkish letters, punctuation and apostrophes
  dropped, and with probability ``slip_rate`` per word one neighbour-key slip.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Callable

from terazi.turkish import to_ascii, tr_lower, tr_upper

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

# (pattern, replacement) applied in order to lowercase text; word-boundary aware.
COLLOQUIAL_RULES: tuple[tuple[str, str], ...] = (
    (r"\bbir şey\b", "bişey"),
    (r"\bbirşey\b", "bişey"),
    (r"\bherhalde\b", "heralde"),
    (r"\bdeğil\b", "diil"),
    (r"\btamam\b", "tmm"),
    (r"\bteşekkürler\b", "tşk"),
    (r"\bmerhaba\b", "mrb"),
    (r"\bne zaman\b", "ne zmn"),
    (r"(\w)yorum\b", r"\1yom"),
    (r"(\w)yorsun\b", r"\1yon"),
    (r"(\w)yoruz\b", r"\1yoz"),
    (r"(\w)yor\b", r"\1yo"),
    (r"(\w)(a|e)cağım\b", r"\1\2cam"),
    (r"(\w)(e)ceğim\b", r"\1\2cem"),
    (r"(\w)acak\b", r"\1ıcak"),
    (r"(\w) (mı|mi|mu|mü)\b", r"\1\2"),
    (r"(\w) (mısın|misin|musun|müsün)\b", r"\1\2"),
    (r"\bbir\b", "bi"),
)
_COLLOQUIAL = tuple((re.compile(p), r) for p, r in COLLOQUIAL_RULES)
_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Edit:
    """One typo edit inside one word: op at character position `at` of the word."""

    word: int
    op: str  # substitute | delete | insert | transpose
    at: int
    before: str
    after: str


def upper(text: str, rng: random.Random | None = None) -> str:
    return tr_upper(text)


def ascii_full(text: str, rng: random.Random | None = None) -> str:
    return to_ascii(text)


def ascii_partial(text: str, rng: random.Random, rate: float = 0.5) -> str:
    return "".join(to_ascii(ch) if rng.random() < rate else ch for ch in text)


def colloquial(text: str, rng: random.Random | None = None) -> str:
    """Spoken-style spellings on a Turkish-lowercased view; words the rules leave keep their case."""
    out = text
    for pattern, repl in _COLLOQUIAL:
        out = _sub_caseless(pattern, repl, out)
    return out


def _sub_caseless(pattern: re.Pattern, repl: str, text: str) -> str:
    # Match on the Turkish-lowercased text (same length as the original for Turkish letters),
    # replace those spans only.
    low = tr_lower(text)
    if len(low) != len(text):
        return pattern.sub(repl, low)
    pieces, last = [], 0
    for m in pattern.finditer(low):
        pieces.append(text[last : m.start()])
        pieces.append(m.expand(repl))
        last = m.end()
    pieces.append(text[last:])
    return "".join(pieces)


def _match_case(ch: str, like: str) -> str:
    return tr_upper(ch) if like != tr_lower(like) else ch


def _one_edit(word: str, rng: random.Random, index: int) -> tuple[str, Edit]:
    ops = ["substitute", "delete", "insert"]
    if any(word[i] != word[i + 1] for i in range(len(word) - 1)):
        ops.append("transpose")
    op = rng.choice(ops)
    if op == "transpose":
        spots = [i for i in range(len(word) - 1) if word[i] != word[i + 1]]
        i = rng.choice(spots)
        new = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        return new, Edit(index, op, i, word[i : i + 2], new[i : i + 2])
    if op == "delete":
        i = rng.randrange(len(word))
        return word[:i] + word[i + 1 :], Edit(index, op, i, word[i], "")
    i = rng.randrange(len(word))
    base = tr_lower(word[i])
    keys = KEY_NEIGHBOURS.get(base, "") or KEY_NEIGHBOURS["a"]
    ch = _match_case(rng.choice(keys), word[i])
    if op == "insert":
        return word[: i + 1] + ch + word[i + 1 :], Edit(index, op, i + 1, "", ch)
    return word[:i] + ch + word[i + 1 :], Edit(index, op, i, word[i], ch)


def typo_with_edits(text: str, rng: random.Random, rate: float = 0.15, max_tries: int = 20) -> tuple[str, list[Edit]]:
    """Typos and the edits that made them; words shorter than 3 letters are left alone."""
    spans = [m.span() for m in _WORD.finditer(text) if m.end() - m.start() >= 3 and m.group().isalpha()]
    if not spans:
        return text, []
    for _ in range(max_tries):
        pieces, edits, last = [], [], 0
        for k, (a, b) in enumerate(spans):
            pieces.append(text[last:a])
            word = text[a:b]
            if rng.random() < rate:
                word, edit = _one_edit(word, rng, k)
                edits.append(edit)
            pieces.append(word)
            last = b
        pieces.append(text[last:])
        out = "".join(pieces)
        if out != text:
            return out, edits
    return text, []


def typo(text: str, rng: random.Random, rate: float = 0.15) -> str:
    return typo_with_edits(text, rng, rate)[0]


def mobile(text: str, rng: random.Random, slip_rate: float = 0.05) -> str:
    """Phone typing: colloquial, lowercase, no Turkish letters or punctuation, the odd slip."""
    out = to_ascii(tr_lower(colloquial(text)))
    out = " ".join(_PUNCT.sub("", out).split())
    words = out.split(" ")
    for k, w in enumerate(words):
        if len(w) >= 3 and w.isalpha() and rng.random() < slip_rate:
            i = rng.randrange(len(w))
            keys = "".join(c for c in KEY_NEIGHBOURS.get(w[i], "") if c.isascii())
            if keys:
                words[k] = w[:i] + rng.choice(keys) + w[i + 1 :]
    return " ".join(words)


@dataclass(frozen=True)
class Condition:
    name: str
    fn: Callable[..., str]
    stochastic: bool
    params: tuple[str, ...] = ()


CONDITIONS: dict[str, Condition] = {
    "clean": Condition("clean", lambda text, rng=None: text, False),
    "upper": Condition("upper", upper, False),
    "ascii_full": Condition("ascii_full", ascii_full, False),
    "ascii_partial": Condition("ascii_partial", ascii_partial, True, ("rate",)),
    "typo": Condition("typo", typo, True, ("rate",)),
    "colloquial": Condition("colloquial", colloquial, False),
    "mobile": Condition("mobile", mobile, True, ("slip_rate",)),
}


def sample_rng(seed: int, condition: str, query_id: str, sample: int) -> random.Random:
    """The generator of one variant: stable across processes and independent of other queries."""
    return random.Random(f"terazi|{seed}|{condition}|{query_id}|{sample}")


def parts(condition: str) -> list[Condition]:
    """`upper+typo` composes conditions left to right; each name must be known."""
    out = []
    for name in condition.split("+"):
        if name not in CONDITIONS:
            raise ValueError(f"unknown condition {name!r}; known: {sorted(CONDITIONS)} (compose with '+')")
        out.append(CONDITIONS[name])
    return out


def corrupt(text: str, condition: str, seed: int = 0, query_id: str = "", sample: int = 0, **params: float) -> str:
    """One variant of `text`; never empty (an emptied query is returned unchanged)."""
    out = text
    for cond in parts(condition):
        kwargs = {k: v for k, v in params.items() if k in cond.params}
        out = cond.fn(out, sample_rng(seed, cond.name, query_id, sample), **kwargs)
    return out if out.strip() else text


def samples_for(condition: str, samples: int, **params: float) -> int:
    """How many samples a condition needs: 1 when it is deterministic."""
    for cond in parts(condition):
        if cond.stochastic and not (cond.name == "mobile" and params.get("slip_rate", 0.05) == 0):
            return samples
    return 1
