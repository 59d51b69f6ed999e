"""Turkish casing, transliteration and tokenising.

Python's `str.upper` turns i into I and `str.lower` turns I into i and İ into "i̇" (i plus a
combining dot), which is wrong for Turkish: here i ↔ İ and ı ↔ I.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

COMBINING_DOT = "\u0307"
TURKISH_LETTERS = "çğıöşüÇĞİÖŞÜ"
_ASCII = str.maketrans("çğıöşüÇĞİÖŞÜâîûÂÎÛ", "cgiosuCGIOSUaiuAIU")
_TOKEN = re.compile(r"\w+", re.UNICODE)
_LETTER = re.compile(r".[\u0300-\u036f]*", re.DOTALL)  # a character and the combining marks that follow it


def tr_upper(text: str) -> str:
    """UPPERCASE the Turkish way: i → İ, ı → I."""
    text = unicodedata.normalize("NFC", text).replace("i" + COMBINING_DOT, "i")
    return text.replace("i", "İ").replace("ı", "I").upper()


def tr_lower(text: str) -> str:
    """lowercase the Turkish way: İ → i, I → ı (and I + combining dot → i)."""
    text = unicodedata.normalize("NFC", text)
    text = text.replace("I" + COMBINING_DOT, "i").replace("İ", "i").replace("I", "ı")
    return text.lower().replace("i" + COMBINING_DOT, "i")


def seen_letters(text: str) -> list[str]:
    """The text's letters as people see them: NFC, each character with the combining marks NFC leaves after it. The
    lower case of İ in decomposed text is i + U+0307, which has no composed form: one letter, not an i and a mark."""
    return _LETTER.findall(unicodedata.normalize("NFC", text))


def to_ascii(text: str) -> str:
    """Strip Turkish letters to their base letters: ç ğ ı ö ş ü → c g i o s u (and capitals)."""
    return unicodedata.normalize("NFC", text).replace("i" + COMBINING_DOT, "i").translate(_ASCII)


@lru_cache(maxsize=8)
def _stemmer(language: str):
    import Stemmer

    return Stemmer.Stemmer(language)


def analyse(text: str, language: str = "turkish") -> list[str]:
    """Tokens for lexical matching: Turkish lowercasing, word characters, Snowball stems.

    Folding to ASCII after stemming makes "sehir" and "şehir" meet, which is what a search box
    has to do for people typing without Turkish characters. The stems are folded together, joined by
    spaces (a stem holds none, and nothing composes with a space): one call per text, not per token.
    """
    lowered = tr_lower(text) if language == "turkish" else text.lower()
    words = _TOKEN.findall(lowered)
    stems = _stemmer(language).stemWords(words)
    return to_ascii(" ".join(stems)).split(" ") if stems else []
