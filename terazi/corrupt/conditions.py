"""Query corruptions: the way people really type Turkish.

Each condition is a pure function of (text, random generator, `CorruptionSpec`). Stochastic ones
draw from a generator seeded by (seed, condition, query id, sample), so a query's variant does not
depend on which other queries are in the set. docs/corruptions.md describes every rule, with the
probability it fires and examples.

Conditions
- ``clean``: the query as written.
- ``upper``: Turkish UPPERCASE (i → İ, ı → I).
- ``ascii_full``: every Turkish letter stripped (ç ğ ı ö ş ü → c g i o s u, capitals too).
- ``ascii_partial``: each Turkish letter stripped with probability ``ascii_partial_rate``.
- ``typo``: each letter, with probability ``typo_rate``, is the site of one slip (see ``TYPO_OPS``):
  expected edits per query = rate × letters, nothing forced unless ``typo_min_edits`` asks.
- ``colloquial``: every colloquial rule of mobile (verb endings, shortenings, joined particles),
  always, and nothing else.
- ``mobile``: phone typing as a probabilistic model (``MobileSpec``): each rule fires with its own
  probability; separators become spaces or are dropped only where people do, digits never merge.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from rapidfuzz.distance import OSA

from terazi.schemas import CorruptionSpec, MobileSpec
from terazi.schemas.tables import CLEAN
from terazi.turkish import seen_letters, to_ascii, tr_lower, tr_upper

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


def _is_upper(ch: str) -> bool:
    return ch != tr_lower(ch)


def _match_case(ch: str, like: str) -> str:
    return tr_upper(ch) if _is_upper(like) else ch


def _neighbour_key(ch: str, rng: random.Random, ascii_only: bool = False) -> str | None:
    keys = [k for k in KEY_NEIGHBOURS.get(tr_lower(ch), "") if k.isascii() or not ascii_only]
    return _match_case(rng.choice(keys), ch) if keys else None


# ---------------------------------------------------------------- deterministic conditions

def upper(text: str, rng: random.Random | None = None) -> str:
    return tr_upper(text)


def ascii_full(text: str, rng: random.Random | None = None) -> str:
    return to_ascii(text)


def ascii_partial(text: str, rng: random.Random, rate: float = 0.5) -> str:
    # letter by letter, as people see letters (terazi.turkish.seen_letters): an NFD ş is s plus a combining cedilla, which
    # no letter rule sees, and the lower case of İ is i plus a combining dot even in NFC
    return "".join(to_ascii(ch) if rng.random() < rate else ch for ch in seen_letters(text))


# ---------------------------------------------------------------- colloquial rules (mobile's word layer)

# Verb stems whose future form (-acak/-ecek) is a verb and nothing else, so its spoken form
# (-cak/-cek) cannot change what a query means. Left out on purpose: al (alacak, "receivable"),
# gel (gelecek, "future"), ye (yiyecek, "food"), iç (içecek, "drink"), aç (açacak, "opener"),
# yak (yakacak, "fuel"), giy (giyecek, "clothing"), öl (ölcek reads ölçek, "scale", without ç),
# git/et (spoken spellings vary: gidcek, gitcek, gidicek), and stems ending in a/e, whose spoken
# form also narrows the stem (başlayacak → başlıycak), which this model does not attempt.
FUTURE_STEMS_BACK = ("ol", "yap", "kal", "çık", "bak", "yaz", "sat", "bul", "kur", "dur", "otur", "sor", "anlat",
                     "çalış", "başar", "kazan", "kapan", "koruy", "okuy", "uyuy")
FUTURE_STEMS_FRONT = ("ver", "gör", "bil", "bit", "düş", "değiş", "sür", "gir", "sev", "yürüy")
_FUTURE_ENDINGS = {"cak": "cak", "cağım": "cam", "caksın": "caksın", "cağız": "caz", "caklar": "caklar",
                   "caktı": "caktı", "cek": "cek", "ceğim": "cem", "ceksin": "ceksin", "ceğiz": "cez",
                   "cekler": "cekler", "cekti": "cekti"}
_FUTURE = re.compile(r"\b(" + "|".join(FUTURE_STEMS_BACK) + r")a(cak|cağım|caksın|cağız|caklar|caktı)\b|"
                     r"\b(" + "|".join(FUTURE_STEMS_FRONT) + r")e(cek|ceğim|ceksin|ceğiz|cekler|cekti)\b")
# The present continuous -(I)yor always follows a high vowel (yapıyor, geliyor, okuyor, görüyor)
# and no Turkish noun ends that way, so it marks a verb without a list. Endings as spoken.
_YOR_ENDINGS = {"": "", "um": "m", "sun": "n", "uz": "z", "sunuz": "nuz", "lar": "lar", "du": "du", "dum": "dum",
                "dun": "dun", "duk": "duk", "dular": "dular"}
_YOR = re.compile(r"\b(\w+[ıiuü])yor(um|sunuz|sun|uz|lar|dular|dum|dun|duk|du)?\b")
_PARTICLE = re.compile(r"(?<=\w) (?=m[ıiuü](?:yım|yim|yum|yüm|sın|sin|sun|sün|yız|yiz|yuz|yüz|sınız|siniz|sunuz|"
                       r"sünüz|dır|dir|dur|dür|ydı|ydi|ydu|ydü)?\b)")

# (MobileSpec field, pattern on Turkish-lowercased text, replacement), applied in this order.
SHORTENINGS: tuple[tuple[str, str, str], ...] = (
    ("bir_sey", r"\bbir ?şey\b", "bişey"),
    ("bir", r"\bbir\b", "bi"),
    ("degil", r"\bdeğil\b", "diil"),
    ("ne_zaman", r"\bne zaman\b", "ne zmn"),
    ("nasil", r"\bnasıl\b", "nsl"),
    ("nerede", r"\bnerede\b", "nerde"),
)
_SHORTENINGS = tuple((field, re.compile(p), r) for field, p, r in SHORTENINGS)


def _recase(new: str, old: str) -> str:
    """Give a replacement the case of what it replaces: UPPER, Capitalised or as it is."""
    letters = [c for c in old if c.isalpha()]
    if len(letters) > 1 and all(_is_upper(c) for c in letters):
        return tr_upper(new)
    if new and letters and _is_upper(old[0]):
        return tr_upper(new[0]) + new[1:]
    return new


def _sub(pattern: re.Pattern, repl: Callable[[re.Match], str], text: str, p: float, rng: random.Random | None) -> str:
    """Replace matches found on the Turkish-lowercased text, each with probability p; keep case."""
    if p <= 0:
        return text
    low = tr_lower(text)
    if len(low) != len(text):  # an unusual code point changed length when lowercased: work in lowercase
        text = low
    pieces, last = [], 0
    for m in pattern.finditer(low):
        if rng is None and p < 1 or rng is not None and rng.random() >= p:
            continue
        pieces += [text[last:m.start()], _recase(repl(m), text[m.start():m.end()])]
        last = m.end()
    return "".join(pieces) + text[last:]


def _future(m: re.Match) -> str:
    stem, end = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    return stem + _FUTURE_ENDINGS[end]


def _word_rules(text: str, spec: MobileSpec, rng: random.Random | None) -> str:
    out = _sub(_YOR, lambda m: m.group(1) + "yo" + _YOR_ENDINGS[m.group(2) or ""], text, spec.verb, rng)
    out = _sub(_FUTURE, _future, out, spec.verb, rng)
    for field, pattern, repl in _SHORTENINGS:
        out = _sub(pattern, lambda m, r=repl: r, out, getattr(spec, field), rng)
    return _sub(_PARTICLE, lambda m: "", out, spec.particle, rng)


_ALWAYS = MobileSpec(**{name: 1.0 for name in MobileSpec.model_fields})


def colloquial(text: str, rng: random.Random | None = None) -> str:
    """Every colloquial rule of mobile, always: spoken verb endings, shortenings, joined particles."""
    return _word_rules(text, _ALWAYS, None)


# ---------------------------------------------------------------- mobile

_APOSTROPHE = re.compile(r"(?<=\w)['’‘`](?=[^\W\d_])")  # before a suffix: a letter follows
_KEPT_MARK = re.compile(r"(?<=\d)[.,](?=\d)|(?<=\w)\.(?=\w)")
_SEPARATOR = re.compile(r"(?<=\w)[-/–—](?=\w)")
_PUNCT = re.compile(r"""[?!.,;:…"“”„«»()\[\]{}'’‘`*_]|[-/–—](?!\d)""")
_GAP = "\0"  # where a mark was left out, until the spacing around it is settled
_GAPS = re.compile(r"[ \t\0]*\0[ \t\0]*")


