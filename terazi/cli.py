"""`terazi` command line: run evaluations, and the building blocks on their own."""

from __future__ import annotations

import sys

if __name__ == "__main__" and sys.argv[1:2] == ["score"]:  # `python -m terazi.cli score`: not even typer (see main())
    from terazi.scoring import main as _score_main

    sys.exit(_score_main(sys.argv[2:]))

import json
import logging
import os
import time
from pathlib import Path
from typing import Optional

import typer

from terazi.configs import demo_config, read_config_file
from terazi.errors import DatasetError, describe

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Weigh text rerankers and retrievers honestly.")


class _LazyConsole:
    """A rich Console made on first use, so that `terazi score --format json` never imports rich."""

    def __init__(self, **options) -> None:
        self._options, self._console = options, None

    def get(self):
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str):
        return getattr(self.get(), name)


console = _LazyConsole(width=None if sys.stdout.isatty() else 160)
err = _LazyConsole(stderr=True)

def _version(value: bool) -> None:
    if value:
        from terazi import __version__

        console.print(f"terazi {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version.")) -> None:
    """Weigh text rerankers and retrievers honestly."""

# Prefect settings that must be in place before prefect is imported: no telemetry unless the
# user opted in, and a start-up timeout that suits small machines. Values already set win.
_PREFECT_DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "TOKENIZERS_PARALLELISM": "false",
}


def _setup(verbose: bool) -> None:
    from rich.logging import RichHandler

    for k, v in _PREFECT_DEFAULTS.items():
        os.environ.setdefault(k, v)
    handler = RichHandler(console=err.get(), show_path=False, show_time=False, markup=False)
    log = logging.getLogger("terazi")
    log.handlers[:] = [handler]
    log.setLevel(logging.DEBUG if verbose else logging.INFO)
    log.propagate = False


def _fail(message: str) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(2)


def parse_reranker(text: str) -> dict:
    """`bm25`, `cross-encoder:MODEL`, `bi-encoder:MODEL`, `rrf:first-stage+bm25`; `=NAME` at the end names the row."""
    body, _, name = text.partition("=")
    kind, _, arg = body.partition(":")
    if kind == "bm25":
        return {"name": name or "bm25", "kind": "bm25"}
    if kind == "rrf":
        fuse = arg.split("+") if arg else ["first-stage", "bm25"]
        return {"name": name or "hybrid-rrf", "kind": "rrf", "fuse": fuse}
    if kind in ("cross-encoder", "bi-encoder") and arg:
        return {"name": name or Path(arg.rstrip("/")).name, "kind": kind, "model": arg}
    raise typer.BadParameter(f"cannot read reranker {text!r}; use bm25, cross-encoder:MODEL, bi-encoder:MODEL or rrf:A+B")


def _run(raw: dict) -> None:
    from pydantic import ValidationError

    from schemas import EvalConfig

    try:
        config = EvalConfig.model_validate(raw)
    except ValidationError as e:
        _fail("invalid configuration:\n  " + describe(e, sep="\n  "))
    from terazi.models import ModelError

    err.print("[dim]starting Prefect (a temporary local server unless PREFECT_API_URL is set)…[/]")
    from flows.evaluate import run_evaluation

    t0 = time.perf_counter()
    try:
        manifest = run_evaluation(config)
    except (DatasetError, ModelError) as e:
        _fail(str(e))
    print_leaderboard(Path(manifest.run_dir) / "leaderboard.csv", config.headline)
    for cs in manifest.candidates:
        how = "reused (no encoding)" if cs.reused else f"computed in {cs.seconds:.1f}s"
        err.print(f"first stage {cs.dataset}: candidates {cs.fingerprint} {how}; recall@{cs.depth} clean "
                  f"{cs.recall.get('clean', 0):.3f}")
    for r in manifest.reranks:
        if r.pairs_needed:
            err.print(f"{r.system} on {r.dataset}: {r.pairs_needed} pairs, {r.pairs_needed - r.pairs_unique} duplicates, "
                      f"{r.pairs_cached} cached, {r.pairs_scored} scored")
    err.print(f"results: {manifest.run_dir}  ({time.perf_counter() - t0:.1f}s)")


