"""Prompt templates of listwise rows: RankLLM's `rank_gpt` (one turn per passage) and `rank_zephyr` (one turn), kept
as data files beside this module (`templates/`), or a template file of one's own in the same form.

A template is RankLLM's YAML form (`rerank/prompt_templates/*.yaml`; `method` singleturn_listwise or
multiturn_listwise, its sections, the answer's validation and extraction patterns), read by
`SingleTurnListwiseInferenceHandler` / `MultiTurnListwiseInferenceHandler.generate_prompt` rules: the query's and
the passages' bracketed numbers rewritten, passages numbered from 1. Only `{query}`, `{num}`, `{rank}` and
`{candidate}` are filled in, each where RankLLM fills it, as they are: a template is data, never code, so a field with
attribute access, indexing, a conversion or a format spec is refused. Its hash (of the parsed sections, not of the
file's layout or comments) is part of the row's identity.
"""

from __future__ import annotations

import ast
import json
import re
import string
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from terazi.base import fingerprint
from terazi.base.errors import ConfigError

BUILT_IN = ("rank_gpt", "rank_zephyr")
FOLDER = Path(__file__).parent / "templates"
MAX_TEMPLATE_BYTES = 64 << 10
SECTIONS = {  # method -> section -> (placeholders it may use, required)
    "singleturn_listwise": {
        "system_message": (set(), False),
        "prefix": ({"query", "num"}, False),
        "body": ({"rank", "candidate"}, True),
        "suffix": ({"query", "num"}, False),
    },
    "multiturn_listwise": {
        "system_message": (set(), False),
        "prefix_user": ({"query", "num"}, False),
        "prefix_assistant": ({"query", "num"}, False),
        "body_user": ({"rank", "candidate"}, True),
        "body_assistant": ({"rank"}, False),
        "suffix_user": ({"query", "num"}, False),
    },
}
PATTERNS = ("output_validation_regex", "output_extraction_regex")


@dataclass(frozen=True)
class Template:
    name: str
    method: str
    sections: dict[str, str]
    valid: re.Pattern
    extract: re.Pattern
    hash: str

    def fill(self, section: str, **values) -> str:
        text = self.sections.get(section, "")
        return text.format(**values) if text else ""

    def messages(self, query: str, passages: list[str]) -> list[dict[str, str]]:
        """The chat messages of one window: `query` and `passages` as the prompt shows them (already unbracketed and
        cut: `terazi.rerank.listwise.core.passage`)."""
        n = len(passages)
        out = [{"role": "system", "content": s} for s in [self.sections.get("system_message", "")] if s]
        if self.method == "singleturn_listwise":
            body = "".join(self.fill("body", rank=i + 1, candidate=p) for i, p in enumerate(passages))
            text = self.fill("prefix", num=n, query=query) + body + self.fill("suffix", num=n, query=query)
            return [*out, {"role": "user", "content": text}]
        if prefix := self.fill("prefix_user", num=n, query=query):
            out += [
                {"role": "user", "content": prefix},
                {"role": "assistant", "content": self.fill("prefix_assistant", num=n, query=query)},
            ]
        suffix = self.fill("suffix_user", num=n, query=query)
        if "body_assistant" in self.sections:
            for i, p in enumerate(passages):
                out += [
                    {"role": "user", "content": self.fill("body_user", rank=i + 1, candidate=p)},
                    {"role": "assistant", "content": self.fill("body_assistant", rank=i + 1)},
                ]
            return [*out, {"role": "user", "content": suffix}] if suffix else out
        body = "".join(self.fill("body_user", rank=i + 1, candidate=p) for i, p in enumerate(passages))
        return [*out, {"role": "user", "content": body + suffix}]


def template_path(prompt: str) -> Path:
    return FOLDER / f"{prompt}.yaml" if prompt in BUILT_IN else Path(prompt)


@cache
def load(prompt: str) -> Template:
    """A built-in template by name, or a template file by absolute path; a `ConfigError` naming the file and the
    section that is wrong."""
    path = template_path(prompt)
    where = f"prompt template {path}"
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"{where}: cannot be read ({e.strerror or e})") from None
    if len(raw) > MAX_TEMPLATE_BYTES:
        raise ConfigError(f"{where}: {len(raw)} bytes, more than a template needs ({MAX_TEMPLATE_BYTES})")
    try:
        body = yaml.safe_load(raw.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as e:
        raise ConfigError(f"{where}: not a YAML file ({' '.join(str(e).split())[:200]})") from None
    if not isinstance(body, dict) or body.get("method") not in SECTIONS:
        raise ConfigError(f"{where}: `method` must be one of {', '.join(SECTIONS)} (a listwise template)")
    method = body["method"]
    allowed = SECTIONS[method]
    sections: dict[str, str] = {}
    for key, value in body.items():
        if key == "method" or key in PATTERNS:
            continue
        if key not in allowed:
            raise ConfigError(f"{where}: section {key!r} is not one of {method}'s ({', '.join(allowed)})")
        if not isinstance(value, str):
            raise ConfigError(f"{where}: section {key} must be text")
        _check_fields(where, key, value, allowed[key][0])
        sections[key] = value
    for key, (_, required) in allowed.items():
        if required and key not in sections:
            raise ConfigError(f"{where}: section {key} is missing")
    if not any("{query}" in sections.get(k, "") for k in allowed if k != "system_message"):
        raise ConfigError(f"{where}: no section asks the question: {{query}} appears nowhere")
    if method == "multiturn_listwise" and "prefix_assistant" in sections and "prefix_user" not in sections:
        raise ConfigError(f"{where}: prefix_assistant needs prefix_user")
    patterns = [_pattern(where, k, body.get(k)) for k in PATTERNS]
    identity = json.dumps({"method": method, **sections, **dict(zip(PATTERNS, (p.pattern for p in patterns)))})
    return Template(
        name=prompt if prompt in BUILT_IN else path.name,
        method=method,
        sections=sections,
        valid=patterns[0],
        extract=patterns[1],
        hash=fingerprint.of_text(identity)[:16],
    )


def _check_fields(where: str, key: str, text: str, allowed: set[str]) -> None:
    try:
        fields = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(text) if f is not None]
    except ValueError as e:
        raise ConfigError(f"{where}: section {key}: {e} (write a literal brace doubled)") from None
    for f, spec, conv in fields:
        if f not in allowed or spec or conv:
            raise ConfigError(
                f"{where}: section {key}: {{{f}{'!' + conv if conv else ''}{':' + spec if spec else ''}}} is not "
                f"filled in; it may use {', '.join('{' + a + '}' for a in sorted(allowed)) or 'no field'} as they "
                "are (write a literal brace doubled)"
            )


def _pattern(where: str, key: str, value) -> re.Pattern:
    """A section's regular expression; RankLLM's own files write it as a Python literal (`r"…"`), read as such."""
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: {key} (a regular expression) is missing")
    if value[:2] in ('r"', "r'"):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise ConfigError(f"{where}: {key} is not a string literal") from None
    try:
        return re.compile(value)
    except re.error as e:
        raise ConfigError(f"{where}: {key} is not a regular expression ({e})") from None
