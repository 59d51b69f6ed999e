"""Phone typing: the colloquial word layer (verb endings, shortenings, joined particles) and mobile, a probabilistic
model of how people type on a phone (`MobileSpec`: each rule fires with its own probability; separators become
spaces or are dropped only where people do, digits never merge). docs/corruptions.md gives the rules and examples."""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Callable

from terazi.base.turkish import seen_letters, to_ascii, tr_lower, tr_upper
from terazi.corrupt.keyboard import is_upper, neighbour_key
from terazi.schemas import MobileSpec

# ---------------------------------------------------------------- colloquial rules (the word layer)

# Verb stems whose future form (-acak/-ecek) is a verb and nothing else, so its spoken form
# (-cak/-cek) cannot change what a query means. Left out on purpose: al (alacak, "receivable"),
# gel (gelecek, "future"), ye (yiyecek, "food"), iç (içecek, "drink"), aç (açacak, "opener"),
# yak (yakacak, "fuel"), giy (giyecek, "clothing"), öl (ölcek reads ölçek, "scale", without ç),
# git/et (spoken spellings vary: gidcek, gitcek, gidicek), and stems ending in a/e, whose spoken
# form also narrows the stem (başlayacak → başlıycak), which this model does not attempt.
FUTURE_STEMS_BACK = (
    "ol",
    "yap",
    "kal",
    "çık",
    "bak",
    "yaz",
    "sat",
    "bul",
    "kur",
    "dur",
    "otur",
    "sor",
    "anlat",
    "çalış",
    "başar",
    "kazan",
    "kapan",
    "koruy",
    "okuy",
    "uyuy",
)
FUTURE_STEMS_FRONT = ("ver", "gör", "bil", "bit", "düş", "değiş", "sür", "gir", "sev", "yürüy")
_FUTURE_ENDINGS = {
    "cak": "cak",
    "cağım": "cam",
    "caksın": "caksın",
    "cağız": "caz",
    "caklar": "caklar",
    "caktı": "caktı",
    "cek": "cek",
    "ceğim": "cem",
    "ceksin": "ceksin",
    "ceğiz": "cez",
    "cekler": "cekler",
    "cekti": "cekti",
}
_FUTURE = re.compile(
    r"\b(" + "|".join(FUTURE_STEMS_BACK) + r")a(cak|cağım|caksın|cağız|caklar|caktı)\b|"
    r"\b(" + "|".join(FUTURE_STEMS_FRONT) + r")e(cek|ceğim|ceksin|ceğiz|cekler|cekti)\b"
)
# The present continuous -(I)yor always follows a high vowel (yapıyor, geliyor, okuyor, görüyor)
# and no Turkish noun ends that way, so it marks a verb without a list. Endings as spoken.
_YOR_ENDINGS = {
    "": "",
    "um": "m",
    "sun": "n",
    "uz": "z",
    "sunuz": "nuz",
    "lar": "lar",
    "du": "du",
    "dum": "dum",
    "dun": "dun",
    "duk": "duk",
    "dular": "dular",
}
_YOR = re.compile(r"\b(\w+[ıiuü])yor(um|sunuz|sun|uz|lar|dular|dum|dun|duk|du)?\b")
_PARTICLE = re.compile(
    r"(?<=\w) (?=m[ıiuü](?:yım|yim|yum|yüm|sın|sin|sun|sün|yız|yiz|yuz|yüz|sınız|siniz|sunuz|"
    r"sünüz|dır|dir|dur|dür|ydı|ydi|ydu|ydü)?\b)"
)

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
    if len(letters) > 1 and all(is_upper(c) for c in letters):
        return tr_upper(new)
    if new and letters and is_upper(old[0]):
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
        pieces += [text[last : m.start()], _recase(repl(m), text[m.start() : m.end()])]
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
        out = "".join(
            to_ascii(ch) if to_ascii(ch) != ch and rng.random() < spec.ascii_letter else ch for ch in seen_letters(out)
        )
    words = out.split(" ")
    for k, w in enumerate(words):
        if len(w) >= 3 and w.isalpha() and rng.random() < spec.slip:
            i = rng.randrange(len(w))
            key = neighbour_key(w[i], rng, ascii_only=ascii_query)
            if key:
                words[k] = w[:i] + key + w[i + 1 :]
    return " ".join(words)
