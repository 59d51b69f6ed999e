"""What each corruption does to XQuAD Turkish questions: share changed, effective edit rate, typo mix.

    .venv/bin/python benchmarks/bench_corruptions.py [--samples 5] [--seed 13]

Share changed: questions changed in at least one sample, and variants changed. Effective edit
rate: optimal-string-alignment edits between the Turkish-lowercased question and its variant,
summed over all variants, ÷ letters of the questions (terazi.corrupt.edit_rate). Typo runs at the
rates asked for in docs/corruptions.md, with the share of each kind of slip it made.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.record import record
from terazi.corrupt.conditions import RULES as CONDITIONS
from terazi.corrupt.conditions import changed, corrupt, edit_rate, sample_rng, samples_for
from terazi.corrupt.typo import typo_with_edits
from terazi.schemas import CorruptionSpec, MobileSpec

XQUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "xquad" / "xquad.tr.json"
TYPO_RATES = (0.02, 0.05, 0.15)


def questions(path: Path = XQUAD) -> list[tuple[str, str]]:
    data = json.loads(path.read_text(encoding="utf-8-sig"))["data"]
    return [(qa["id"], qa["question"]) for a in data for p in a["paragraphs"] for qa in p["qas"]]


def variants(
    qs: list[tuple[str, str]], condition: str, samples: int, seed: int, spec: CorruptionSpec | None = None
) -> list[list[tuple[str, str]]]:
    """Per question, its (original, variant) pairs: one per sample, or one for deterministic conditions."""
    k = samples_for(condition, samples, spec)
    return [[(t, corrupt(t, condition, seed=seed, query_id=q, sample=s, spec=spec)) for s in range(k)] for q, t in qs]


def measure(
    qs: list[tuple[str, str]], condition: str, samples: int, seed: int, spec: CorruptionSpec | None = None
) -> dict[str, float]:
    per_query = variants(qs, condition, samples, seed, spec)
    flat = [p for v in per_query for p in v]
    return {
        "queries_changed": sum(any(changed(o, t) for o, t in v) for v in per_query) / len(qs),
        "variants_changed": sum(changed(o, t) for o, t in flat) / len(flat),
        "edit_rate": edit_rate(flat),
    }


def shares(qs: list[tuple[str, str]], samples: int, seed: int) -> dict[str, dict[str, float]]:
    """condition -> share of questions changed, share of variants changed, effective edit rate (defaults)."""
    return {cond: measure(qs, cond, samples, seed) for cond in CONDITIONS}


def typo_mix(qs: list[tuple[str, str]], rate: float, samples: int, seed: int) -> Counter:
    """How often typo made each kind of slip (the same generators as `corrupt`)."""
    ops = Counter()
    for q, t in qs:
        for s in range(samples):
            ops.update(e.op for e in typo_with_edits(t, sample_rng(seed, "typo", q, s), rate)[1])
    return ops


def mobile_rules(qs: list[tuple[str, str]], samples: int, seed: int) -> dict[str, dict[str, float]]:
    """Each mobile rule alone at its default probability (the others off): what it changes."""
    off = {k: 0.0 for k in MobileSpec.model_fields}
    return {
        rule: measure(qs, "mobile", samples, seed, CorruptionSpec(mobile=MobileSpec(**off | {rule: p.default})))
        for rule, p in MobileSpec.model_fields.items()
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args()
    if not XQUAD.is_file():
        raise SystemExit(f"{XQUAD} not found: this benchmark reads XQuAD from ../shared")
    qs = questions()
    n_letters = sum(c.isalpha() for _, t in qs for c in t)
    print(
        f"XQuAD Turkish: {len(qs)} questions, {n_letters / len(qs):.1f} letters on average, "
        f"{args.samples} samples for stochastic conditions, seed {args.seed}\n"
    )
    print("| condition | questions changed | variants changed | edits per letter |\n|---|---|---|---|")
    t = time.perf_counter()
    rows = [(cond, measure(qs, cond, args.samples, args.seed)) for cond in CONDITIONS]
    rows += [
        (f"typo {r}", measure(qs, "typo", args.samples, args.seed, CorruptionSpec(typo_rate=r)))
        for r in TYPO_RATES
        if r != CorruptionSpec().typo_rate
    ]
    rows += [("upper+typo 0.4", measure(qs, "upper+typo", args.samples, args.seed, CorruptionSpec(typo_rate=0.4)))]
    took = time.perf_counter() - t
    for name, m in rows:
        print(f"| {name} | {m['queries_changed']:.1%} | {m['variants_changed']:.1%} | {m['edit_rate']:.4f} |")
    print(
        f"\nall variants corrupted and measured in {took:.1f} s; conditions without a number use the defaults "
        f"(typo_rate {CorruptionSpec().typo_rate}, ascii_partial_rate {CorruptionSpec().ascii_partial_rate})\n"
    )
    print(
        "| mobile rule alone | probability | questions changed | variants changed | edits per letter |\n"
        "|---|---|---|---|---|"
    )
    rules = mobile_rules(qs, args.samples, args.seed)
    for rule, m in rules.items():
        print(
            f"| {rule} | {MobileSpec.model_fields[rule].default} | {m['queries_changed']:.1%} | "
            f"{m['variants_changed']:.1%} | {m['edit_rate']:.4f} |"
        )
    print()
    print("| typo rate | edits per letter | " + " | ".join(k.replace("_", " ") for k in _OPS) + " |")
    print("|---|---|" + "---|" * len(_OPS))
    mixes = {}
    for r in TYPO_RATES:
        ops = typo_mix(qs, r, args.samples, args.seed)
        n = sum(ops.values())
        mixes[r] = {"edits_per_letter": n / (n_letters * args.samples), **{k: ops[k] / n for k in _OPS}}
        print(f"| {r} | {n / (n_letters * args.samples):.4f} | " + " | ".join(f"{ops[k] / n:.1%}" for k in _OPS) + " |")
    record(
        "bench_corruptions",
        {
            "questions": len(qs),
            "samples": args.samples,
            "seed": args.seed,
            "conditions": dict(rows),
            "seconds": took,
            "mobile_rules_alone": rules,
            "typo_mix": mixes,
        },
    )


_OPS = ("substitute", "delete", "insert", "double", "transpose", "missing_space", "extra_space")

if __name__ == "__main__":
    main()
