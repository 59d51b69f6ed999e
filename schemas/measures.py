"""The names of ranking measures: one grammar, read by the config, the metric engine and `terazi score`.

Measures are named the ir-measures way: ``nDCG@10`` (linear gain, as trec_eval),
``nDCG(dcg='exp-log2')@10`` (gain 2^g − 1), ``nDCG`` / ``RR@10`` / ``RR`` (whole ranking), ``R@100``, ``P@10``,
``AP@10`` / ``AP``, ``Judged@10``; ``(rel=2)`` sets the relevance threshold of the binary ones.
ranx's and trec_eval's spellings (``mrr@10``, ``ndcg_cut_10``, ``ndcg``, ``recip_rank``, ``P_5`` …) are
aliases: they parse to the same `Measure`, whose `canonical` name is what terazi prints.

It is part of the contracts because a measure is a field users fill in (config files, the deployment form): a bad
name is refused when the configuration is read, before any work starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from terazi.base.errors import MetricError

FAMILIES = ("nDCG", "RR", "R", "P", "AP", "Judged")
WHOLE_RANKING = ("nDCG", "RR", "AP")  # may be written without a cutoff: trec_eval's ndcg, recip_rank and map

# Spellings of a family: ir_measures' own, upper-case variants, and ranx's lower-case names.
_FAMILY_ALIASES = {
    "MRR": "RR",
    "mrr": "RR",
    "NDCG": "nDCG",
    "ndcg": "nDCG",
    "Recall": "R",
    "recall": "R",
    "precision": "P",
    "MAP": "AP",
    "map": "AP",
}
_EXP_GAIN = {"ndcg_burges"}  # ranx's nDCG with gain 2^g − 1
# trec_eval's result keys (ndcg_cut_10) and measure names (ndcg_cut.10)
_TREC_CUT = {"ndcg_cut": "nDCG", "P": "P", "recall": "R", "map_cut": "AP"}
_TREC_PLAIN = {"recip_rank": "RR"}
_TREC = re.compile(r"^(?P<m>ndcg_cut|P|recall|map_cut)[._](?P<k>.*)$")
_NO_EQUIVALENT = {
    "hit_rate": "ranx's hit_rate (1 if any relevant document is in the top k) has no terazi family",
    "hits": "ranx's hits (number of relevant documents in the top k) is P@k × k; use P@k",
    "f1": "ranx's f1 has no terazi family",
    "r-precision": "ranx's r-precision has no terazi family",
    "r_precision": "ranx's r-precision has no terazi family",
    "bpref": "bpref has no terazi family",
    "rbp": "rbp has no terazi family",
    "dcg": "unnormalised DCG has no terazi family; use nDCG@k",
    "dcg_burges": "unnormalised DCG has no terazi family; use nDCG(dcg='exp-log2')@k",
}
_NAME = re.compile(r"^(?P<family>[A-Za-z][A-Za-z0-9_\-]*)(?:\((?P<params>[^)]*)\))?(?:@(?P<cutoff>.*))?$")
_CUTOFF = re.compile(r"^[1-9][0-9]*$")


@dataclass(frozen=True)
class Measure:
    name: str  # as the user wrote it; results are keyed by it
    family: str
    cutoff: int | None
    gain: str = "linear"
    rel: int = 1

    @property
    def canonical(self) -> str:
        """The one spelling terazi prints for this contract, e.g. `RR@10` for `mrr@10` and `MRR@10`."""
        params = [
            *(["dcg='exp-log2'"] if self.gain == "exponential" else []),
            *([f"rel={self.rel}"] if self.rel != 1 else []),
        ]
        return self.family + (f"({', '.join(params)})" if params else "") + (f"@{self.cutoff}" if self.cutoff else "")


def _cutoff(name: str, text: str) -> int:
    """Only plain positive integers: `10`, not `+10`, ` 10`, `1_0`, `010`, `10.0` (which `int()` partly accepts)."""
    if not _CUTOFF.match(text):
        hint = f"; write {int(text)}" if text.isdigit() and int(text) > 0 else ""
        raise MetricError(f"cutoff of {name!r} must be a plain positive integer such as 10, got {text!r}{hint}")
    return int(text)


def parse_measure(name: str) -> Measure:
    """`nDCG@10`, `nDCG(dcg='exp-log2')@10`, `RR(rel=2)@10`, `AP`, `mrr@10`, `ndcg_cut_10`, … → Measure."""
    text = name.strip()
    trec = _TREC.match(text)
    if trec:
        return Measure(text, _TREC_CUT[trec["m"]], _cutoff(text, trec["k"]))
    if text in _TREC_PLAIN:
        return Measure(text, _TREC_PLAIN[text], None)
    m = _NAME.match(text)
    if not m:
        raise MetricError(f"cannot parse measure {name!r} (expected e.g. nDCG@10, RR@10, R@100, mrr@10, ndcg_cut_10)")
    raw = m["family"]
    if raw in _NO_EQUIVALENT:
        raise MetricError(f"{name!r}: {_NO_EQUIVALENT[raw]}")
    family = "nDCG" if raw in _EXP_GAIN else _FAMILY_ALIASES.get(raw, raw)
    if family not in FAMILIES:
        raise MetricError(
            f"unknown measure {raw!r} in {name!r}; known: {', '.join(FAMILIES)} "
            f"(and the ranx / trec_eval spellings in docs/metrics.md)"
        )
    cutoff = None if m["cutoff"] is None else _cutoff(text, m["cutoff"])
    if cutoff is None and family not in WHOLE_RANKING:
        raise MetricError(f"{name!r} needs a cutoff, e.g. {family}@10")
    gain, rel = ("exponential" if raw in _EXP_GAIN else "linear"), 1
    for part in filter(None, (p.strip() for p in (m["params"] or "").split(","))):
        key, _, value = part.partition("=")
        key, value = key.strip(), value.strip().strip("'\"")
        if key == "dcg" and family == "nDCG" and raw not in _EXP_GAIN:
            if value not in ("log2", "exp-log2"):
                raise MetricError(f"{name!r}: dcg must be 'log2' (linear gain) or 'exp-log2'")
            gain = "exponential" if value == "exp-log2" else "linear"
        elif key == "rel" and family != "nDCG":
            if not _CUTOFF.match(value):
                raise MetricError(f"{name!r}: rel must be a positive integer")
            rel = int(value)
        else:
            raise MetricError(f"{name!r}: unknown parameter {key!r} for {family}")
    return Measure(text, family, cutoff, gain, rel)
