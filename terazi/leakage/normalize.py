"""Texts → word tokens for the leakage check, in polars (Rust), one batch of texts at a time.

The rules, in order (the same for benchmark and training texts, so that a copy matches whatever way it was typed):

1. Unicode NFC, so a text in NFD (a letter plus a combining mark, as macOS file names and some PDFs give it) and
   the same text in NFC have the same letters;
2. casefolding in which dotted and dotless i are one letter: İ, I, ı and i all → i, then ordinary lowercasing. A
   copy in CAPITALS matches however it was cased: Turkish casing (`gecesi` → `GECESİ`) and every other tool's
   (`gecesi` → `GECESI`, which Turkish lowercasing would read as `gecesı`) alike;
3. with `fold_ascii`, Turkish letters to their base letters, as `terazi.base.turkish.to_ascii`: ç ğ ö ş ü â î û →
   c g o s u a i u (a copy typed on a keyboard without Turkish letters matches);
4. apostrophes dropped without a trace, so a suffix stays on its word whichever apostrophe was typed, or none
   (İstanbul'da, İstanbul’da and Istanbulda give one token);
5. tokens: runs of letters, combining marks and digits; every other character (punctuation, symbols, spaces,
   underscores) only separates tokens.
"""

from __future__ import annotations

import polars as pl

_APOSTROPHES = "['’‘ʼ`´]"
_TOKEN = r"[\p{L}\p{M}\p{N}]+"
_NEEDS_NFC = r"[^\x00-\x{2FF}]"
_ASCII_FROM, _ASCII_TO = list("çğöşüâîû"), list("cgosuaiu")  # lowercase only: rule 3 runs after rule 2


def _folded(texts: pl.Expr, fold_ascii: bool) -> pl.Expr:
    # after NFC, I + combining dot is İ (Unicode lowercasing would turn it into i + combining dot); an i + combining
    # dot already there (what Python's str.lower makes of İ) is an i
    e = (
        texts.str.replace_many(["İ", "I", "ı"], ["i", "i", "i"])
        .str.to_lowercase()
        .str.replace_all("i\u0307", "i", literal=True)
    )
    if fold_ascii:
        e = e.str.replace_many(_ASCII_FROM, _ASCII_TO)
    return e.str.replace_all(_APOSTROPHES, "")


def _nfc(texts: pl.Series) -> pl.Series:
    """NFC, computed only for the texts that have a character from U+0300 on: below it (Latin, with every Turkish
    letter) no character is changed by NFC, and most texts need no work."""
    texts = texts.cast(pl.Utf8).fill_null("")
    rows = texts.str.contains(_NEEDS_NFC).to_numpy().nonzero()[0]
    if len(rows):
        texts = texts.clone().scatter(rows, texts.gather(rows).str.normalize("NFC"))
    return texts


def tokens(texts: pl.Series, fold_ascii: bool = False) -> pl.Series:
    """Each text's tokens (a list[str] column), by the rules above."""
    frame = pl.DataFrame({"t": _nfc(texts)})
    return frame.select(_folded(pl.col("t"), fold_ascii).str.extract_all(_TOKEN)).to_series()


def joined(texts: pl.Series, fold_ascii: bool = False) -> pl.Series:
    """Each text's tokens joined by single spaces: the form in which queries are compared as repeats."""
    return tokens(texts, fold_ascii).list.join(" ")
