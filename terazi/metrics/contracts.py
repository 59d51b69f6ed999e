"""Metric contracts: what to do where conventions differ, named and printed beside every number.

Conventions (see docs/metrics.md), all of them named in `Policies` and reported with every result; two named
presets, `trec` (trec_eval -c, the default) and `strict` (the metric note's rules). Ties in a run are broken as
trec_eval does (score descending, then document id descending); an all-zero ideal DCG gives 0; P@k divides by k;
R@k and AP divide by the number of relevant documents in the judgments; Judged@k divides by the documents returned
in the top k.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Literal, get_args, get_type_hints

from terazi.base.errors import MetricError
from terazi.base.ties import TIES
from terazi.schemas import MetricContract, parse_measure


@dataclass(frozen=True)
class Policies:
    """What to do with the cases where conventions differ; `preset` names the contract they started from."""

    no_relevant: Literal["zero", "skip", "error"] = "zero"
    missing_query: Literal["zero", "skip"] = "zero"
    extra_query: Literal["ignore", "error"] = "ignore"
    unjudged: Literal["irrelevant", "error"] = "irrelevant"
    nan_score: Literal["last", "error"] = "last"
    repeated_rank: Literal["ignore", "error"] = "ignore"
    preset: str = "trec"

    @classmethod
    def of(cls, preset: str = "trec", **overrides: str | None) -> Policies:
        """A named preset, with individual policies changed (None keeps the preset's value)."""
        if preset not in CONTRACTS:
            raise MetricError(f"unknown contract {preset!r}; known: {', '.join(CONTRACTS)}")
        return replace(CONTRACTS[preset].policies, **{k: v for k, v in overrides.items() if v is not None})

    @property
    def changes(self) -> dict[str, str]:
        base = CONTRACTS[self.preset].policies if self.preset in CONTRACTS else Policies()
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name != "preset" and getattr(self, f.name) != getattr(base, f.name)
        }

    @property
    def label(self) -> str:
        """`trec`, `strict`, or e.g. `strict, changed: unjudged=irrelevant`."""
        changed = ", ".join(f"{k}={v}" for k, v in self.changes.items())
        return self.preset + (f", changed: {changed}" if changed else "")


@dataclass(frozen=True)
class Contract:
    """A named metric contract: a documented set of policies."""

    name: str
    summary: str
    policies: Policies


CONTRACTS = {
    "trec": Contract(
        "trec",
        "trec_eval -c conventions: unjudged documents count as irrelevant, judged queries missing "
        "from the run score 0, run queries without judgments are ignored, NaN scores rank last; "
        "the rank column is ignored",
        Policies(),
    ),
    "strict": Contract(
        "strict",
        "the metric note's rules: an unknown document id (no judgment for that query), a "
        "repeated rank, a run query without judgments or a NaN score is an error naming the query and "
        "the document; otherwise numbers equal trec's",
        Policies(extra_query="error", unjudged="error", nan_score="error", repeated_rank="error", preset="strict"),
    ),
}
# the choices of each policy, as its type states them (`terazi score` offers exactly these), and what it decides on
POLICY_CHOICES = {name: get_args(kind) for name, kind in get_type_hints(Policies).items() if name != "preset"}
POLICY_CASES = {
    "no_relevant": "queries with no relevant document",
    "missing_query": "judged queries the run did not return",
    "extra_query": "run queries without judgments",
    "unjudged": "retrieved documents without a judgment for that query",
    "nan_score": "NaN run scores",
    "repeated_rank": "two documents with one rank in a query (reads the rank column)",
}


def metric_contracts(measures: list[str], policies: Policies = Policies(), ties: str = "trec") -> list[MetricContract]:
    """The contract of each measure, as stored beside its per-query values (and printed with every table)."""
    out = []
    for name in measures:
        m = parse_measure(name)
        out.append(
            MetricContract(
                measure=m.name,
                contract=policies.label,
                cutoff=m.cutoff or 0,
                gain=m.gain,
                relevance_threshold=m.rel,
                no_relevant=policies.no_relevant,
                missing_query=policies.missing_query,
                extra_query=policies.extra_query,
                unjudged=policies.unjudged,
                ties=TIES[ties],
            )
        )
    return out
