"""`terazi demo` and `terazi run`: a whole evaluation, then the leaderboard on the terminal."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Optional

import typer

from terazi.cli.common import VERBOSE, err, errors_as_lines, fail
from terazi.cli.places import Place, dataset_path, declares
from terazi.cli.show import print_leaderboard
from terazi.configs import demo_config, read_config_file

HTTP_KEY = "TERAZI_API_KEY"  # `--reranker http:…`: the variable the API key is read from


def parse_reranker(text: str) -> dict:
    """`bm25`, `cross-encoder:MODEL`, `bi-encoder:MODEL`, `llm-reranker:MODEL`, `rrf:first-stage+bm25`,
    `http:[MODEL@]URL`; `=NAME` at the end names the row."""
    from terazi.paths import slugify

    if text.startswith("http:"):
        return http_reranker(text.removeprefix("http:"))
    body, _, name = text.partition("=")
    kind, _, arg = body.partition(":")
    if kind == "bm25":
        return {"name": name or "bm25", "kind": "bm25"}
    if kind == "rrf":
        fuse = arg.split("+") if arg else ["first-stage", "bm25"]
        return {"name": name or "hybrid-rrf", "kind": "rrf", "fuse": fuse}
    if kind in ("cross-encoder", "bi-encoder", "llm-reranker") and arg:
        return {"name": name or slugify(Path(arg.rstrip("/")).name, kind), "kind": kind, "model": arg}
    raise typer.BadParameter(f"cannot read reranker {text!r}; use bm25, cross-encoder:MODEL, bi-encoder:MODEL, "
                             "llm-reranker:MODEL, http:[MODEL@]URL or rrf:A+B")


def http_reranker(text: str) -> dict:
    """`[MODEL@]URL[=NAME]`: a rerank API in the cohere dialect, its key read from `TERAZI_API_KEY` when that is set
    (other settings, and an address with a query string: the config file's `kind: http` row)."""
    from urllib.parse import urlsplit

    from terazi.paths import slugify

    rest, eq, name = text.rpartition("=")
    if not eq:
        rest, name = text, ""
    model, at, url = rest.partition("@")
    if not at or "://" in model:
        model, url = "", rest
    row = {"name": name or slugify(model.rsplit("/", 1)[-1] or (urlsplit(url).hostname or ""), "http"),
           "kind": "http", "url": url}
    return {**row, **({"model": model} if model else {}),
            **({"api_key_env": HTTP_KEY} if os.environ.get(HTTP_KEY) else {})}


def evaluate_and_print(raw: dict, config_file: Path | None = None) -> None:
    """Validate, check everything that can be checked before Prefect starts, run the flow, print."""
    from terazi import shutdown
    from terazi.cli.prefect_api import check_api, no_heartbeats, quiet_console, temporary_server
    from terazi.schemas import EvalConfig

    with errors_as_lines():
        config = EvalConfig.model_validate(raw)
        check_api()
        from terazi.results.folder import check_outputs

        check_outputs(config, [("config file", str(config_file))] if config_file else [])  # before anything is written
        with temporary_server() as server_ready:
            from terazi.preflight import preflight

            preflight(config, announce=False)  # datasets, models, output and cache folders: one-line errors first
            err.print("[dim]starting Prefect (a temporary local server unless PREFECT_API_URL is set)…[/]")
            quiet_console()
            from terazi.flows.evaluate import evaluate

            server_ready()
        t0 = time.perf_counter()
        with shutdown.graceful(), no_heartbeats():
            manifest = evaluate(config)
    print_leaderboard(Path(manifest.run_dir))
    for cs in manifest.candidates:
        how = "reused (no encoding)" if cs.reused else f"computed in {cs.seconds:.1f}s"
        err.print(f"first stage {cs.dataset}: candidates {cs.fingerprint} {how}; recall@{cs.depth} clean "
                  f"{cs.recall.get('clean', 0):.3f}")
    for r in manifest.reranks:
        if r.pairs_needed:
            err.print(f"{r.system} on {r.dataset}: {r.pairs_needed} pairs, {r.pairs_needed - r.pairs_unique} duplicates, "
                      f"{r.pairs_cached} cached, {r.pairs_scored} scored")
    err.print(f"results: {manifest.run_dir}  ({time.perf_counter() - t0:.1f}s)")


@declares(writes=(Place("out", "results folder"), Place("cache", "cache folder")))
def demo(
    out: str = typer.Option("results", help="results folder"),
    cache: str = typer.Option(".terazi-cache", help="frozen candidates, embeddings and score cache"),
    run_name: Optional[str] = typer.Option("demo", help="sub-folder of the results folder"),
    verbose: bool = VERBOSE,
) -> None:
    """Full evaluation on the bundled Turkish demo dataset, offline; prints the leaderboard."""
    evaluate_and_print(demo_config(out, cache, run_name))


@declares(reads=(Place("config", "config file"), Place("dataset", "dataset folder", dataset_path),
                 Place("exclude", "exclude folder")),
          writes=(Place("out", "results folder"), Place("cache", "cache folder")))
def run(
    config: Optional[Path] = typer.Option(None, "--config", "-c", dir_okay=False,
                                          help="YAML, JSON or TOML file with an EvalConfig"),
    dataset: list[str] = typer.Option([], "--dataset", "-d", help="BEIR folder, or hf:ORG/NAME (with @REVISION, #SUBSET), "
                                       "hf:/local/folder, mteb:TASK, ir_datasets:ID (repeatable)"),
    reranker: list[str] = typer.Option([], "--reranker", "-r",
                                       help="bm25 | cross-encoder:MODEL | bi-encoder:MODEL | llm-reranker:MODEL | "
                                            "http:[MODEL@]URL (key: $TERAZI_API_KEY) | rrf:A+B, optional =NAME "
                                            "(default: bm25-tr and hybrid-rrf, as in every entry point)"),
    encoder: Optional[str] = typer.Option(None, help="first-stage encoder: HF id or local path"),
    condition: list[str] = typer.Option([], "--condition", help="query condition (repeatable)"),
    split: Optional[str] = typer.Option(None, help="qrels split"),
    depth: Optional[int] = typer.Option(None, help="first-stage candidates per query"),
    rerank_depth: Optional[int] = typer.Option(None, help="candidates each reranker rescores"),
    samples: Optional[int] = typer.Option(None, help="samples per query for stochastic conditions (≥ 1)"),
    seed: Optional[int] = typer.Option(None),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="results folder; the run goes straight into it"),
    cache: Optional[str] = typer.Option(None, help="cache folder"),
    offline: bool = typer.Option(False, help="never contact a model hub"),
    exclude: Optional[str] = typer.Option(None, help="leakage output folder (`terazi leakage --out`): every headline "
                                                      "also without the queries it lists"),
    exclude_by: Optional[str] = typer.Option(None, help="with --exclude: queries (default: the contaminated ones) or "
                                                        "relevant (also those whose relevant passage is hit)"),
    no_limits: bool = typer.Option(False, "--no-limits", help="allow more work than the documented limits (resamples, "
                                   "samples, workers, pairs, bootstrap cells: docs/reliability.md)"),
    verbose: bool = VERBOSE,
) -> None:
    """Evaluate from a config file and/or flags (flags override the file)."""
    if no_limits:
        from terazi.policy import NO_LIMITS

        os.environ[NO_LIMITS] = "1"
    with errors_as_lines():
        raw: dict = read_config_file(config) if config else {}
    if dataset:
        raw["datasets"] = [{"path": d, **({"split": split} if split else {})} for d in dataset]
    elif split:
        for d in raw.get("datasets", []):
            d["split"] = split
    if reranker:
        raw["rerankers"] = [parse_reranker(r) for r in reranker]
    if encoder:
        raw.setdefault("encoder", {})["model"] = encoder
    if condition:
        raw["conditions"] = condition
    if samples is not None:
        raw.setdefault("corruption", {})["samples"] = samples
    for key, value in (("depth", depth), ("rerank_depth", rerank_depth), ("seed", seed), ("cache_dir", cache),
                       ("exclude", exclude), ("exclude_by", exclude_by)):
        if value is not None:
            raw[key] = value
    if out:
        raw["out_dir"], raw["run_name"] = str(Path(out).parent), Path(out).name
    if offline:
        raw["offline"] = True
    if not raw.get("datasets"):
        fail("no dataset: give --dataset PATH or a --config file with datasets")
    evaluate_and_print(raw, config)