def print_leaderboard(path: Path, headline: str) -> None:
    """Rank, system, Borda votes, means; then the headline per condition with its retention."""
    import polars as pl
    from rich.table import Table

    board = pl.read_csv(path)
    conditions = [c for c in board.columns if f"{c} retention" in board.columns]  # config order
    datasets = [c for c in board.columns if c not in {"system", "borda_votes", "borda_rank", "mean_task", "group", "ci_low",
                "ci_high", "mean_task_type", "mean_task_complete", "mean_task_type_complete", "tasks"} and c not in conditions and not c.endswith(" retention")]
    table = Table(title=f"terazi leaderboard — {headline} (clean; corrupted with retention)",
                  caption="group: systems in one group are not significantly different (paired bootstrap)")
    for c in ["#", "system", "Borda", "group", "Mean (Task) [95% CI]", "Mean (TaskType)",
              *(datasets if len(datasets) > 1 else []), *conditions]:
        table.add_column(c, justify="left" if c == "system" else "right")

    def num(v, fmt="{:.4f}") -> str:
        return "–" if v is None else fmt.format(v)

    for r in board.iter_rows(named=True):
        ci = f" [{num(r['ci_low'], '{:.3f}')}, {num(r['ci_high'], '{:.3f}')}]" if r["mean_task"] is not None else ""
        cells = [str(r["borda_rank"]), r["system"], num(r["borda_votes"], "{:g}"), str(r["group"]),
                 num(r["mean_task"]) + ci, num(r["mean_task_type"])]
        cells += [num(r[d]) for d in datasets] if len(datasets) > 1 else []
        cells += [f"{num(r[c])} ({num(r[f'{c} retention'], '{:.0%}')})" for c in conditions]
        table.add_row(*cells)
    console.print(table)


@app.command()
def demo(
    out: str = typer.Option("results", help="results folder"),
    cache: str = typer.Option(".terazi-cache", help="frozen candidates, embeddings and score cache"),
    run_name: Optional[str] = typer.Option("demo", help="sub-folder of the results folder"),
    verbose: bool = typer.Option(False, "--verbose", "-v"),
) -> None:
    """Full evaluation on the bundled Turkish demo dataset, offline; prints the leaderboard."""
    _setup(verbose)
    _run(demo_config(out, cache, run_name))


@app.command()
def run(
    config: Optional[Path] = typer.Option(None, "--config", "-c", exists=True, dir_okay=False,
                                          help="YAML, JSON or TOML file with an EvalConfig"),
    dataset: list[str] = typer.Option([], "--dataset", "-d", help="BEIR folder (repeatable)"),
    reranker: list[str] = typer.Option([], "--reranker", "-r",
                                       help="bm25 | cross-encoder:MODEL | bi-encoder:MODEL | rrf:A+B, optional =NAME"),
    encoder: Optional[str] = typer.Option(None, help="first-stage encoder: HF id or local path"),
    condition: list[str] = typer.Option([], "--condition", help="query condition (repeatable)"),
    split: Optional[str] = typer.Option(None, help="qrels split"),
    depth: Optional[int] = typer.Option(None, help="first-stage candidates per query"),
    rerank_depth: Optional[int] = typer.Option(None, help="candidates each reranker rescores"),
    samples: Optional[int] = typer.Option(None, help="samples per query for stochastic conditions"),
    seed: Optional[int] = typer.Option(None),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="results folder; the run goes straight into it"),
    cache: Optional[str] = typer.Option(None, help="cache folder"),
    offline: bool = typer.Option(False, help="never contact a model hub"),
    verbose: bool = typer.Option(False, "--verbose", "-v"),
) -> None:
    """Evaluate from a config file and/or flags (flags override the file)."""
    _setup(verbose)
    raw: dict = read_config_file(config) if config else {}
    if dataset:
        raw["datasets"] = [{"path": d, **({"split": split} if split else {})} for d in dataset]
    elif split:
        for d in raw.get("datasets", []):
            d["split"] = split
    if reranker:
        raw["rerankers"] = [parse_reranker(r) for r in reranker]
    elif "rerankers" not in raw:
        raw["rerankers"] = [parse_reranker("bm25"), parse_reranker("rrf:first-stage+bm25")]
    if encoder:
        raw.setdefault("encoder", {})["model"] = encoder
    if condition:
        raw["conditions"] = condition
    if samples:
        raw.setdefault("corruption", {})["samples"] = samples
    for key, value in (("depth", depth), ("rerank_depth", rerank_depth), ("seed", seed), ("cache_dir", cache)):
        if value is not None:
            raw[key] = value
    if out:
        raw["out_dir"], raw["run_name"] = str(Path(out).parent), Path(out).name
    if offline:
        raw["offline"] = True
    if not raw.get("datasets"):
        _fail("no dataset: give --dataset PATH or a --config file with datasets")
    _run(raw)


