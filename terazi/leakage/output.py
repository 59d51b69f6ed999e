"""A leakage result as an output folder:

    summary.json            settings, per dataset counts and shares, examples and the first repeats; per source counts
    report.md, report.html  the same for people (the page is self-contained: no scripts, no outside files)
    train_hits.txt          training records to drop (`<file>:<line or row>`), any dataset
    <dataset>/queries.txt   contaminated queries (sharing an n-gram with training text, or repeated): leave them
                            out for a clean score
    <dataset>/passages.txt  passages sharing an n-gram with training text
    <dataset>/relevant_hit.txt  judged queries with a relevant passage among those
    <dataset>/train_hits.txt    training records sharing an n-gram with this dataset
    <dataset>/repeats.tsv   every repeated query: id, exact/near, score, training record, both texts normalised

Id lists hold one id a line, in the benchmark's file order (training records in reading order).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from terazi.base.paths import slugify, unique, writable_folder
from terazi.leakage.result import DatasetLeakage, LeakageResult
from terazi.present.labels import percent
from terazi.schemas.layout import LeakageLayout

SUMMARY_REPEATS = 100  # repeats listed in summary.json and the pages; repeats.tsv has them all


def folders(result: LeakageResult) -> list[str]:
    """Each dataset's subfolder name (its name made safe, repeats numbered)."""
    return unique([slugify(d.name) for d in result.datasets])


def summary(result: LeakageResult) -> dict[str, Any]:
    """summary.json's body: the result without its long id lists, which are counted and written to files."""
    body = result.model_dump(mode="json", exclude={"datasets", "train_hits"})
    body["train_hits"] = len(result.train_hits)
    body["datasets"] = []
    for d, folder in zip(result.datasets, folders(result)):
        ds = d.model_dump(
            mode="json",
            exclude={
                "query_hits",
                "passage_hits",
                "relevant_hit_queries",
                "train_hits",
                "contaminated_queries",
                "repeats",
            },
        )
        ds.update(
            folder=folder,
            query_hits=len(d.query_hits),
            passage_hits=len(d.passage_hits),
            relevant_hit_queries=len(d.relevant_hit_queries),
            train_hits=len(d.train_hits),
            contaminated_queries=len(d.contaminated_queries),
            exact_repeats=sum(r.kind == "exact" for r in d.repeats),
            near_repeats=sum(r.kind == "near" for r in d.repeats),
            repeats=[r.model_dump(mode="json") for r in d.repeats[:SUMMARY_REPEATS]],
        )
        body["datasets"].append(ds)
    return body


def _ids(path: Path, ids: list[str]) -> None:
    path.write_text("".join(_cell(i) + "\n" for i in ids), encoding="utf-8")


def _cell(text: str) -> str:
    return text.replace("\t", " ").replace("\r", " ").replace("\n", " ")


def write(result: LeakageResult, out: str | Path) -> Path:
    """Write the output folder (see the module's docstring); returns it."""
    root = writable_folder(out, "leakage output folder")
    layout = LeakageLayout(root)
    for d, name in zip(result.datasets, folders(result)):
        layout.dataset(name).mkdir(exist_ok=True)
        _ids(layout.queries(name), d.contaminated_queries)
        _ids(layout.passages(name), d.passage_hits)
        _ids(layout.relevant_hit(name), d.relevant_hit_queries)
        _ids(layout.dataset_train_hits(name), d.train_hits)
        rows = ["query_id\tkind\tscore\ttrain\tquery\ttrain_query"]
        rows += [
            "\t".join(_cell(str(v)) for v in (r.query_id, r.kind, r.score, r.train, r.query, r.train_query))
            for r in d.repeats
        ]
        layout.repeats(name).write_text("\n".join(rows) + "\n", encoding="utf-8")
    _ids(layout.train_hits, result.train_hits)
    body = json.dumps(summary(result), indent=2, ensure_ascii=False)
    layout.summary_json.write_text(body + "\n", encoding="utf-8")
    layout.report_md.write_text(markdown(result), encoding="utf-8")
    layout.report_html.write_text(page(result), encoding="utf-8")
    return root


def _rows(result: LeakageResult) -> list[list[str]]:
    head = [
        "dataset",
        "queries",
        "n-gram hit",
        "repeated (exact / near)",
        "contaminated",
        "passages",
        "passages hit",
        "relevant passage hit",
    ]
    out = [head]
    for d in result.datasets:
        s = d.shares
        exact = sum(r.kind == "exact" for r in d.repeats)
        out.append(
            [
                d.name,
                f"{d.queries:,}",
                f"{len(d.query_hits):,} ({percent(s['queries'])})",
                f"{exact:,} / {len(d.repeats) - exact:,}",
                f"{len(d.contaminated_queries):,} ({percent(s['queries_contaminated'])})",
                f"{d.passages:,}",
                f"{len(d.passage_hits):,} ({percent(s['passages'])})",
                f"{len(d.relevant_hit_queries):,} of {d.judged_queries:,} ({percent(s['relevant_hit'])})",
            ]
        )
    return out


