"""Every part of the cache folder, named once.

What a run keeps between runs lives under one folder (`--cache-dir`); each part has one name here, and every module
that reads or writes the cache, and `terazi cache check`, `repair`, `du` and `prune`, goes through `CacheLayout`.
`PARTS` says, for each part, whether it is derived (made again when removed) or paid for (never pruned), and which
file of an entry a run touches when it uses it (`terazi.base.paths.mark_used`), which is what pruning reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from terazi.base.paths import inside

OUTPUT_RECORD = ".meta.json"  # a stored output's record: its meta, its files' stamps and hashes
CANDIDATES_MANIFEST = "manifest.json"  # a frozen candidate set's manifest, written last


@dataclass(frozen=True)
class Part:
    """One part of the cache folder: its name on disk, what it holds, whether a prune may remove its entries (and
    whether it was paid for: weighed by `du` as kept), and the file of an entry whose mtime says when a run last used
    it (None: the entry itself)."""

    name: str
    holds: str
    prunable: bool
    used_by: str | None = None
    paid_for: bool = False


PARTS = {
    "scores": Part("scores.sqlite", "model scores (the local score store)", False, paid_for=True),
    "shared_scores": Part("scores", "model scores (a shared score store kept here)", False, paid_for=True),
    "costs": Part("costs", "measured cost per score identity", False, paid_for=True),
    "datasets": Part("datasets", "terazi's BEIR copies of hub data sets", False),
    "outputs": Part("outputs", "stage outputs linked into results folders, and single values", True, OUTPUT_RECORD),
    "candidates": Part("candidates", "frozen candidate sets", True, CANDIDATES_MANIFEST),
    "embeddings": Part("embeddings", "text vectors, one store per encoding", True),
    "corpus": Part("corpus", "corpus tables", True),
    "onnx": Part("onnx", "ONNX exports and int8 copies", True),
    "http": Part("http", "the lock files that bound a rerank API's requests in flight", False),
    "work": Part("work", "a running run's plans (removed when it ends)", True),
    "quarantine": Part("quarantine", "what was set aside as damaged, each with its record", True),
    "intervals": Part("intervals.sqlite", "bootstrap results by the content of their inputs", True),
    "file_hashes": Part("file-hashes.json", "hashes of big files by their stat stamps", False),
}


@dataclass(frozen=True)
class CacheLayout:
    """The cache folder `root`: a path per part (`layout.outputs`, `layout.candidates / key`, …), each proven to
    stay inside the root."""

    root: Path

    def __init__(self, root: str | Path):
        object.__setattr__(self, "root", Path(root))

    def part(self, name: str, *below: str) -> Path:
        return inside(self.root, PARTS[name].name, *below)

    scores = property(lambda self: self.part("scores"))
    shared_scores = property(lambda self: self.part("shared_scores"))
    costs = property(lambda self: self.part("costs"))
    datasets = property(lambda self: self.part("datasets"))
    outputs = property(lambda self: self.part("outputs"))
    candidates = property(lambda self: self.part("candidates"))
    embeddings = property(lambda self: self.part("embeddings"))
    corpus = property(lambda self: self.part("corpus"))
    onnx = property(lambda self: self.part("onnx"))
    http = property(lambda self: self.part("http"))
    work = property(lambda self: self.part("work"))
    quarantine = property(lambda self: self.part("quarantine"))
    intervals = property(lambda self: self.part("intervals"))
    file_hashes = property(lambda self: self.part("file_hashes"))

    def entries(self, name: str) -> list[Path]:
        """The entries of a part (a file part is its own one entry); items a run is writing (dot names) are not."""
        path = self.part(name)
        if path.is_file():
            return [path]
        return sorted(p for p in path.glob("*") if not p.name.startswith(".")) if path.is_dir() else []

    def used_marker(self, name: str, entry: Path) -> Path:
        """The file whose mtime says when a run last used `entry` of part `name`."""
        marker = PARTS[name].used_by
        return entry / marker if marker and entry.is_dir() else entry
