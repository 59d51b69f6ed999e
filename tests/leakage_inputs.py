"""Inputs the leakage tests share: a planted 10-word sentence, filler texts, tiny BEIR datasets."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

from terazi.base.turkish import to_ascii
from terazi.data.beir import load_beir, write_beir
from terazi.leakage import LeakageOptions, TrainSource, check

PLANTED = "kuzey rüzgârı sabah erkenden şehrin dar sokaklarında ıslık çalarak dolaştı"  # 10 words
FILLER = "bugün hava oldukça güzeldi ve çocuklar parkta top oynadılar akşama kadar"
OTHER = "masanın üstünde kırmızı bir elma ile yarım kalmış bir kitap duruyordu"


def dataset(
    root: Path,
    name: str,
    docs: list[tuple[str, str]],
    queries: list[tuple[str, str]],
    qrels: list[tuple[str, str, int]] | None = None,
):
    qrels = qrels if qrels is not None else [(queries[0][0], docs[0][0], 1)]
    return load_beir(
        write_beir(
            root / name, [{"_id": i, "text": t} for i, t in docs], [{"_id": i, "text": t} for i, t in queries], qrels
        )
    )


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def bench_dataset(tmp_path):
    return dataset(
        tmp_path,
        "bench",
        [("d1", f"{FILLER}. {PLANTED}, dedi."), ("d2", OTHER)],
        [("q1", "rüzgâr neden ıslık çalar"), ("q2", "elma nerede")],
        [("q1", "d1", 1), ("q2", "d2", 1)],
    )


def hits(tmp_path, bench, text: str, **options):
    src = jsonl(tmp_path / "train.jsonl", [{"text": "başka bir şey"}, {"text": text}])
    r = check([bench], [TrainSource(path=str(src))], LeakageOptions(**options))
    return r.datasets[0].passage_hits, r.train_hits


def window(k: int, start: int = 1) -> str:
    return " ".join(PLANTED.split()[start : start + k])


def reference_tokens(text: str, fold: bool) -> list[str]:
    """The normalisation rules written out in plain Python, character by character: dotted and dotless i one letter
    (however the text was cased), Turkish letters to ASCII with `fold`."""
    t = unicodedata.normalize("NFC", text)
    t = t.replace("İ", "i").replace("I", "i").replace("ı", "i").lower().replace("i\u0307", "i")
    t = to_ascii(t) if fold else t
    t = re.sub("['’‘ʼ`´]", "", t)
    out, cur = [], []
    for ch in t:
        if unicodedata.category(ch)[0] in "LMN":
            cur.append(ch)
        elif cur:
            out.append("".join(cur))
            cur = []
    return out + (["".join(cur)] if cur else [])


def python_ngrams(text: str, n: int, fold: bool = False) -> set[tuple[str, ...]]:
    toks = reference_tokens(text, fold)
    return {tuple(toks[i : i + n]) for i in range(len(toks) - n + 1)}
