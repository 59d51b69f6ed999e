"""Query variants as JSON lines, outside an evaluation: what `terazi corrupt` reads and prints, one record per
variant, so a corruption can be looked at (or fed to another tool) on its own."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from pydantic import ValidationError

from terazi.base.errors import ConfigError, DatasetError, describe
from terazi.corrupt.conditions import changed, corrupt, samples_for
from terazi.schemas import CorruptionSpec, MobileSpec, Query


def spec_of(rate: float | None, slip: float | None, mobile: dict[str, str], **fields: int | None) -> CorruptionSpec:
    """The corruption settings of the command line: `rate` is both the typo rate and the ascii_partial rate (each
    condition reads its own), `slip` the mobile slip rule unless `mobile` (rule → probability) sets it; `fields` other
    settings (None: the default)."""
    unknown = [rule for rule in mobile if rule not in MobileSpec.model_fields]
    if unknown:
        raise ConfigError(f"--mobile: unknown rule {unknown[0]!r}; rules: {', '.join(MobileSpec.model_fields)}")
    rules = {"slip": slip, **mobile} if slip is not None else mobile
    given = {"typo_rate": rate, "ascii_partial_rate": rate, **fields}
    return CorruptionSpec.model_validate({"mobile": rules, **{k: v for k, v in given.items() if v is not None}})


def variant_lines(lines: Iterable[str], where: str, condition: str, seed: int, spec: CorruptionSpec) -> Iterator[str]:
    """Every variant of every query (JSON lines of `{"_id", "text"}`, blank lines skipped) as a JSON line with its
    original, condition, seed, sample and whether it changed; a bad line is named by `where` and its number."""
    k = samples_for(condition, spec.samples, spec)  # an unknown condition fails here, before the first query is read
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            q = Query.model_validate_json(line)
        except ValidationError as e:
            raise DatasetError(where, n, describe(e)) from None
        for s in range(k):
            text = corrupt(q.text, condition, seed=seed, query_id=q.id, sample=s, spec=spec)
            yield json.dumps(
                {
                    "_id": q.id,
                    "text": text,
                    "original": q.text,
                    "condition": condition,
                    "seed": seed,
                    "sample": s,
                    "changed": changed(q.text, text),
                },
                ensure_ascii=False,
            )
