"""The card's method sentences (what was evaluated, how), generated from the run's own manifest: each says only what
the run did.

A run with frozen candidates says which first stage froze how many candidates, under which fingerprint, and how
deep the rerankers reordered; runs made elsewhere (`terazi analyze`) have no candidates and say so instead. The
retention rule is stated only when there are corrupted conditions; the out-of-ranking datasets with their reasons.
"""

from __future__ import annotations

from pathlib import Path

from terazi.present.card.inputs import RunFolder
from terazi.present.card.words import condition, word
from terazi.present.labels import level

_LOCAL = ("/", ".", "~")


def model_label(model: str) -> str:
    """What a card calls a model: a hub id as it is, a local folder by its name, a bundled model by its own name."""
    if model.startswith("bundled:"):
        return model.removeprefix("bundled:")
    return Path(model).name if model.startswith(_LOCAL) else model


def _exact(run: RunFolder) -> bool:
    return all(str(c.index.get("type", "")).startswith("IndexFlat") for c in run.candidates)


def sentences(run: RunFolder, labels: str) -> list[str]:
    s = run.settings
    names = [d.name for d in run.datasets]
    splits = ", ".join(dict.fromkeys(d.split for d in run.datasets))
    key = "datasets" if len(names) > 1 else "datasets_one"
    out = [word(key, labels, benchmark=s.benchmark, n=len(names), names=", ".join(names), split=splits)]
    if run.imported:
        out.append(word("imported", labels))
    else:
        depth = s.depth or run.candidates[0].depth
        text = word(
            "frozen",
            labels,
            encoder=model_label(s.encoder or run.candidates[0].encoder),
            depth=depth,
            fingerprint=run.fingerprint,
        )
        if not _exact(run):
            kinds = ", ".join(sorted({str(c.index.get("type")) for c in run.candidates}))
            text += f" [{kinds}]"
        if s.rerankers and s.rerank_depth:
            text += word("reranked", labels, k=s.rerank_depth)
        out.append(text + ".")
    outside = [d for d in run.datasets if not d.in_ranking]
    if len(names) == 1:
        metric = s.headline
    elif outside:
        notes = [
            word("out_reason", labels, name=d.name, reason=d.reason)
            if d.reason
            else word("out_plain", labels, name=d.name)
            for d in outside
        ]
        metric = word("metric", labels, measure=s.headline, ranked=", ".join(run.ranked)) + f" ({'; '.join(notes)})"
    else:
        metric = word("metric_all", labels, measure=s.headline)
    out.append(metric + ".")
    if run.corrupted:
        listed = ", ".join(condition(c, labels) for c in run.corrupted)
        out.append(word("conditions_runs" if run.imported else "conditions_e2e", labels, names=listed))
    st = s.statistics
    out.append(word("group_rule", labels, level=level(st.confidence, labels), resamples=st.bootstrap_resamples))
    if run.corrupted:
        out.append(word("retention_rule", labels, how=word(s.retention, labels)))
    return out
