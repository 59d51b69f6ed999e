"""`Statistics`: how differences are judged, declared once for a run (`EvalConfig`), an analysis (`AnalyzeConfig`) and
`terazi compare`, with the same defaults everywhere (docs/statistics.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from terazi.base.errors import FieldsError
from terazi.schemas.fields import StrictModel

CORRECTIONS = {"none": "none", "holm": "Holm", "bh": "Benjamini–Hochberg"}
SCOPES = {"pair": "each pair's cells", "table": "every comparison of the table"}


class Statistics(StrictModel):
    """The bootstrap, the randomization test, the correction across comparisons, what decides a verdict, and the
    equivalence margin. Their fields sit flat in a config file (`confidence: 0.99`, `correction: holm`)."""

    seed: int = Field(
        13, ge=0, description="seed of the bootstrap and the randomization test (in a run, of the corruptions)"
    )
    bootstrap_resamples: int = Field(2000, ge=100, description="paired bootstrap resamples")
    confidence: float = Field(0.95, gt=0.5, lt=1, description="level of the intervals; α = 1 − confidence")
    holm: bool = Field(
        False,
        description="the older switch for Holm's correction across each pair's cells: verdicts from the "
        "Holm-adjusted bootstrap p-values, as before, and correction: holm, correction_scope: pair",
    )
    correction: Literal["none", "holm", "bh"] = Field(
        "bh",
        description="adjustment of the randomization test's p-values (p_adjusted): holm = family-wise error, "
        "bh = Benjamini–Hochberg false discovery rate, none",
    )
    correction_scope: Literal["pair", "table"] = Field(
        "table",
        description="the family a correction adjusts over: table = every comparison of comparisons.csv, "
        "pair = each pair of systems' cells",
    )
    verdict: Literal["interval", "p"] = Field(
        "interval",
        description="what decides better / worse: interval = the bootstrap interval excludes 0 (the card's method); "
        "p = p_adjusted < 1 − confidence (groups too)",
    )
    equivalence_margin: float = Field(
        0.01,
        ge=0,
        description="δ of the equivalence test, in the headline's units: a difference whose 1 − 2α bootstrap "
        "interval lies inside [−δ, δ] is 'equivalent within δ' (judged variants, terazi compare)",
    )
    randomization_resamples: int = Field(
        10_000,
        ge=100,
        description="random sign patterns of the paired randomization test (every pattern when that is fewer)",
    )

    @model_validator(mode="after")
    def _older_holm(self) -> Statistics:
        if self.holm:
            meant = {"correction": "holm", "correction_scope": "pair"}
            clash = [k for k in meant if k in self.model_fields_set and getattr(self, k) != meant[k]]
            if clash:
                raise FieldsError(("holm", *clash), "holm: true means correction: holm, correction_scope: pair")
            for k, v in meant.items():
                setattr(self, k, v)
        return self

    @property
    def alpha(self) -> float:
        return 1 - self.confidence

    def statistics(self) -> Statistics:
        """These settings alone (from a run's or an analysis' config)."""
        return Statistics.model_construct(**{k: getattr(self, k) for k in Statistics.model_fields})

    @property
    def adjustment(self) -> str:
        """The correction in words: `Holm across each pair's cells`, `none`."""
        if self.correction == "none":
            return "none"
        return f"{CORRECTIONS[self.correction]} across {SCOPES[self.correction_scope]}"

    def contract(self) -> str:
        """The line every table's contract prints: the test, the correction, what decided the verdicts."""
        correction = "no correction" if self.correction == "none" else self.adjustment
        decided = {
            "p": f"p_adjusted < {self.alpha:.3g}",
            "interval": "the bootstrap interval excluding 0"
            + (" (pairwise cells: Holm-adjusted bootstrap p-values)" if self.holm else ""),
        }[self.verdict]
        return (
            f"paired randomization test (sign flips balanced by dataset, {self.randomization_resamples} patterns or "
            f"every one), p_adjusted: {correction}; verdicts and groups decided by {decided}; equivalence margin "
            f"δ = {self.equivalence_margin:g}"
        )


DEFAULTS = Statistics()  # the defaults a statistic falls back to when called without a run's settings
