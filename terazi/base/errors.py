"""terazi's own errors: each says which file (and line), which field or which thing, and what to do.

Every `TeraziError` is deterministic: retrying cannot help, so tasks never retry them and the CLI
prints them as one `error:` line (exit 2) without a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pydantic is not imported for `terazi score`, which only reads TREC files
    from pydantic import ValidationError


class TeraziError(Exception):
    """A problem with the user's input or setup, not a bug: shown as one line, never retried."""


class DatasetError(TeraziError, ValueError):
    """A user's file is malformed. Carries where, so the message can say it."""

    def __init__(self, path: Path | str, line: int | None, problem: str):
        self.path, self.line, self.problem = str(path), line, problem
        where = f"{path}, line {line}" if line else f"{path}"
        super().__init__(f"{where}: {problem}")


class MetricError(TeraziError, ValueError):
    """An invalid measure name, judgments or run, with the reason."""


class ConfigError(TeraziError, ValueError):
    """A configuration file or value that cannot be used."""


class PolicyError(TeraziError):
    """The serving side's policy forbids what a run asked for (e.g. remote code from the form)."""


class LimitError(TeraziError):
    """A run that asks for more work than the limits in force allow; the message says what to change."""


class OutputPathError(TeraziError):
    """A results or cache path that is unusable or would leave its root."""


class DiskFullError(OutputPathError):
    """The disk under the results or the cache folder is full; the message names the folder."""


class IncompleteRunError(TeraziError):
    """A results folder whose run has not finished (stopped, or still writing): never read as a result."""


class ServiceError(TeraziError):
    """A reranker served over HTTP that refused a request (a 4xx other than 429), answered something that is not a
    set of scores, or kept failing after its retries: one line naming the endpoint, the status and the server's
    message; never the API key."""


class CacheError(TeraziError):
    """A damaged cache file; the message names it and the command that repairs it."""


class FieldsError(ValueError):
    """A check across fields of one model, raised in its model validator: pydantic places such an error at the model
    itself (`field 'record'`), so it carries the names of the fields it is about."""

    def __init__(self, fields: str | tuple[str, ...], message: str):
        self.fields = (fields,) if isinstance(fields, str) else tuple(fields)
        super().__init__(message)


def describe(err: ValidationError, sep: str = "; ") -> str:
    """pydantic's errors as `field 'a.b': message` parts (`fields 'a', 'b': …` for a check across fields), for
    messages that name what was wrong."""
    parts = []
    for e in err.errors():
        loc = [str(x) for x in e["loc"]]
        cause = (e.get("ctx") or {}).get("error")
        names = [".".join([*loc, f]) for f in getattr(cause, "fields", ())] or [".".join(loc) or "record"]
        label = "field" if len(names) == 1 else "fields"
        parts.append(f"{label} {', '.join(repr(n) for n in names)}: {e['msg'].removeprefix('Value error, ')}")
    return sep.join(parts)


def utf8_error(path: Path | str, data: bytes, exc: UnicodeDecodeError, line_offset: int = 0) -> DatasetError:
    """Where a file stops being UTF-8: line, column and the offending byte (never the file's text)."""
    start = exc.start
    line = data.count(b"\n", 0, start) + 1 + line_offset
    column = start - (data.rfind(b"\n", 0, start) + 1) + 1
    return DatasetError(
        path, line, f"not valid UTF-8 (byte 0x{data[start]:02x} at column {column}); save the file as UTF-8"
    )


def utf8_line_error(path: Path | str, line: int, raw: bytes, exc: UnicodeDecodeError) -> DatasetError:
    """The same for one line already split off (`raw` is that line's bytes)."""
    return DatasetError(
        path, line, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); save the file as UTF-8"
    )


def check_utf8(path: Path | str) -> None:
    """Raise a `DatasetError` naming the line and byte if the file is not UTF-8."""
    data = Path(path).read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise utf8_error(path, data, e) from None
