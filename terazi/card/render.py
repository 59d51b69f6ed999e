"""The card as markdown, in the Kalbur card's order: protocol, results table, per dataset, paired comparisons
(counts, then the significant cells), judged variants, rank intervals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from terazi.card.words import condition, word

if TYPE_CHECKING:
    from terazi.card.build import Card


def markdown(card: Card) -> str:
    lab = card.labels
    lines = [f"## {word('title', lab)}", "", " ".join(card.protocol), "", card.results.markdown(), "",
             f"{word('per_dataset', lab)} ({condition('clean', lab).lower()}):", "", card.per_dataset.markdown(), ""]
    if card.comparisons.rows:  # a run of one system compares nothing
        lines += [f"{word('pairs', lab)} ({card.comparisons_caption}):", "", card.comparisons.markdown(), ""]
        lines += [f"- {x}" for x in card.significant] + [""]
    if card.variants:
        lines += [f"{word('variants', lab)}:", ""] + [f"- {x}" for x in card.variants] + [""]
    lines += [f"{word('ranks', lab)}:", "", card.rank_line, "", card.ranks.markdown()]
    return "\n".join(lines).rstrip() + "\n"
