"""Records read from users' files (BEIR corpus, queries, graded judgments) and query variants."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, str_strip_whitespace=False)


class Document(_Strict):
    """One corpus line: `{"_id": ..., "title": ..., "text": ...}` (title optional)."""

    id: str = Field(alias="_id", min_length=1)
    title: str = ""
    text: str

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, v: object) -> object:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @property
    def full_text(self) -> str:
        """Title and text as the models see them."""
        return f"{self.title}. {self.text}" if self.title else self.text


class Query(_Strict):
    """One queries line: `{"_id": ..., "text": ...}`."""

    id: str = Field(alias="_id", min_length=1)
    text: str = Field(min_length=1)

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, v: object) -> object:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

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
