"""The code that makes a stored output, as one hash: what a key must contain so that a new terazi never reads an old
terazi's result.

A stage's output is a function of its inputs *and* of the code that computes it: a fix to nDCG, to the tie rule or
to the TREC writer must make new per-query values, rankings or run files, not link yesterday's. Prefect's own cache
policy keys a task's result by the task's source for this reason; a task's source alone misses the helpers it calls,
so here the key is the source of the module that makes the output and of every terazi module it imports, directly or
inside a function (its import closure, read from the source text), plus the versions of the libraries whose upgrade
can change the bytes written (numpy's generator and sums, polars' and pyarrow's writers).

The closure is the module's, not the whole package's: editing the metric engine changes the key of the per-query
values and of nothing that does not import it, so a warm run after such a change recomputes exactly the outputs
whose code moved (and, through their new content, whatever reads them). The package's own `__init__` (the public
API, which imports everything) is not followed. Model scores and text vectors are not keyed here: they are the
model's, and stay keyed by its identity.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import re
from importlib.metadata import version
from pathlib import Path

ROOT = "terazi"
LIBRARIES = ("numpy", "polars", "pyarrow")
# `import terazi.x[ as y]`, `from terazi.x import a, b` and `from terazi.x import (a,\n b)`, anywhere in a line's
# indentation (lazy imports inside functions count: they run when the output is made)
_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(terazi[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]+)|import[ \t]+(terazi[\w.]*))", re.M
)


def of_module(name: str) -> str:
    """SHA-256 (hex) of module `name`'s import closure within terazi (each file's name and bytes, in name order)
    and of the installed versions of `LIBRARIES`."""
    h = hashlib.sha256(libraries().encode())
    for module, path in sorted(closure(name).items()):
        h.update(module.encode() + b"\0" + _digest(path).encode() + b"\0")
    return h.hexdigest()


@functools.cache
def libraries() -> str:
    """The installed versions of `LIBRARIES`, read once a process: `importlib.metadata.version` scans the installed
    distributions on every call, and a warm run asks for a code key about a hundred times."""
    return "".join(f"{lib}={version(lib)}\0" for lib in LIBRARIES)


@functools.cache
def closure(name: str) -> dict[str, Path]:
    """Every terazi module `name` needs to run (itself, what it imports, and the packages above each), by file."""
    seen: dict[str, Path] = {}
    todo = [name]
    while todo:
        module = todo.pop()
        if module in seen or module == ROOT:
            continue
        path = _path(module)
        if path is None:  # a name imported from a module (a function, a class), not a module
            continue
        seen[module] = path
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(2, len(parts))]  # its packages' __init__ run first
        todo += _imports(module, path)
    return seen


@functools.cache
def _path(module: str) -> Path | None:
    parent = module.rpartition(".")[0]
    if parent and parent != ROOT and (p := _path(parent)) is not None and p.name != "__init__.py":
        return None  # `from terazi.store.derived import key`: key is an attribute of a plain module
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return Path(spec.origin) if spec is not None and spec.origin and spec.origin.endswith(".py") else None


@functools.cache
def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _imports(module: str, path: Path) -> list[str]:
    out = []
    for base, names, plain in _IMPORT.findall(path.read_text(encoding="utf-8")):
        if plain:
            out.append(plain)
            continue
        out.append(base)
        for item in names.strip("()").replace("\n", " ").split(","):
            if item.split():
                out.append(f"{base}.{item.split()[0]}")
    return out
