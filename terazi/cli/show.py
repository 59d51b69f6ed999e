"""The leaderboard on a terminal, as every output shows it (the run's tables.json): `terazi demo`, `run` and
`analyze` end with it."""

from __future__ import annotations

import json
from pathlib import Path

from rich.table import Table

from terazi.cli.common import console
from terazi.present import tables as presentation


def print_leaderboard(run_dir: Path) -> None:
    """The leaderboard as every output shows it (tables.json): group order, Borda rank, Mean (Task) with its
    interval, each condition with its retention; then where the loss comes from and the featured system's cells."""
    tables = json.loads((Path(run_dir) / "tables.json").read_text(encoding="utf-8"))

    def show(t: presentation.Table, title: str, caption: str = "") -> None:
        rich_table = Table(title=title, caption=caption or None, caption_justify="left")
        for i, c in enumerate(t.columns):
            rich_table.add_column(c, justify="left" if i < 2 else "right", no_wrap=i == 1)  # system names stay whole
        for r in t.rows:
            rich_table.add_row(*r)
        console.print(rich_table)

    board = presentation.Table.from_json(tables["leaderboard_compact"])
    show(board, f"terazi leaderboard — {tables['headline']} (clean; corrupted with retention)", "\n".join(board.notes))
    per_ds = presentation.Table.from_json(tables["per_dataset"])
    show(per_ds, "per dataset, clean", "\n".join(per_ds.notes))
    robust = presentation.Table.from_json(tables["robustness_table"])
    show(robust, "where the loss comes from", "\n".join(robust.notes + tables["explanations"]))
    console.print(f"[bold]significant cells: {tables['featured']['system']}[/]")
    for line in tables["featured"]["lines"]:
        console.print(f"  {line}", highlight=False)
    if tables.get("variants"):
        console.print("[bold]judged variants[/]")
        for line in tables["variants"]["sentences"]:
            console.print(f"  {line}", highlight=False)