@app.command(add_help_option=False, context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
def score(ctx: typer.Context) -> None:
    """Score a TREC run against qrels under a named, printed contract (trec_eval-compatible by default).

    terazi score --qrels QRELS --run RUN [-m nDCG@10 ...] [--contract trec|strict] [--format table|json];
    `terazi score --help` lists every option (parsed by terazi.scoring, without typer's per-option cost).
    """
    from terazi.scoring import main

    raise typer.Exit(main(ctx.args))


@app.command()
def corrupt(
    condition: str = typer.Option(..., help="clean | upper | ascii_full | ascii_partial | typo | colloquial | mobile; "
                                                 "compose with '+', e.g. upper+typo"),
    source: Optional[Path] = typer.Argument(None, exists=True, dir_okay=False,
                                            help="queries JSONL ({\"_id\": …, \"text\": …}); stdin when absent"),
    seed: int = typer.Option(13),
    rate: Optional[float] = typer.Option(None, help="typo: share of words edited; ascii_partial: share of letters stripped"),
    slip_rate: Optional[float] = typer.Option(None, help="mobile: share of words with a neighbour-key slip"),
    samples: int = typer.Option(1, min=1, help="samples per query (stochastic conditions only)"),
) -> None:
    """Corrupt queries the way people type; one JSONL record per variant on stdout."""
    from pydantic import ValidationError

    from schemas import Query
    from terazi.corrupt import CONDITIONS
    from terazi.corrupt import corrupt as corrupt_text
    from terazi.corrupt import samples_for

    if any(p not in CONDITIONS for p in condition.split("+")):
        _fail(f"unknown condition {condition!r}; known: {', '.join(CONDITIONS)} (compose with '+', e.g. upper+typo)")
    params = {k: v for k, v in (("rate", rate), ("slip_rate", slip_rate)) if v is not None}
    k = samples_for(condition, samples, **params)
    stream = open(source, encoding="utf-8-sig") if source else sys.stdin
    where = str(source) if source else "stdin"
    with stream:
        for n, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                q = Query.model_validate_json(line)
            except ValidationError as e:
                _fail(f"{where}, line {n}: {describe(e)}")
            for s in range(k):
                text = corrupt_text(q.text, condition, seed=seed, query_id=q.id, sample=s, **params)
                print(json.dumps({"_id": q.id, "text": text, "original": q.text, "condition": condition,
                                  "seed": seed, "sample": s, "changed": text != q.text}, ensure_ascii=False))


@app.command("leaderboard")
def leaderboard_cmd(
    source: Path = typer.Argument(..., exists=True, help="a long score table (CSV or parquet: system,task,task_type,"
                                  "score), an MTEB results folder (<model>/<revision>/<task>.json) or a terazi results folder"),
    fmt: str = typer.Option("table", "--format", help="table | csv | json | markdown | latex (booktabs)"),
    borda: Optional[str] = typer.Option(None, help="per-task (default; N = systems evaluated on each task, the ranking "
                                                    "note) | mteb (N = every system with any result, MTEB's code)"),
    out_of_ranking: list[str] = typer.Option([], "--out-of-ranking", help="task shown but not aggregated (repeatable)"),
    task_type: list[str] = typer.Option([], "--task-type", help="MTEB folders: TASK=TYPE for Mean (TaskType) "
                                                                "(repeatable); a TYPE alone is the default type"),
    split: Optional[str] = typer.Option(None, help="MTEB folders: only this split (default: every split in the files)"),
    language: Optional[str] = typer.Option(None, help="MTEB folders: only subsets in this language, e.g. tur"),
) -> None:
    """Borda count, Mean (Task) and Mean (TaskType) as the ranking note defines them, in any format."""
    import polars as pl

    from terazi import exports
    from terazi.leaderboard import BORDA, load_board

    if fmt not in exports.FORMATS:
        _fail(f"--format must be one of {', '.join(exports.FORMATS)}, got {fmt!r}")
    if borda is not None and borda not in BORDA:
        _fail(f"--borda must be one of {', '.join(BORDA)}, got {borda!r}")
    types = dict(t.split("=", 1) for t in task_type if "=" in t)
    defaults = [t for t in task_type if "=" not in t]
    try:
        board, note = load_board(source, borda, set(out_of_ranking), types, defaults[-1] if defaults else "unspecified",
                                 split, language)
    except (ValueError, pl.exceptions.PolarsError) as e:
        _fail(str(e))
    if fmt != "table":
        sys.stdout.write(exports.render(board, fmt, note))
        return
    from rich.markup import escape
    from rich.table import Table

    marks = exports.best(board)
    table = Table(title=f"{escape(source.name)}: leaderboard", caption=escape(note))
    for c in board.columns:
        table.add_column(exports.label(c), justify="left" if c == "system" else "right")
    for i, r in enumerate(board.iter_rows(named=True)):
        cells = [escape(exports.cell(c, r[c])) for c in board.columns]
        table.add_row(*(f"[bold]{v}[/]" if i in marks.get(c, ()) else v for c, v in zip(board.columns, cells)))
    console.print(table)


@app.command()
def serve(
    config: Optional[Path] = typer.Option(None, "--config", "-c", exists=True, dir_okay=False,
                                          help="benchmark config for both deployments' defaults (default: the demo)"),
    cron: str = typer.Option("0 2 * * *", help="nightly schedule (cron)"),
    timezone: str = typer.Option("Europe/Istanbul", help="time zone of the schedule"),
    limit: Optional[int] = typer.Option(None, help="most flow runs at once"),
    verbose: bool = typer.Option(False, "--verbose", "-v"),
) -> None:
    """Serve the ad-hoc and nightly deployments from this process (needs PREFECT_API_URL for a lasting server)."""
    _setup(verbose)
    from pydantic import ValidationError

    from deployments.evaluate import load_config, serve_all

    try:
        cfg = load_config(config)
    except ValidationError as e:
        _fail(f"invalid configuration {config}:\n  " + describe(e, sep="\n  "))
    if not os.environ.get("PREFECT_API_URL"):
        err.print("[yellow]PREFECT_API_URL is not set: serving against a temporary server that ends with this "
                  "process. Start one with `prefect server start` and export PREFECT_API_URL.[/]")
    err.print(f"serving terazi-run/ad-hoc and terazi-nightly/nightly (cron '{cron}', {timezone}); Ctrl-C stops")
    serve_all(cfg, cron, timezone, limit)


@app.command("convert-squad")
def convert_squad(
    source: Path = typer.Argument(..., exists=True, dir_okay=False, help="SQuAD-format JSON file"),
    target: Path = typer.Argument(..., help="BEIR folder to write"),
    split: str = typer.Option("test"),
) -> None:
    """SQuAD → BEIR: paragraphs become the corpus, questions the queries, the answer paragraph grade 1."""
    from terazi.squad import squad_to_beir

    counts = squad_to_beir(source, target, split)
    err.print(f"wrote {target}: {counts['docs']} passages, {counts['queries']} queries")


def main() -> None:
    """Console entry point (`terazi`, `python -m terazi.cli`).

    `terazi score` goes straight to its own parser: typer processes its group's --help option through
    pydantic (≈0.15 s) before it reaches any command, and `terazi score` is run in loops over run files.
    The typer command of the same name calls the same code, so both routes behave alike.
    """
    if sys.argv[1:2] == ["score"]:
        from terazi.scoring import main as score_main

        sys.exit(score_main(sys.argv[2:]))
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
