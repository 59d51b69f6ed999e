"""SQuAD-format files (e.g. XQuAD) as BEIR retrieval datasets."""

from __future__ import annotations

import json
from pathlib import Path

from terazi.data.beir import write_beir


def squad_to_beir(source: str | Path, target: str | Path, split: str = "test") -> dict[str, int]:
    """Paragraphs → corpus (`p<n>`, untitled, as measured in the notes), questions → queries, answer paragraph
    grade 1."""
    data = json.loads(Path(source).read_text(encoding="utf-8-sig"))["data"]
    docs, queries, qrels = [], [], []
    seen_q: set[str] = set()
    for article in data:
        for para in article["paragraphs"]:
            pid = f"p{len(docs)}"
            docs.append({"_id": pid, "text": para["context"].lstrip("\ufeff").strip()})
            for qa in para["qas"]:
                if qa["id"] in seen_q:
                    continue
                seen_q.add(qa["id"])
                queries.append({"_id": qa["id"], "text": qa["question"].strip()})
                qrels.append((qa["id"], pid, 1))
    write_beir(Path(target), docs, queries, qrels, split)
    return {"docs": len(docs), "queries": len(queries)}