def _separators(text: str, spec: MobileSpec, rng: random.Random) -> str:
    """Apostrophes before suffixes dropped, hyphens/slashes as spaces, punctuation left out; numbers intact."""
    keep = {m.start() for m in _KEPT_MARK.finditer(text)}  # 1.5, 2,5 and ankara.bel.tr stay as typed
    out = list(text)
    for m in _APOSTROPHE.finditer(text):
        keep.add(m.start())
        if rng.random() < spec.apostrophe:
            out[m.start()] = ""
    for m in _SEPARATOR.finditer(text):
        keep.add(m.start())
        if rng.random() < spec.separator:
            out[m.start()] = " "
    for m in _PUNCT.finditer(text):
        if m.start() not in keep and rng.random() < spec.punctuation:
            out[m.start()] = _GAP
    # Where marks were left out: one space between words (never a join), nothing at either end;
    # whitespace elsewhere stays as typed.
    return _GAPS.sub(lambda m: "" if m.start() == 0 or m.end() == len(m.string) else " ", "".join(out))


def mobile(text: str, rng: random.Random, spec: MobileSpec | None = None) -> str:
    """Phone typing: colloquial words, separators, lowercase, Turkish letters, slips, each with its probability."""
    spec, text = spec or MobileSpec(), unicodedata.normalize("NFC", text)  # its letter rules see composed letters
    lower = rng.random() < spec.lowercase
    ascii_query = rng.random() < spec.ascii_query
    out = _separators(_word_rules(text, spec, rng), spec, rng)
    if lower:
        out = tr_lower(out)
    if ascii_query:
        out = to_ascii(out)
    else:
        out = "".join(to_ascii(ch) if to_ascii(ch) != ch and rng.random() < spec.ascii_letter else ch
                      for ch in seen_letters(out))
    words = out.split(" ")
    for k, w in enumerate(words):
        if len(w) >= 3 and w.isalpha() and rng.random() < spec.slip:
            i = rng.randrange(len(w))
            key = _neighbour_key(w[i], rng, ascii_only=ascii_query)
            if key:
                words[k] = w[:i] + key + w[i + 1:]
    return " ".join(words)


