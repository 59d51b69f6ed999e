"""The run's tables (tables.json) on a terminal, as rich renderables: `terazi demo`, `run` and `analyze` end with them
(leaderboard.md shows the same tables as markdown: terazi.present.markdown); and what a run reused and scored."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Group
from rich.text import Text

from terazi.present.table import Table
from terazi.schemas import RunManifest
from terazi.schemas.layout import RunLayout


def work_lines(manifest: RunManifest) -> list[str]:
    """Per first stage, whether its candidates were reused (no encoding) and their clean recall; per reranker, the
    pairs it needed, the duplicates among them, those found in the score store and those scored."""
    lines = []
    for cs in manifest.candidates:
        how = "reused (no encoding)" if cs.reused else f"computed in {cs.seconds:.1f}s"
        lines.append(
            f"first stage {cs.dataset}: candidates {cs.fingerprint} {how}; recall@{cs.depth} clean "
            f"{cs.recall.get('clean', 0):.3f}"
        )
    return lines + [
        f"{r.system} on {r.dataset}: {r.pairs_needed} pairs, {r.pairs_needed - r.pairs_unique} "
        f"duplicates, {r.pairs_cached} cached, {r.pairs_scored} scored"
        for r in manifest.reranks
        if r.pairs_needed
    ]


def leaderboard_rich(run_dir: Path) -> Group:
    """The leaderboard as every output shows it (tables.json): group order, Borda rank, Mean (Task) with its
    interval, each condition with its retention; then where the loss comes from and the featured system's cells."""
    layout = RunLayout(run_dir)
    layout.refuse_unfinished()
    tables = json.loads(layout.tables_json.read_text(encoding="utf-8"))
    shown: list = []

    def table(body: dict, title: str, more: list[str] = ()) -> None:
        t = Table.from_json(body)
        t.align = ["left" if i < 2 else "right" for i in range(len(t.columns))]
        caption = "\n".join([*t.notes, *more])
        shown.append(t.rich(title, caption, no_wrap=(1,), caption_justify="left"))  # system names stay whole

    def lines(title: str, items: list[str]) -> None:
        shown.extend([Text(title, style="bold"), *(Text(f"  {line}") for line in items)])

    table(tables["leaderboard_compact"], f"terazi leaderboard — {tables['headline']} (clean; corrupted with retention)")
    table(tables["ranks"], "rank intervals")
    table(tables["per_dataset"], "per dataset, clean")
    if tables.get("leak_free"):
        table(tables["leak_free"], "without the queries found in training data")
    table(tables["robustness_table"], "where the loss comes from", tables["explanations"])
    lines(f"significant cells: {tables['featured']['system']}", tables["featured"]["lines"])
    if tables.get("depths"):
        table(tables["depths"]["table"], "rerank depth", tables["depths"]["sentences"])
        table(tables["depths"]["ceiling"], "the first stage's ceiling")
    if tables.get("variants"):
        lines("judged variants", tables["variants"]["sentences"])
    if layout.protocol_md.is_file():  # several first stages: does the rerankers' order hold?
        lines(
            "first stages: does the rerankers' order hold?",
            [line[2:] for line in layout.protocol_md.read_text(encoding="utf-8").splitlines() if line.startswith("- ")],
        )
    return Group(*shown)
