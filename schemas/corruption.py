"""Parameters of the query corruptions (terazi.corrupt; docs/corruptions.md says what each rule does and why)."""

from __future__ import annotations

from pydantic import Field

from terazi.schemas.fields import StrictModel


def _p(default: float, description: str) -> float:
    return Field(default, ge=0, le=1, description=description)


class MobileSpec(StrictModel):
    """Phone typing as a probabilistic model: how often each rule fires (docs/corruptions.md says why)."""

    lowercase: float = _p(0.9, "per query: the whole query typed in lowercase")
    ascii_query: float = _p(0.5, "per query: typed with no Turkish letters at all (ç ğ ı ö ş ü → c g i o s u)")
    ascii_letter: float = _p(0.3, "per Turkish letter, in the other queries: that letter typed as its base letter")
    apostrophe: float = _p(0.8, "per apostrophe before a suffix: dropped, the suffix joined (Ankara'da → Ankarada)")
    separator: float = _p(0.7, "per hyphen or slash between words or numbers: typed as a space (ve/veya → ve veya)")
    punctuation: float = _p(0.9, "per punctuation mark (? ! , ; : quotes, brackets, a final full stop): left out")
    particle: float = _p(0.5, "per question particle mı/mi/mu/mü: joined to the word before (geliyor mu → geliyormu)")
    verb: float = _p(
        0.5, "per verb: colloquial ending, -(ı)yor → -(ı)yo and, on listed verb stems, -acak/-ecek → -cak/-cek"
    )
    bir: float = _p(0.4, "per 'bir': typed 'bi'")
    bir_sey: float = _p(0.6, "per 'bir şey'/'birşey': typed 'bişey'")
    degil: float = _p(0.3, "per 'değil': typed 'diil'")
    ne_zaman: float = _p(0.1, "per 'ne zaman': typed 'ne zmn'")
    nasil: float = _p(0.1, "per 'nasıl': typed 'nsl'")
    nerede: float = _p(0.3, "per 'nerede': typed 'nerde'")
    slip: float = _p(0.05, "per word of 3+ letters: one letter replaced by a neighbouring key")


class CorruptionSpec(StrictModel):
    """Parameters of the query corruptions (see terazi.corrupt and docs/corruptions.md)."""

    samples: int = Field(1, ge=1, description="seeded samples per query for stochastic conditions")
    typo_rate: float = Field(
        0.05,
        gt=0,
        le=1,
        description="typo: expected edits per letter (a query of n letters gets typo_rate × n edits on average)",
    )
    typo_min_edits: int = Field(
        0,
        ge=0,
        le=5,
        description="typo: resample until at least this many edits (0: none forced, queries may stay unchanged)",
    )
    ascii_partial_rate: float = Field(0.5, gt=0, le=1, description="ascii_partial: share of Turkish letters stripped")
    mobile: MobileSpec = Field(default_factory=MobileSpec, description="mobile: probability of each phone-typing rule")
