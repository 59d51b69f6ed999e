"""What each way of folding letters costs and finds in the leakage check, on real Turkish text: the bundled demo and
XQuAD-tr (../shared/data/xquad/xquad.tr.json, turned into a BEIR folder by `terazi convert-squad`).

    .venv/bin/python benchmarks/leakage_folding.py [--xquad ../shared/data/xquad/xquad.tr.json]

False positives: pairs of sides that share no copy, so every hit is a shared 8-word sequence that is not a copy
(or one that folding made up): XQuAD-tr against the demo both ways, and XQuAD-tr's articles split in two halves
(paragraphs and questions of the first half against those of the second); repeats are counted with the default
near threshold (rapidfuzz ratio 90), where folding could make two different short questions one. Copies found:
XQuAD-tr against training copies of its own paragraphs and questions as real training data holds them, upper-cased by a
non-Turkish tool (`str.upper`: i → I, so Turkish lowercasing reads ı), typed without Turkish letters, or both. Each
setting is run with `fold_ascii` off and on; "Turkish I" is the casefolding before issue 37 (İ → i, I → ı), "any I"
today's (İ, I, ı, i → i).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.record import record


def beir_halves(folder: Path, out: Path) -> tuple[Path, Path]:
    """XQuAD-tr's BEIR folder cut into two by article (convert-squad numbers paragraphs in article order)."""
    from terazi.data.beir import write_beir

    docs = [json.loads(line) for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    queries = [json.loads(line) for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    qrels = [line.split("\t") for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    half = {d["_id"] for d in docs[: len(docs) // 2]}
    parts = []
    for k, keep in enumerate((lambda d: d in half, lambda d: d not in half)):
        judged = [(q, d, int(g)) for q, d, g in qrels if keep(d)]
        ids = {q for q, _, _ in judged}
        parts.append(
            write_beir(
                out / f"half{k}", [d for d in docs if keep(d["_id"])], [q for q in queries if q["_id"] in ids], judged
            )
        )
    return parts[0], parts[1]


def copies(folder: Path, out: Path) -> dict[str, Path]:
    """Training files of XQuAD-tr's own paragraphs (`text`) and questions (`query`) in one file, as three kinds of
    tools would have copied them."""
    from terazi.base.turkish import to_ascii

    texts = [
        (field, json.loads(line)["text"])
        for name, field in (("corpus.jsonl", "text"), ("queries.jsonl", "query"))
        for line in (folder / name).read_text(encoding="utf-8").splitlines()
    ]
    ways = {"upper (str.upper)": str.upper, "no Turkish letters": to_ascii, "both": lambda t: to_ascii(t).upper()}
    files = {}
    for name, way in ways.items():
        path = out / f"copies-{len(files)}.jsonl"
        path.write_text("".join(json.dumps({f: way(t)}, ensure_ascii=False) + "\n" for f, t in texts), encoding="utf-8")
        files[name] = path
    return files


def hits(bench: Path, train: Path, fold_ascii: bool, turkish_i: bool) -> tuple[int, int, int, int]:
    """(benchmark queries hit, passages hit, training records hit, queries repeated: exact or near, ratio 90)."""
    from terazi.data.beir import load_beir
    from terazi.leakage import normalize
    from terazi.leakage.overlap import check
    from terazi.schemas.leakage import LeakageOptions, TrainSource

    if turkish_i:
        normalize._folded = turkish_i_folded
    fields = ("text",) if train.is_dir() else ("text", "query")  # a BEIR folder is read as corpus and queries
    result = check(
        [load_beir(bench, name=bench.name)],
        [TrainSource(path=str(train), fields=fields)],
        LeakageOptions(fold_ascii=fold_ascii),
    )
    d = result.datasets[0]
    return len(d.query_hits), len(d.passage_hits), len(result.train_hits), len(d.repeats)


def turkish_i_folded(texts, fold_ascii: bool):
    """The casefolding before issue 37: İ → i and I → ı (Turkish lowercasing), ı → i only with fold_ascii."""
    from terazi.leakage import normalize

    e = texts.str.replace_many(["İ", "I"], ["i", "ı"]).str.to_lowercase().str.replace_all("i\u0307", "i", literal=True)
    if fold_ascii:
        e = e.str.replace_many([*normalize._ASCII_FROM, "ı"], [*normalize._ASCII_TO, "i"])
    return e.str.replace_all(normalize._APOSTROPHES, "")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--xquad", default=str(ROOT.parent / "shared" / "data" / "xquad" / "xquad.tr.json"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="terazi-folding-"))
    xquad = work / "xquad-tr"
    subprocess.run(
        [sys.executable, "-m", "terazi.cli", "convert-squad", args.xquad, str(xquad)], check=True, capture_output=True
    )
    demo = ROOT / "terazi" / "demo"
    a, b = beir_halves(xquad, work)
    settings = [
        ("XQuAD-tr vs demo", xquad, demo),
        ("demo vs XQuAD-tr", demo, xquad),
        ("XQuAD-tr half 1 vs half 2", a, b),
    ]
    settings += [(f"XQuAD-tr vs its copies: {name}", xquad, path) for name, path in copies(xquad, work).items()]
    print(
        "| benchmark vs training | casefolding | fold_ascii | queries hit | passages hit | training records hit | "
        "queries repeated |"
    )
    print("|---|---|---|---|---|---|---|")
    rows = []
    for label, bench, train in settings:
        for turkish_i in (True, False):
            for fold in (False, True):
                q, p, t, r = _fresh(bench, train, fold, turkish_i)
                print(
                    f"| {label} | {'Turkish I' if turkish_i else 'any I'} | {'on' if fold else 'off'} | {q} | {p} "
                    f"| {t} | {r} |",
                    flush=True,
                )
                rows.append(
                    {
                        "setting": label,
                        "casefolding": "Turkish I" if turkish_i else "any I",
                        "fold_ascii": fold,
                        "queries_hit": q,
                        "passages_hit": p,
                        "training_records_hit": t,
                        "queries_repeated": r,
                    }
                )
    record("leakage_folding", {"rows": rows})


def _fresh(bench: Path, train: Path, fold: bool, turkish_i: bool) -> tuple[int, int, int, int]:
    """One setting in a process of its own (the old casefolding is patched in, never left behind)."""
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); from benchmarks.leakage_folding import hits; "
        f"print(*hits(__import__('pathlib').Path({str(bench)!r}), __import__('pathlib').Path({str(train)!r}), "
        f"{fold}, {turkish_i}))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    return int(out[-4]), int(out[-3]), int(out[-2]), int(out[-1])


if __name__ == "__main__":
    main()