def _settings(result: LeakageResult) -> str:
    o = result.options
    near = "exact repeats only"
    if o.near_threshold is not None:
        near = f"near repeats at rapidfuzz ratio ≥ {o.near_threshold:g}"
    return (
        f"{o.ngram}-word sequences, {'with' if o.fold_ascii else 'without'} ASCII folding of Turkish letters; "
        f"{near}; {result.held} side held in memory ({result.held_ngrams:,} n-grams); {result.seconds:.1f} s; "
        f"{len(result.train_hits):,} training record{'' if len(result.train_hits) == 1 else 's'} to drop."
    )


def _source_rows(result: LeakageResult) -> list[list[str]]:
    return [["source", "files", "records", "texts", "query texts", "records hit"]] + [
        [s.name, str(s.files), f"{s.records:,}", f"{s.texts:,}", f"{s.query_texts:,}", f"{s.records_hit:,}"]
        for s in result.sources
    ]


def _md_table(rows: list[list[str]]) -> str:
    esc = [[c.replace("|", "\\|") for c in r] for r in rows]
    return (
        "\n".join(
            ["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(esc[0])]
            + ["| " + " | ".join(r) + " |" for r in esc[1:]]
        )
        + "\n"
    )


def markdown(result: LeakageResult) -> str:
    parts = [
        "# Leakage check\n",
        _settings(result) + "\n",
        _md_table(_rows(result)),
        "## Training sources\n",
        _md_table(_source_rows(result)),
    ]
    for d in result.datasets:
        parts.append(f"## {d.name}\n")
        for e in d.examples:
            parts.append(
                f"- {e.kind} `{e.id}` ↔ `{e.train}`: **{e.ngram}**\n  - benchmark: {e.text}\n"
                f"  - training: {e.train_text}\n"
            )
        for r in d.repeats[:SUMMARY_REPEATS]:
            parts.append(
                f"- repeated query `{r.query_id}` ({r.kind}, {r.score:g}) ↔ `{r.train}`: {r.query} ↔ {r.train_query}\n"
            )
        if not d.examples and not d.repeats:
            parts.append("No shared n-gram and no repeated query.\n")
    return "\n".join(parts)


def _html_table(rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows[1:])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _marked(context: str, ngram: str) -> str:
    before, found, after = context.partition(ngram)
    if not found:
        return html.escape(context)
    return f"{html.escape(before)}<mark>{html.escape(found)}</mark>{html.escape(after)}"


def _dataset_html(d: DatasetLeakage) -> str:
    out = [f"<h2>{html.escape(d.name)}</h2>"]
    if d.examples:
        rows = "".join(
            f"<tr><td>{e.kind}<br><code>{html.escape(e.id)}</code></td><td>{_marked(e.text, e.ngram)}</td>"
            f"<td><code>{html.escape(e.train)}</code><br>{_marked(e.train_text, e.ngram)}</td></tr>"
            for e in d.examples
        )
        out.append(
            "<table><thead><tr><th>benchmark</th><th>benchmark text</th><th>training text</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )
    if d.repeats:
        rows = "".join(
            f"<tr><td><code>{html.escape(r.query_id)}</code></td><td>{r.kind}</td><td>{r.score:g}</td>"
            f"<td>{html.escape(r.query)}</td><td><code>{html.escape(r.train)}</code><br>"
            f"{html.escape(r.train_query)}</td></tr>"
            for r in d.repeats[:SUMMARY_REPEATS]
        )
        out.append(
            "<h3>Repeated queries</h3><table><thead><tr><th>query</th><th>kind</th><th>score</th>"
            f"<th>benchmark query</th><th>training query</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    if not d.examples and not d.repeats:
        out.append("<p>No shared n-gram and no repeated query.</p>")
    return "".join(out)


_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2em;max-width:75em}table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #ccc;padding:.3em .6em;vertical-align:top;text-align:left}th{background:#f3f3f3}"
    "mark{background:#ffe08a}code{font-size:.9em}"
)


def page(result: LeakageResult) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Leakage check</title>'
        f"<style>{_STYLE}</style></head><body><h1>Leakage check</h1><p>{html.escape(_settings(result))}</p>"
        f"{_html_table(_rows(result))}<h2>Training sources</h2>{_html_table(_source_rows(result))}"
        + "".join(_dataset_html(d) for d in result.datasets)
        + "</body></html>\n"
    )
