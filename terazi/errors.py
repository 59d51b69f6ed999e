"""Errors about users' files: they say which file, which line and what is wrong."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pydantic is not imported for `terazi score`, which only reads TREC files
    from pydantic import ValidationError


class DatasetError(ValueError):
    """A user's file is malformed. Carries where, so the message can say it."""

    def __init__(self, path: Path | str, line: int | None, problem: str):
        self.path, self.line, self.problem = str(path), line, problem
        where = f"{path}, line {line}" if line else f"{path}"
        super().__init__(f"{where}: {problem}")


def describe(err: ValidationError, sep: str = "; ") -> str:
    """pydantic's errors as `field 'a.b': message` parts, for messages that name what was wrong."""
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "record"
        parts.append(f"field '{loc}': {e['msg'].removeprefix('Value error, ')}")
    return sep.join(parts)
