"""Records read from users' files (BEIR corpus, queries, graded judgments) and query variants.

Every id and text is checked here, once, as it is read: an id may not hold a control character (it would break the
line- and whitespace-separated TREC files every run writes), and texts are put in Unicode NFC, so that a letter
typed as a base letter plus a combining mark (NFD, as text copied from macOS often is) is the same letter to every
stage (corruptions, models, fingerprints). Text already in NFC is kept as it is, so its fingerprints do not change.
"""

from __future__ import annotations

import re
import unicodedata

from pydantic import BaseModel, ConfigDict, Field, field_validator

# C0 and C1 control characters but the tab (whitespace, which TREC files write percent-encoded)
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def checked_id(v: object) -> object:
    """An id as text (integer ids are accepted), refused when it holds a control character."""
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    if isinstance(v, str) and (bad := _CONTROL.search(v)):
        raise ValueError(
            f"id {v!r} holds the control character U+{ord(bad.group()):04X}; ids are written to "
            "line- and space-separated TREC files: remove it"
        )
    return v


def nfc(v: object) -> object:
    """Text in Unicode NFC (a string already in NFC is returned as it is)."""
    return unicodedata.normalize("NFC", v) if isinstance(v, str) else v


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, str_strip_whitespace=False)


class Document(_Strict):
    """One corpus line: `{"_id": ..., "title": ..., "text": ...}` (title optional)."""

    id: str = Field(alias="_id", min_length=1)
    title: str = ""
    text: str

    _id = field_validator("id", mode="before")(checked_id)
    _nfc = field_validator("title", "text", mode="before")(nfc)

    @property
    def full_text(self) -> str:
        """Title and text as the models see them."""
        return f"{self.title}. {self.text}" if self.title else self.text


class Query(_Strict):
    """One queries line: `{"_id": ..., "text": ...}`, optionally `"excluded_ids": [...]`: documents no ranking of this
    query may hold (BRIGHT's field; its `["N/A"]`, none, is read as none)."""

    id: str = Field(alias="_id", min_length=1)
    text: str = Field(min_length=1)
    excluded_ids: tuple[str, ...] = ()

    _id = field_validator("id", mode="before")(checked_id)
    _nfc = field_validator("text", mode="before")(nfc)

    @field_validator("excluded_ids", mode="before")
    @classmethod
    def _excluded(cls, v: object) -> object:
        if isinstance(v, (list, tuple)):
            return tuple(checked_id(x) for x in v if x != "N/A")
        if v is None:
            return ()
        raise ValueError(f"excluded_ids must be a list of document ids, got {type(v).__name__}")

    @field_validator("text")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("query text is blank")
        return v


class Judgment(_Strict):
    """One graded judgment: grade 0 is judged non-relevant, higher is more relevant."""

    query_id: str = Field(min_length=1)
    doc_id: str = Field(min_length=1)
    grade: int = Field(ge=0)

    @field_validator("grade", mode="before")
    @classmethod
    def _integer_grade(cls, v: object) -> object:
        if isinstance(v, str):
            try:
                return int(v.strip())
            except ValueError:
                raise ValueError(f"grade must be an integer, got {v!r}") from None
        if isinstance(v, float) and not v.is_integer():
            raise ValueError(f"grade must be an integer, got {v!r}")
        return v


class QueryVariant(_Strict):
    """A query as one condition turned it: what the first stage and the rerankers see."""

    query_id: str
    condition: str
    sample: int = Field(ge=0)
    seed: int
    text: str = Field(min_length=1)
    original: str
    changed: bool
