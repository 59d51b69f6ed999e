"""What every reranker row shares: its name, a model row's fields, and the rules for an endpoint's address (a
served row's `url` is written to the manifest: no credentials in it) and for the variable that holds its key."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl, urlsplit

from pydantic import Field, field_validator

from terazi.schemas.fields import FIRST_STAGE, SlugName, StrictModel

SECRET_PARAMS = ("key", "token", "secret", "password", "auth", "signature", "sig")


class _Reranker(StrictModel):
    name: SlugName = Field(description="row label in the leaderboard (also a file name)")

    @field_validator("name")
    @classmethod
    def _not_first_stage(cls, v: str) -> str:
        if v == FIRST_STAGE:
            raise ValueError(f"{FIRST_STAGE!r} is the name of the first-stage row")
        return v


Precision = Literal["auto", "fp32", "fp16", "bf16"]
BatchSize = Annotated[int, Field(ge=1)] | Literal["auto"]


class _ModelReranker(_Reranker):
    model: str = Field(min_length=1, description="Hugging Face id or absolute local folder")
    revision: str | None = Field(None, description="hub revision (commit, tag or branch) to pin")
    batch_size: BatchSize = Field(
        "auto",
        description="pairs per model batch; auto: 32 on CPU (8 for an LLM "
        "reranker), on CUDA the largest batch the free GPU memory holds "
        "(at most 512)",
    )
    device: str = Field("auto", description="auto (CUDA when present), cpu, cuda, cuda:1, mps")
    precision: Precision = Field(
        "auto",
        description="weights and activations: auto = fp32 on CPU, on CUDA fp16 "
        "(an LLM reranker: bf16 where the GPU supports it); part of the "
        "score identity",
    )
    trust_remote_code: bool = Field(
        False,
        description="run the model's own code from its repository; a served "
        "deployment refuses it unless its server allows it",
    )


def endpoint_url(v: str) -> str:
    """`v` when it is an http(s) address without credentials in it, else a `ValueError` saying why."""
    parts = urlsplit(v)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"url {v!r} is not an http:// or https:// address")
    if parts.username or parts.password:
        raise ValueError(
            "url: no credentials in the address (it is written to the manifest); name the variable "
            "holding the key in api_key_env"
        )
    if any(s in k.lower() for k, _ in parse_qsl(parts.query) for s in SECRET_PARAMS):
        raise ValueError(
            "url: no key or token in the query string (it is written to the manifest); name the "
            "variable holding the key in api_key_env"
        )
    return v


def api_key_env_field(note: str = "") -> Any:
    """The field that names the environment variable holding a server's API key (the key itself is never in a
    config); `note` begins its description."""
    return Field(
        None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$",
        description=f"{note}name of the environment variable holding the API key, sent as `Authorization: Bearer …`; "
        "none: no key",
    )
