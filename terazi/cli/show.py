"""The leaderboard on a terminal, as every output shows it (the run's tables.json): `terazi demo`, `run` and
`analyze` end with it."""

from __future__ import annotations

import json
from pathlib import Path

from terazi.cli.common import console
from terazi.present.table import Table
from terazi.schemas.layout import RunLayout


def print_leaderboard(run_dir: Path) -> None:
    """The leaderboard as every output shows it (tables.json): group order, Borda rank, Mean (Task) with its
    interval, each condition with its retention; then where the loss comes from and the featured system's cells."""
    layout = RunLayout(run_dir)
    layout.refuse_unfinished()
    tables = json.loads(layout.tables_json.read_text(encoding="utf-8"))

    def show(t: Table, title: str, caption: str = "") -> None:
        t.align = ["left" if i < 2 else "right" for i in range(len(t.columns))]
        console.print(t.rich(title, caption, no_wrap=(1,), caption_justify="left"))  # system names stay whole

    board = Table.from_json(tables["leaderboard_compact"])
    show(board, f"terazi leaderboard — {tables['headline']} (clean; corrupted with retention)", "\n".join(board.notes))
    ranks = Table.from_json(tables["ranks"])
    show(ranks, "rank intervals", "\n".join(ranks.notes))
    per_ds = Table.from_json(tables["per_dataset"])
    show(per_ds, "per dataset, clean", "\n".join(per_ds.notes))
    if tables.get("decontaminated"):
        deco = Table.from_json(tables["decontaminated"])
        show(deco, "without the queries found in training data", "\n".join(deco.notes))
    robust = Table.from_json(tables["robustness_table"])
    show(robust, "where the loss comes from", "\n".join(robust.notes + tables["explanations"]))
    console.print(f"[bold]significant cells: {tables['featured']['system']}[/]")
    for line in tables["featured"]["lines"]:
        console.print(f"  {line}", highlight=False)
    if tables.get("depths"):
        depths = Table.from_json(tables["depths"]["table"])
        show(depths, "rerank depth", "\n".join(depths.notes + tables["depths"]["sentences"]))
        ceiling = Table.from_json(tables["depths"]["ceiling"])
        show(ceiling, "the first stage's ceiling", "\n".join(ceiling.notes))
    if tables.get("variants"):
        console.print("[bold]judged variants[/]")
        for line in tables["variants"]["sentences"]:
            console.print(f"  {line}", highlight=False)
    if layout.protocol_md.is_file():  # several first stages: does the rerankers' order hold?
        console.print("[bold]first stages: does the rerankers' order hold?[/]")
        for line in layout.protocol_md.read_text(encoding="utf-8").splitlines():
            if line.startswith("- "):
                console.print(f"  {line[2:]}", highlight=False)
