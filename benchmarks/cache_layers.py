"""Switching the warm path's cache layers off one at a time, for bench_warm's `--layer-rounds`: what each saves."""

from __future__ import annotations

import statistics
from pathlib import Path

LAYERS = ("outputs", "file-hashes", "bootstraps")


def layer_table(layers: dict[str, list[dict]]) -> None:
    """What each cache layer saves: the median warm run without it against the median with every layer."""
    base = {k: statistics.median(r[k] for r in layers["all"]) for k in ("flow", "wall")}
    print("\n| layer switched off | flow (median) | saving in the flow | share of the warm flow | wall (median) |")
    print("|---|---:|---:|---:|---:|")
    for name, rows in layers.items():
        flow, wall = (statistics.median(r[k] for r in rows) for k in ("flow", "wall"))
        runs = ", ".join(f"{r['flow']:.2f}" for r in rows)
        print(
            f"| {name} | {flow:.2f} s ({runs}) | {flow - base['flow']:+.2f} s | "
            f"{(flow - base['flow']) / flow:.0%} | {wall:.1f} s |"
        )


def switch_off(layer: str) -> None:
    """Run this process without one of the warm path's cache layers, to measure what it saves: `outputs` (stage
    outputs made again instead of linked), `file-hashes` (big inputs hashed from their bytes each run) or `bootstraps`
    (every bootstrap interval drawn again)."""
    from contextlib import nullcontext

    from terazi.store import bootstraps, derived, file_hashes

    if layer == "outputs":
        derived.stored = lambda cache_dir, stage_key: None
        derived.reuse = lambda cache_dir, stage_key, out_dir, make: make(Path(out_dir))
        derived._one_file = lambda cache_dir, name, make, read, write: make()
    elif layer == "file-hashes":
        file_hashes.book_in = lambda cache_dir: None
    elif layer == "bootstraps":
        bootstraps.opened = lambda cache_dir: nullcontext()
    elif layer:
        raise SystemExit(f"no cache layer {layer!r}")
