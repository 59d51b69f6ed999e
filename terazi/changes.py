"""What changed between two runs of the same benchmark: systems, ranks, groups, significant scores."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from schemas import RunManifest
from terazi import results
from terazi.benchmark import changed_parts
from terazi.stats import paired_difference


def read_manifest(run: Path) -> RunManifest | None:
    """The manifest of a completed run (None for incomplete or foreign folders)."""
    if not results.is_complete(run):
        return None
    try:
        return RunManifest.model_validate(json.loads((run / results.MANIFEST).read_text()))
    except (OSError, ValueError):
        return None


def previous_nightly(out_dir: Path, current: RunManifest) -> Path | None:
    """The newest completed nightly of the same benchmark under `out_dir`, started before `current`.

    Ad-hoc and CLI runs never count, nor do interrupted runs or other benchmarks' runs.
    """
    best: tuple[str, Path] | None = None
    for p in out_dir.iterdir():
        if not p.is_dir() or p.resolve() == Path(current.run_dir).resolve():
            continue
        m = read_manifest(p)
        if m is None or m.kind != "nightly" or m.benchmark.name != current.benchmark.name or m.started > current.started:
            continue
        if best is None or m.started > best[0]:
            best = (m.started, p)
    return best[1] if best else None


def compare_runs(before: Path, after: Path, headline: str, resamples: int = 2000, seed: int = 0) -> str:
    """Markdown summary of what changed from `before` to `after`."""
    m_old, m_new = read_manifest(before), read_manifest(after)
    lines = [f"# terazi: changes from {before.name} to {after.name}", "",
             f"- before: `{before}`" + (f" ({m_old.kind} run, started {m_old.started})" if m_old else ""),
             f"- after: `{after}`" + (f" ({m_new.kind} run, started {m_new.started})" if m_new else ""), ""]
    header = len(lines)
    parts = changed_parts(m_old.benchmark, m_new.benchmark) if m_old and m_new else []
    system_change = any(p.startswith("systems") for p in parts)
    inputs = [p for p in parts if not p.startswith("systems")]
    if inputs:
        lines.append("- **the benchmark itself changed**: " + "; ".join(inputs)
                     + ". Scores are not comparable; only what was rerun the same way is compared below.")
    old, new = pl.read_csv(before / "leaderboard.csv"), pl.read_csv(after / "leaderboard.csv")
    added = sorted(set(new["system"]) - set(old["system"]))
    removed = sorted(set(old["system"]) - set(new["system"]))
    why = " (the benchmark's list of systems changed)" if system_change else ""
    if added:
        lines.append("- new systems: " + ", ".join(added) + why)
    if removed:
        lines.append("- systems gone: " + ", ".join(removed) + why)
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
    if len(lines) == header:
        lines.append("- nothing changed: same benchmark, same systems, ranks and groups, no significant score change")
    return "\n".join(lines) + "\n"
