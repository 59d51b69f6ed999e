"""Text vectors kept in the cache folder, so that one model encodes a text once: the first stage's corpus shards and
query vectors, and a bi-encoder reranker's, in one store per encoding.

A store is a folder `embeddings/<key>/` named by `store_key`: the hash of `vector_identity` (everything that changes a
vector: the model's files, its runtime, the tokens it reads, the prefix, the precision and the device kind) and, for
documents, the corpus. So a bi-encoder reranker with the first stage's model, length, precision and device finds every
vector the first stage made, and encodes nothing. Its files are parts, each written once under a temporary name and
renamed, never changed: `rows-<a>-<b>.npy`, a first-stage corpus shard, whose keys are the corpus rows a…b-1, and
`part-<id>.npy` whose keys are in `keys-<id>.npy` (written first). Keys are corpus rows in a document store and text
keys (`terazi.base.fingerprint.text_keys`) in a query store. Vectors are unit-length float32.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from pathlib import Path

import numpy as np

from terazi.base import fingerprint
from terazi.base.paths import mark_used, write_atomic
from terazi.models.refs import ModelRef

log = logging.getLogger("terazi.vectors")
ROWS = re.compile(r"rows-(\d+)-(\d+)\.npy$")


def vector_identity(ref: ModelRef, runtime: str, tokens: int | None, prefix: str, precision: str, device: str) -> str:
    """What decides a text's vector, as one string (two encodings with the same one agree to float tolerance)."""
    return json.dumps(
        {
            "model": ref.identity,
            "runtime": runtime,
            "tokens": tokens,
            "prefix": prefix,
            "precision": precision,
            "device": device.split(":")[0],
        },
        sort_keys=True,
        ensure_ascii=False,
    )


def store_key(identity: str, corpus_fingerprint: str | None = None) -> str:
    """The store's folder name: documents' vectors per corpus (their keys are its rows), queries' per encoding."""
    return fingerprint.of_json([identity, corpus_fingerprint or "queries"])


def save_array(path: Path, array: np.ndarray) -> None:
    """Written under a temporary name, then renamed: a killed process leaves no half file."""

    def save(tmp: Path) -> None:
        with open(tmp, "wb") as f:  # a file, not a name: numpy adds `.npy` to a name without it
            np.save(f, array)

    write_atomic(path, save)


class VectorStore:
    """The vectors of one store folder, looked up by int64 key; parts are only ever added."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        mark_used(self.folder)

    def _parts(self):
        """(keys, vectors memory-mapped) of each readable part; an unreadable part is skipped (encoded again)."""
        for path in sorted(self.folder.glob("rows-*.npy")) + sorted(self.folder.glob("part-*.npy")):
            m = ROWS.search(path.name)
            try:
                keys = (
                    np.arange(int(m.group(1)), int(m.group(2)), dtype=np.int64)
                    if m
                    else np.load(path.with_name(f"keys-{path.name[5:]}"))
                )
                vectors = np.load(path, mmap_mode="r")
            except (OSError, ValueError):
                log.warning("vectors %s are unreadable: their texts are encoded again", path)
                continue
            if vectors.ndim == 2 and vectors.dtype == np.float32 and len(vectors) == len(keys):
                yield keys, vectors

    def get(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(found: one bool per key, the vectors of the found keys in their order; None when none is found)."""
        found = np.zeros(len(keys), dtype=bool)
        rows: list[np.ndarray] = []
        where: list[np.ndarray] = []
        for part_keys, vectors in self._parts() if len(keys) else ():
            order = np.argsort(part_keys, kind="stable")
            pos = np.minimum(np.searchsorted(part_keys[order], keys), len(order) - 1)
            hit = ~found & (part_keys[order][pos] == keys)
            if hit.any():
                where.append(np.flatnonzero(hit))
                rows.append(np.asarray(vectors[order[pos[hit]]]))
                found |= hit
        if not where:
            return found, None
        at, vec = np.concatenate(where), np.concatenate(rows)
        return found, vec[np.argsort(at, kind="stable")]

    def put(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        if not len(keys):
            return
        name = uuid.uuid4().hex
        save_array(self.folder / f"keys-{name}.npy", np.asarray(keys, dtype=np.int64))
        save_array(self.folder / f"part-{name}.npy", np.ascontiguousarray(vectors, dtype=np.float32))
