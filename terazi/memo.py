"""Stage outputs kept once in the cache folder under the hash of what makes them, hard-linked into each results folder.

The daily loop reruns the same datasets, candidates and rows with one thing changed. A stage whose inputs did not
change (its input files' bytes, its parameters, and `FORMAT`) finds its output files under `outputs/<key>/` in the
cache folder and links them into the results folder: nothing is computed and no byte is written again. The files
are the same inodes (a copy where the file system has no hard links), so a results folder costs its new files only;
every reader (trec_eval, ranx, polars, `terazi score`, `terazi analyze`) sees ordinary files. Objects are read-only
and never rewritten: a writer in the results folder replaces a linked file, it does not write into it.

`FORMAT` names the output formats of the stages that go through here: bump it when one of them changes what it writes
for the same inputs, so that objects of the old format are not reused.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import uuid
from pathlib import Path
from typing import Any, Callable

import polars as pl

from terazi import fingerprint, stamps
from terazi.paths import inside, link

FORMAT = 1
FOLDER = "outputs"
META = ".meta.json"


def key(stage: str, *parts: Any) -> str:
    """The key of a stage's output: its name, `FORMAT` and every input (JSON-able values; Paths by content). The
    parts must name everything the output's content and its paths in the results folder (dataset, system) depend on."""
    return f"{stage}-{fingerprint.of_json([FORMAT, stage, *[_part(p) for p in parts]])}"


def code(*modules: str) -> str:
    """SHA-256 of the source files of `modules` (a package: every .py below it), for the key of an output that the
    code itself makes (the corruptions): editing that code makes new outputs without anyone bumping `FORMAT`."""
    files = []
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise ValueError(f"no module {name!r}")
        origin = Path(spec.origin)
        files += sorted(origin.parent.rglob("*.py")) if origin.name == "__init__.py" else [origin]
    return fingerprint.of_json([[f.name, stamps.file_digest(f)] for f in files])


def _part(value: Any) -> Any:
    if isinstance(value, Path):
        return stamps.file_digest(value)  # hashed once per process while its stamp is unchanged
    if isinstance(value, (list, tuple)):
        return [_part(v) for v in value]
    return value


def stored(cache_dir: str | Path, stage_key: str) -> dict | None:
    """The meta of a stored output, or None when there is none."""
    meta = inside(cache_dir, FOLDER, stage_key) / META
    return json.loads(meta.read_text()) if meta.is_file() else None


def _kept(cache_dir: str | Path | None, name: str, make: Callable[[], Any], read: Callable[[Path], Any],
          write: Callable[[Any, Path], None]) -> Any:
    """A value made once per name and kept as one file among the stored outputs (written aside, then renamed); made
    each time without a cache."""
    if cache_dir is None:
        return make()
    path = inside(cache_dir, FOLDER, name)
    if path.is_file():
        return read(path)
    value = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    write(value, tmp)
    tmp.replace(path)
    return value


def remembered(cache_dir: str | Path | None, stage_key: str, make: Callable[[], str]) -> str:
    """A text made once per key and kept among the stored outputs (a rendered plot)."""
    return _kept(cache_dir, f"{stage_key}.txt", make, lambda p: p.read_text(encoding="utf-8"),
                 lambda text, p: p.write_text(text, encoding="utf-8"))


def table(cache_dir: str | Path | None, stage_key: str, make: Callable[[], pl.DataFrame]) -> pl.DataFrame:
    """A frame made once per key and kept among the stored outputs (an intermediate no results folder shows, e.g.
    the first stage's per-query recall)."""
    return _kept(cache_dir, f"{stage_key}.parquet", make, pl.read_parquet, lambda frame, p: frame.write_parquet(p))


def reuse(cache_dir: str | Path | None, stage_key: str, out_dir: str | Path, make: Callable[[Path], dict]) -> dict:
    """The files of output `stage_key` in `out_dir`, made only when the cache has none: `make(folder)` writes them
    under `folder` at the paths they have under `out_dir` (a results folder's layout) and returns a JSON-able meta,
    which is returned every time after. Concurrent runs making the same output keep the first one stored. Without
    a cache folder (a stage called on its own), `make(out_dir)` writes them in place."""
    if cache_dir is None:
        return make(Path(out_dir))
    obj = inside(cache_dir, FOLDER, stage_key)
    if not (obj / META).is_file():
        tmp = obj.with_name(f".{stage_key}.{uuid.uuid4().hex}")
        tmp.mkdir(parents=True)
        try:
            meta = make(tmp)
            for f in (p for p in tmp.rglob("*") if p.is_file()):
                f.chmod(0o444)
            (tmp / META).write_text(json.dumps(meta))
            shutil.rmtree(obj, ignore_errors=True)  # a stored output without its meta is incomplete
            try:
                tmp.rename(obj)
            except OSError:  # another run stored it meanwhile
                pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    for f in (p for p in obj.rglob("*") if p.is_file() and p.name != META):
        link(f, Path(out_dir) / f.relative_to(obj))
    return json.loads((obj / META).read_text())