# ---------------------------------------------------------------- typo

# Relative weights of the slips at a letter picked for an edit, renormalised over those that fit
# there: a word's last letter before a space can lose that space, a letter inside a word can be
# followed by a stray space or swap with the next letter. docs/corruptions.md gives the measured mix.
TYPO_OPS = {"substitute": 0.35, "delete": 0.2, "insert": 0.12, "double": 0.12, "transpose": 0.12,
            "missing_space": 0.4, "extra_space": 0.04}


@dataclass(frozen=True)
class Edit:
    """One typo: op at character position `at` of the original text, `before` → `after`."""

    op: str  # substitute | delete | insert | double | transpose | missing_space | extra_space
    at: int
    before: str
    after: str


def _typo_ops(text: str, i: int) -> list[str]:
    ch, nxt = text[i], text[i + 1:i + 2]
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
    elif nxt == " " and text[i + 2:i + 3].isalnum():
        ops.append("missing_space")
    return ops


def _apply(text: str, i: int, op: str, rng: random.Random) -> tuple[str, Edit]:
    ch = text[i]
    if op == "substitute":
        new = _neighbour_key(ch, rng)
        return new, Edit(op, i, ch, new)
    if op == "insert":
        new = ch + _neighbour_key(ch, rng)
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
    new = _match_case(tr_lower(nxt), ch) + _match_case(tr_lower(ch), nxt)
    return new, Edit(op, i, ch + nxt, new)


def typo_with_edits(text: str, rng: random.Random, rate: float = 0.05, min_edits: int = 0,
                    max_tries: int = 50) -> tuple[str, list[Edit]]:
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


# ---------------------------------------------------------------- conditions

@dataclass(frozen=True)
class Condition:
    """A named corruption: how it is applied, whether it draws random numbers, which settings it reads."""

    name: str
    apply: Callable[[str, random.Random, CorruptionSpec], str]
    stochastic: Callable[[CorruptionSpec], bool]
    params: Callable[[CorruptionSpec], dict[str, float]] = lambda spec: {}


