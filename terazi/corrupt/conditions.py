"""Query corruptions, the way people really type Turkish: the table of named conditions and how one is applied.

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
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from rapidfuzz.distance import OSA

from terazi.base.errors import ConfigError
from terazi.base.turkish import tr_lower
from terazi.corrupt.letters import ascii_full, ascii_partial, upper
from terazi.corrupt.mobile import colloquial, mobile
from terazi.corrupt.typo import typo
from terazi.schemas import CorruptionSpec
from terazi.schemas.tables import CLEAN

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
    "ascii_partial": Condition(
        "ascii_partial",
        lambda text, rng, spec: ascii_partial(text, rng, spec.ascii_partial_rate),
        lambda spec: True,
        lambda spec: {"ascii_partial_rate": spec.ascii_partial_rate},
    ),
    "typo": Condition(
        "typo",
        lambda text, rng, spec: typo(text, rng, spec.typo_rate, spec.typo_min_edits),
        lambda spec: True,
        lambda spec: {"typo_rate": spec.typo_rate, "typo_min_edits": spec.typo_min_edits},
    ),
    "colloquial": Condition("colloquial", lambda text, rng, spec: colloquial(text), _never),
    "mobile": Condition(
        "mobile",
        lambda text, rng, spec: mobile(text, rng, spec.mobile),
        _mobile_draws,
        lambda spec: {f"mobile.{k}": v for k, v in spec.mobile.model_dump().items()},
    ),
}


def sample_rng(seed: int, condition: str, query_id: str, sample: int) -> random.Random:
    """The generator of one variant: stable across processes and independent of other queries."""
    return random.Random(f"terazi|{seed}|{condition}|{query_id}|{sample}")


def parts(condition: str) -> list[Condition]:
    """`upper+typo` composes conditions left to right; each name must be known."""
    out = []
    for name in condition.split("+"):
        if name not in RULES:
            raise ConfigError(f"unknown condition {name!r}; known: {', '.join(RULES)} (compose with '+')")
        out.append(RULES[name])
    return out


def corrupt(
    text: str, condition: str, seed: int = 0, query_id: str = "", sample: int = 0, spec: CorruptionSpec | None = None
) -> str:
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
