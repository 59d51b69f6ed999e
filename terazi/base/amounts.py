"""Amounts a user types (sizes, ages, depths, rates, resamples, timeouts, margins, seeds), read in one place for the
command line and the config.

An amount is written in decimal: `10`, `0.5`, `1e3`, a unit after it where the amount has units (`30d`, `20G`).
Python's `float()` also takes `inf`, `nan`, `1e400` (which becomes infinity) and, for an `int`, nothing of `0x10`, but
typer and argparse each had their own idea of the rest; here each is refused, and a value outside the amount's range
too, with the reason, and the command line names the option (`--max-size: 'inf' is not a number`). An option that
sets a config field takes its range from that field's own pydantic constraints (`Range.of`), so the flag and the
config refuse the same values; a whole number is at most 2^53 (exact as a float, within every integer array).
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass
from typing import Any, get_args

_DECIMAL = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", re.ASCII)  # digits 0-9 only (\d alone takes ١٢ too)
_WHOLE = re.compile(r"[+-]?\d+", re.ASCII)
MOST_WHOLE = 2**53


@dataclass(frozen=True)
class Range:
    """Which numbers an amount may be: whole or not, and its bounds (None: unbounded on that side)."""

    whole: bool = False
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    @classmethod
    def of(cls, model: type, field: str, **more: float) -> Range:
        """The range of a pydantic model's field: whole for an `int`, its `ge`/`gt`/`le`/`lt`; `more` narrows it."""
        info = model.model_fields[field]
        kinds = {info.annotation, *get_args(info.annotation)}
        bounds = {k: getattr(m, k) for m in info.metadata for k in ("ge", "gt", "le", "lt") if hasattr(m, k)}
        return cls(whole=int in kinds and float not in kinds, **{**bounds, **more})

    def read(self, text: str) -> int | float:
        """The amount `text` says, or a ValueError saying why not."""
        value = number(text, self.whole)
        self.check(value)
        return value

    def check(self, value: float) -> None:
        bounds = [("≥", self.ge, operator.ge), (">", self.gt, operator.gt), ("≤", self.le, operator.le)]
        bounds += [("<", self.lt, operator.lt)]
        if self.whole:
            bounds += [("≥", -MOST_WHOLE, operator.ge), ("≤", MOST_WHOLE, operator.le)]
        for sign, bound, holds in bounds:
            if bound is not None and not holds(value, bound):
                raise ValueError(f"must be {sign} {bound:g}, got {value:g}")


def number(text: Any, whole: bool = False) -> int | float:
    """A finite decimal number (whole: an integer) from `text`; a ValueError naming what it is not."""
    t = str(text).strip()
    if whole and _WHOLE.fullmatch(t):
        return int(t)
    if not _DECIMAL.fullmatch(t):
        raise ValueError(f"{str(text)!r} is not a {'whole ' if whole else ''}number")
    value = float(t)
    if not math.isfinite(value):
        raise ValueError(f"{str(text)!r} is too large")
    if whole:
        if not value.is_integer():
            raise ValueError(f"{str(text)!r} is not a whole number")
        return int(value)
    return value


def with_unit(text: str, units: dict[str, float], bare: float, what: str) -> float:
    """A non-negative amount with an optional unit suffix (`units`, case-insensitive), times that unit (`bare` without
    one): `30d`, `1.5T`. `what` (`a size, e.g. 20G`) says what was expected."""
    t = str(text).strip().lower()
    unit = units.get(t[-1:])
    try:
        value = number(t[:-1] if unit else t) * (unit or bare)
    except ValueError:
        raise ValueError(f"{str(text)!r} is not {what}") from None
    Range(ge=0).check(value)
    if not math.isfinite(value):
        raise ValueError(f"{str(text)!r} is too large")
    return value


SEED = Range(whole=True, ge=0)  # numpy's generators take no negative seed


def parse_age(text: str) -> float:
    """Seconds of an age such as `30d`, `12h`, `90m`, `45s` (a bare number is days)."""
    return with_unit(text, {"d": 86400, "h": 3600, "m": 60, "s": 1}, 86400, "an age, e.g. 30d, 12h, 90m")


def parse_size(text: str) -> int:
    """Bytes of a size such as `20G`, `500M`, `1.5T` (binary units; a bare number is bytes)."""
    bare = str(text).strip().lower().removesuffix("b").removesuffix("i")
    return int(with_unit(bare, {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}, 1, "a size, e.g. 20G, 500M"))
