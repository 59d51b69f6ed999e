"""What changed between two runs of the same benchmark: systems, ranks, groups, significant scores."""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl

from terazi.analysis import comparison
from terazi.analysis.identity import changed_parts
from terazi.present.labels import level
from terazi.schemas import EvalConfig, RunManifest
from terazi.schemas.results_folder import ResultsFolder
from terazi.schemas.statistics import Statistics

log = logging.getLogger("terazi.nightly")


def previous_nightly(out_dir: Path, current: RunManifest) -> Path | None:
    """The newest completed nightly of the same benchmark under `out_dir`, started before `current`.

    Ad-hoc and CLI runs never count, nor do interrupted runs or other benchmarks' runs.
    """
    best: tuple[str, Path] | None = None
    for p in out_dir.iterdir():
        if not p.is_dir() or p.resolve() == Path(current.run_dir).resolve():
            continue
        m = ResultsFolder.manifest_of(p)
        if (
            m is None
            or m.kind != "nightly"
            or m.benchmark.name != current.benchmark.name
            or m.started > current.started
        ):
            continue
        if best is None or m.started > best[0]:
            best = (m.started, p)
    return best[1] if best else None


def changes_since(
    before: Path,
    after: Path,
    headline: str,
    statistics: Statistics | None = None,
) -> str:
    """Markdown summary of what changed from `before` to `after`: systems, ranks and groups from the two
    leaderboards, the scores through `terazi.analysis.comparison`, the same comparison `terazi compare` prints (at the
    run's statistics: its interval level, correction and verdicts)."""
    statistics = statistics or Statistics()
    m_old, m_new = ResultsFolder.manifest_of(before), ResultsFolder.manifest_of(after)
    lines = [
        f"# terazi: changes from {before.name} to {after.name}",
        "",
        f"- before: `{before}`" + (f" ({m_old.kind} run, started {m_old.started})" if m_old else ""),
        f"- after: `{after}`" + (f" ({m_new.kind} run, started {m_new.started})" if m_new else ""),
        "",
    ]
    header = len(lines)
    parts = changed_parts(m_old.benchmark, m_new.benchmark) if m_old and m_new else []
    system_change = any(p.startswith("systems") for p in parts)
    inputs = [p for p in parts if not p.startswith("systems")]
    if inputs:
        lines.append(
            "- **the benchmark itself changed**: "
            + "; ".join(inputs)
            + ". Scores are not comparable; only what was rerun the same way is compared below."
        )
    old, new = ResultsFolder(before).board, ResultsFolder(after).board
    added = sorted(set(new["system"]) - set(old["system"]))
    removed = sorted(set(old["system"]) - set(new["system"]))
    why = " (the benchmark's list of systems changed)" if system_change else ""
    if added:
        lines.append("- new systems: " + ", ".join(added) + why)
    if removed:
        lines.append("- systems gone: " + ", ".join(removed) + why)
    joined = new.join(old, on="system", suffix="_before")
    groups = "group" in new.columns and "group" in old.columns  # a leaderboard without groups has none to compare
    for r in joined.iter_rows(named=True):
        if r["borda_rank"] != r["borda_rank_before"]:
            lines.append(f"- {r['system']}: rank {r['borda_rank_before']} → {r['borda_rank']}")
        if groups and r["group"] != r["group_before"]:
            lines.append(f"- {r['system']}: group {r.get('group_before')} → {r.get('group')}")
    cmp = comparison.compare_runs(before, after, headline, statistics)
    for r in cmp.overall.filter(pl.col("verdict").is_in(comparison.SIGNIFICANT)).iter_rows(named=True):
        lines.append(
            f"- {r['system']}: {headline} changed significantly by {r['delta']:+.4f} "
            f"[{r['ci_low']:+.4f}, {r['ci_high']:+.4f}]"
        )
    cells = cmp.significant()
    if cells.height:
        lines += [
            "",
            f"Significant changes per dataset × condition ({headline}, after − before, "
            f"{level(statistics.confidence)} intervals; {statistics.contract()}):",
            "",
        ]
        lines += [
            f"- {r['system']} on {r['dataset']} / {r['condition']}: {r['delta']:+.4f} "
            f"[{r['ci_low']:+.4f}, {r['ci_high']:+.4f}] ({r['verdict']})"
            for r in cells.iter_rows(named=True)
        ]
    if len(lines) == header:
        lines.append("- nothing changed: same benchmark, same systems, ranks and groups, no significant score change")
    return "\n".join(lines) + "\n"


def since_last_nightly(manifest: RunManifest, config: EvalConfig) -> str:
    """changes.md of a nightly run: what changed since the previous completed nightly of the same benchmark under the
    same results folder (at the run's interval level and Holm setting), or that there is none yet."""
    current = Path(manifest.run_dir)
    before = previous_nightly(current.parent, manifest)
    if before is None:
        return (
            f"# terazi: first nightly run of benchmark `{config.benchmark}`\n\n"
            f"No earlier completed nightly of this benchmark under {current.parent} to compare with.\n"
        )
    log.info("comparing with the previous nightly %s", before)
    return changes_since(before, current, config.headline, config.statistics())
