"""What changed between two runs of the same benchmark: systems, ranks, groups, significant scores."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from terazi.stats import paired_difference


def previous_run(out_dir: Path, current: Path) -> Path | None:
    """The newest other results folder under `out_dir` that holds a leaderboard."""
    runs = [p for p in out_dir.iterdir() if p.is_dir() and p.resolve() != current.resolve()
            and (p / "leaderboard.csv").is_file() and (p / "per_query.parquet").is_file()]
    return max(runs, key=lambda p: (p / "leaderboard.csv").stat().st_mtime, default=None)


def compare_runs(before: Path, after: Path, headline: str, resamples: int = 2000, seed: int = 0) -> str:
    """Markdown summary of what changed from `before` to `after`."""
    old, new = pl.read_csv(before / "leaderboard.csv"), pl.read_csv(after / "leaderboard.csv")
    lines = [f"# terazi: changes since {before.name}", ""]
    added = sorted(set(new["system"]) - set(old["system"]))
    removed = sorted(set(old["system"]) - set(new["system"]))
    if added:
        lines.append("- new systems: " + ", ".join(added))
    if removed:
        lines.append("- systems gone: " + ", ".join(removed))
    joined = new.join(old, on="system", suffix="_before")
    for r in joined.iter_rows(named=True):
        if r["borda_rank"] != r["borda_rank_before"]:
            lines.append(f"- {r['system']}: rank {r['borda_rank_before']} → {r['borda_rank']}")
        if "group" in r and r.get("group") != r.get("group_before"):
            lines.append(f"- {r['system']}: group {r.get('group_before')} → {r.get('group')}")
    pq_old, pq_new = pl.read_parquet(before / "per_query.parquet"), pl.read_parquet(after / "per_query.parquet")
    keys = ["dataset", "system", "query_id"]
    sel = (pl.col("condition") == "clean") & (pl.col("measure") == headline)
    pair = pq_new.filter(sel).select(*keys, "value").join(
        pq_old.filter(sel).select(*keys, pl.col("value").alias("before")), on=keys, how="inner")
    for (system,), part in pair.group_by("system", maintain_order=True):
        by_ds = {d: (p["value"].to_numpy(), p["before"].to_numpy())
                 for (d,), p in part.sort("dataset", "query_id").group_by("dataset", maintain_order=True)}
        ci = paired_difference({d: v[0] for d, v in by_ds.items()}, {d: v[1] for d, v in by_ds.items()}, resamples, seed)
        if ci.significant:
            lines.append(f"- {system}: {headline} changed significantly by {ci.estimate:+.4f} "
                         f"[{ci.low:+.4f}, {ci.high:+.4f}]")
    if len(lines) == 2:
        lines.append("- nothing changed: same systems, ranks and groups, no significant score change")
    return "\n".join(lines) + "\n"
