"""What every contract shares: the strict base model and the field types users fill in (safe names, conditions,
measure names), validated where they are read."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from terazi.base.amounts import MOST_WHOLE
from terazi.base.paths import SLUG, SLUG_HELP, is_slug
from terazi.schemas.tables import CLEAN

BUNDLED_ENCODER = "bundled:all-MiniLM-L6-v2"
CONDITIONS = (CLEAN, "upper", "ascii_full", "ascii_partial", "typo", "colloquial", "mobile")
FIRST_STAGE = "first-stage"


def _slug(v: str) -> str:
    if not is_slug(v):
        raise ValueError(f"{v!r} is not a safe name: use {SLUG_HELP}")
    return v


SlugName = Annotated[
    str,
    AfterValidator(_slug),
    Field(json_schema_extra={"pattern": SLUG}, description=f"a name used in file names: {SLUG_HELP}"),
]
CONDITION_PATTERN = r"^(" + "|".join(CONDITIONS) + r")(\+(" + "|".join(CONDITIONS) + r"))*$"
Condition = Annotated[
    str,
    Field(
        pattern=CONDITION_PATTERN,
        description="one of " + ", ".join(CONDITIONS) + "; compose with '+', e.g. upper+typo",
        examples=["upper", "upper+typo"],
    ),
]
MeasureName = Annotated[
    str,
    Field(
        min_length=2,
        description="a measure with its cutoff, e.g. nDCG@10, RR@10, R@100, "
        "P@10, AP, Judged@10; RR(rel=2)@10 sets the relevance threshold",
        examples=["nDCG@10", "RR@10", "R@100"],
    ),
]


BENCHMARK = r"^[a-z0-9][a-z0-9-]{0,62}$"


class StrictModel(BaseModel):
    """A contract that refuses unknown fields, so a misspelt key is an error that names it, not a silent default, and
    NaN or infinite numbers (`.nan`, `.inf` in YAML), which no setting means and which would surface, if at all, as a
    NaN score after all the work."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @field_validator("*")
    @classmethod
    def _whole_numbers_in_range(cls, value: Any) -> Any:
        """A whole number is at most 2^53, as on the command line (`terazi.base.amounts`): beyond, no array holds it."""
        if type(value) is int and abs(value) > MOST_WHOLE:
            raise ValueError(f"{value:.3g} is too large (at most 2^53)")
        return value
