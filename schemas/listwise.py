"""A listwise row (`kind: listwise`, RankLLM's sliding windows) and what its answers cost, as the manifest records
them."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from terazi.base.errors import FieldsError
from terazi.schemas.rows import _ModelReranker, api_key_env_field, endpoint_url

LISTWISE_PROMPTS = ("rank_gpt", "rank_zephyr")
SERVED_ONLY = ("api_key_env", "concurrency", "timeout", "retries", "extra_body")
IN_PROCESS_ONLY = ("device", "precision", "trust_remote_code")


class ListwiseSpec(_ModelReranker):
    """A listwise LLM reranker run as RankLLM runs it: windows of passages from the bottom of the candidates up, each
    answered with a permutation (`[3] > [1] > [2]`) by a chat model behind an OpenAI-compatible server (`url`) or in
    process (no `url`); each window's answer is stored, so a window is paid for once."""

    kind: Literal["listwise"] = Field(description="listwise")
    model: str = Field(
        min_length=1,
        max_length=300,
        description="with url: the model name the server expects; without: a Hugging Face id or absolute local "
        "folder of a causal LM with a chat template",
    )
    revision: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="without url: the hub revision to pin; with url: what the endpoint serves, in your words "
        "(change it when the server's model changes, so old and new answers are never mixed)",
    )
    url: str | None = Field(
        None,
        min_length=8,
        max_length=2000,
        description="the server's OpenAI-compatible base address, e.g. http://gpu-box:8000/v1 (/chat/completions "
        "and /models are under it); none: the model runs in process with transformers",
    )
    prompt: str = Field(
        "rank_zephyr",
        min_length=1,
        max_length=1000,
        description="rank_zephyr (RankZephyr's single turn) or rank_gpt (RankGPT's turn per passage), RankLLM's "
        "wording; or the absolute path of a template file in RankLLM's YAML form; its hash is part of the identity",
    )
    window: int = Field(20, ge=2, le=100, description="passages per window (RankLLM's default 20)")
    stride: int = Field(10, ge=1, le=100, description="how far each window moves up the list (RankLLM's default 10)")
    passage_words: int = Field(
        300, ge=1, le=10_000, description="words of each passage the prompt shows (RankLLM's 300)"
    )
    max_tokens: int | None = Field(
        None,
        ge=1,
        le=32_768,
        description="most tokens an answer may take; default: the characters of the window's permutation "
        "`[1] > … > [n]` (a reasoning model needs more)",
    )
    batch_size: Literal[1] = Field(1, description="windows per model call: one (an answer is the model's on its own)")
    api_key_env: str | None = api_key_env_field("with url: ")
    concurrency: int = Field(
        4, ge=1, le=64, description="with url: requests in flight to the server at most, over every run on the cache"
    )
    timeout: float = Field(120.0, gt=0, le=600, description="with url: seconds a request may take before a retry")
    retries: int = Field(
        5, ge=0, le=20, description="with url: tries after the first for a 429 or 5xx, time-out or cut"
    )
    extra_body: dict[str, str | int | float | bool] = Field(
        default_factory=dict,
        description="with url: fields added to every request as they are (e.g. {seed: 0}); part of the identity",
    )

    @property
    def max_length(self) -> None:
        """A listwise row cuts passages by words (`passage_words`), not tokens."""
        return None

    @property
    def served(self) -> bool:
        return self.url is not None

    @property
    def backend(self) -> str:
        """The backend column of the backend table: served or in process."""
        return "served" if self.url else "torch"

    @field_validator("url")
    @classmethod
    def _endpoint(cls, v: str | None) -> str | None:
        return None if v is None else endpoint_url(v)

    @field_validator("prompt")
    @classmethod
    def _prompt(cls, v: str) -> str:
        if v not in LISTWISE_PROMPTS and not Path(v).is_absolute():
            raise ValueError(f"prompt: {' or '.join(LISTWISE_PROMPTS)}, or the absolute path of a template file")
        return v

    @model_validator(mode="after")
    def _where_it_runs(self):
        if self.stride > self.window:
            raise FieldsError(
                ("stride", "window"), f"stride {self.stride} skips passages: at most window {self.window}"
            )
        defaults = type(self).model_fields
        odd = IN_PROCESS_ONLY if self.url else SERVED_ONLY
        used = [f for f in odd if getattr(self, f) != defaults[f].get_default(call_default_factory=True)]
        if used:
            where = "in process (no url)" if self.url else "served (with url)"
            raise FieldsError((*used, "url"), f"{' and '.join(used)} only apply to a row {where}")
        return self


class ListwiseCost(BaseModel):
    """What a listwise row's ranking rests on (`kind: listwise`): its windows' answers, each classified as RankLLM's
    `analysis/response_analysis.py` does, their tokens, and the requests this run sent for them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    windows: int = Field(0, description="distinct windows the ranking used (stored answers included)")
    requests: int = Field(0, description="windows asked of the model in this run (the rest were stored)")
    prompt_tokens: int = Field(0, description="prompt tokens of the windows' answers, as the model counted them")
    completion_tokens: int = Field(0, description="answer tokens of the same")
    ok: int = Field(0, description="answers that are a whole permutation in the template's format")
    wrong_format: int = Field(0, description="answers not in the format (the window keeps its order if no number)")
    repetition: int = Field(0, description="answers naming a passage twice or more numbers than passages")
    missing_documents: int = Field(0, description="answers leaving passages out (appended in their order)")

    @property
    def unusable(self) -> float:
        """The share of answers not `ok`."""
        return 1 - self.ok / self.windows if self.windows else 0.0