def _never(spec: CorruptionSpec) -> bool:
    return False


def _mobile_draws(spec: CorruptionSpec) -> bool:
    return any(0 < p < 1 for p in spec.mobile.model_dump().values())


RULES: dict[str, Condition] = {  # one row per name of terazi.schemas.fields.CONDITIONS
    CLEAN: Condition(CLEAN, lambda text, rng, spec: text, _never),
    "upper": Condition("upper", lambda text, rng, spec: upper(text), _never),
    "ascii_full": Condition("ascii_full", lambda text, rng, spec: ascii_full(text), _never),
    "ascii_partial": Condition("ascii_partial", lambda text, rng, spec: ascii_partial(text, rng, spec.ascii_partial_rate),
                               lambda spec: True, lambda spec: {"ascii_partial_rate": spec.ascii_partial_rate}),
    "typo": Condition("typo", lambda text, rng, spec: typo(text, rng, spec.typo_rate, spec.typo_min_edits),
                      lambda spec: True,
                      lambda spec: {"typo_rate": spec.typo_rate, "typo_min_edits": spec.typo_min_edits}),
    "colloquial": Condition("colloquial", lambda text, rng, spec: colloquial(text), _never),
    "mobile": Condition("mobile", lambda text, rng, spec: mobile(text, rng, spec.mobile), _mobile_draws,
                        lambda spec: {f"mobile.{k}": v for k, v in spec.mobile.model_dump().items()}),
}


def sample_rng(seed: int, condition: str, query_id: str, sample: int) -> random.Random:
    """The generator of one variant: stable across processes and independent of other queries."""
    return random.Random(f"terazi|{seed}|{condition}|{query_id}|{sample}")


def parts(condition: str) -> list[Condition]:
    """`upper+typo` composes conditions left to right; each name must be known."""
    out = []
    for name in condition.split("+"):
        if name not in RULES:
            raise ValueError(f"unknown condition {name!r}; known: {sorted(RULES)} (compose with '+')")
        out.append(RULES[name])
    return out


def corrupt(text: str, condition: str, seed: int = 0, query_id: str = "", sample: int = 0,
            spec: CorruptionSpec | None = None) -> str:
    """One variant of `text`; every part of a composed condition reads its own settings from `spec`.
    Never empty: an emptied query is returned unchanged."""
    spec = spec or CorruptionSpec()
    out = text
    for cond in parts(condition):
        out = cond.apply(out, sample_rng(seed, cond.name, query_id, sample), spec)
    return out if out.strip() else text


def condition_params(condition: str, spec: CorruptionSpec | None = None) -> dict[str, float]:
    """The settings every part of `condition` reads, as recorded with its variants."""
    spec = spec or CorruptionSpec()
    return {k: v for cond in parts(condition) for k, v in cond.params(spec).items()}


def samples_for(condition: str, samples: int, spec: CorruptionSpec | None = None) -> int:
    """How many samples a condition needs: 1 when no part of it draws random numbers."""
    spec = spec or CorruptionSpec()
    return samples if any(cond.stochastic(spec) for cond in parts(condition)) else 1


# ---------------------------------------------------------------- measuring what a condition did

def changed(original: str, variant: str) -> bool:
    """Whether a variant differs from its query as text (canonically composed, so a mere
    re-encoding of the same letters is not a change)."""
    return unicodedata.normalize("NFC", original) != unicodedata.normalize("NFC", variant)


def letters(text: str) -> int:
    return sum(ch.isalpha() for ch in text)


def edit_distance(original: str, variant: str) -> int:
    """Character edits from a query to its variant, case ignored: optimal-string-alignment distance
    (insertions, deletions, substitutions, adjacent transpositions) between the Turkish-lowercased texts."""
    return OSA.distance(tr_lower(original), tr_lower(variant))


def edit_rate(pairs: list[tuple[str, str]]) -> float:
    """Effective edit rate of (original, variant) pairs: all edits ÷ all letters of the originals."""
    n = sum(letters(o) for o, _ in pairs)
    return sum(edit_distance(o, v) for o, v in pairs) / n if n else 0.0
