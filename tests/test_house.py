"""The house keeps its shape: imports run one way, no circle, at most 10 floors, a root of at most 4 modules, small
modules, thin tasks, no code that only tests call, and `terazi` as the one name an installation adds.

Rooms are the folders, as docs/architecture.md draws them: each package of terazi (base/, store/, data/, rerank/,
config/, …) is one room, and so are schemas/, tasks/, flows/, deployments/ and cli/; a module of the root (api,
version) is a room of its own. A room's layer is its folder's: `LAYERS` orders the folders that are not stages, and
every other package of terazi is a stage; a new leaf goes into base/, a new stage is a new folder, and neither
touches this file. A room's floor is one above the highest room it imports. Imports are read from the source (every
`import`, also inside functions, and `module:Name` strings of registries), not from what happens to be loaded.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import zipfile
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAPPED = ("schemas", "tasks", "flows", "deployments")  # top-level folders installed as terazi.<name>
# the layers, bottom up, by folder (root modules by name); every other package of terazi is a stage ("core"). A room
# may import rooms of a lower layer, and a stage other stages.
LAYERS = (
    ("base", "version"),
    ("schemas",),
    ("store",),
    ("core",),
    ("config", "upkeep"),
    ("tasks",),
    ("flows",),
    ("deployments",),
    ("api",),
    ("cli",),
    ("terazi",),
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}
MAX_FLOORS, MAX_LINES, MAX_ROOT_MODULES = 10, 400, 4
REGISTRY_STRING = re.compile(r"^(terazi(?:\.\w+)+):\w+$")


@cache
def modules() -> dict[str, Path]:
    """Dotted name → file of every module of the package, as installed."""
    out = {}
    for path in sorted((ROOT / "terazi").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    for top in MAPPED:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = ("terazi",) + path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _target(name: str) -> str | None:
    """The module of ours an imported dotted name lands in (a module, or the package whose attribute it is)."""
    mods = modules()
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


@cache
def imports() -> dict[str, set[str]]:
    """module → the modules of ours it imports (anywhere in the file)."""
    mods, out = modules(), {}
    for mod, path in mods.items():
        found: set[str] = set()
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(
                        package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                    )
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and REGISTRY_STRING.match(node.value):
                names = [REGISTRY_STRING.match(node.value)[1]]
            for n in names:
                if n.split(".")[0] == "terazi" and (t := _target(n)) and t != mod:
                    found.add(t)
        out[mod] = found
    return out


def room(mod: str) -> str:
    parts = mod.split(".")
    if len(parts) == 1:
        return "terazi"
    return parts[1]


def kind(r: str) -> str:
    """A room's layer: its folder's (or root module's) name where `LAYERS` names it, else a stage."""
    return r if r in RANK else "core"


def rooms() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for mod, targets in imports().items():
        out.setdefault(room(mod), set()).update(room(t) for t in targets if room(t) != room(mod))
    return out


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_in_a_circle():
    assert circles(imports()) == []


def test_rooms_import_one_way_without_a_circle():
    graph = rooms()
    assert circles(graph) == []
    upward = sorted(
        f"{a} -> {b}"
        for a, targets in graph.items()
        for b in targets
        if RANK[kind(a)] < RANK[kind(b)] or (RANK[kind(a)] == RANK[kind(b)] and kind(a) != "core")
    )
    assert upward == [], "imports that run up: " + ", ".join(upward)


def test_at_most_ten_floors():
    graph = rooms()
    floors: dict[str, int] = {}

    def floor(r: str) -> int:
        if r not in floors:
            floors[r] = 1 + max((floor(t) for t in graph.get(r, ())), default=0)
        return floors[r]

    top = max(floor(r) for r in graph)
    assert top <= MAX_FLOORS, sorted(floors.items(), key=lambda x: -x[1])


def test_schemas_import_leaves_only_and_leaves_nothing():
    leaves = {r for r in rooms() if kind(r) in LAYERS[0]}
    bad = sorted({room(t) for m, ts in imports().items() if room(m) == "schemas" for t in ts} - {*leaves, "schemas"})
    assert bad == []
    assert {r: sorted(ts) for r, ts in rooms().items() if r in leaves and ts} == {}


def test_the_root_holds_at_most_four_modules_and_every_other_folder_is_a_room():
    root = sorted(p.name for p in (ROOT / "terazi").glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, root
    named = {n for names in LAYERS for n in names} - {"core", "terazi"}
    folders = {p.name for p in (ROOT / "terazi").iterdir() if (p / "__init__.py").is_file()} | set(MAPPED)
    assert named - folders - {p.stem for p in (ROOT / "terazi").glob("*.py")} == set()  # LAYERS names real folders


def test_one_name_per_idea():
    """A module's file name says one thing: at most 4 names stand for two modules (a command and the stage it runs,
    say), and the leakage check is called leakage, never by its old names."""
    names = Counter(p.name for p in (ROOT / "terazi").rglob("*.py") if p.name != "__init__.py")
    assert len([n for n, k in names.items() if k > 1]) <= 4, sorted(n for n, k in names.items() if k > 1)
    old = [m for m in modules() if any(w in m for w in ("contamination", "decontaminated", "exclusions"))]
    assert old == []


def test_no_module_is_over_400_lines():
    files = [*modules().values(), *(ROOT / "benchmarks").glob("*.py"), *(ROOT / "tests").glob("*.py")]
    long = {
        str(p.relative_to(ROOT)): n for p in files if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_tasks_are_thin_wrappers_that_import_no_other_task_module():
    for path in sorted((ROOT / "tasks").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        others = [
            n
            for n in imports()[f"terazi.tasks.{path.stem}" if path.stem != "__init__" else "terazi.tasks"]
            if n.startswith("terazi.tasks.")
        ]
        assert others == [], f"{path.name} imports {others}"
        if path.name == "__init__.py":
            continue
        loops = [
            type(n).__name__
            for n in ast.walk(tree)
            if isinstance(n, (ast.For, ast.While, ast.ListComp, ast.DictComp, ast.SetComp, ast.GeneratorExp))
        ]
        assert loops == [], f"{path.name} computes ({', '.join(loops)}): that belongs to the core"
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decorators = [ast.unparse(d) for d in node.decorator_list]
                assert any(d.startswith("task") for d in decorators), f"{path.name}: {node.name} is not a task"
                assert len(node.body) <= 4, f"{path.name}: {node.name} has {len(node.body)} statements"


def test_recipes_run_every_task_through_steps():
    """A flow runs a task only through its `Steps` (flows/steps.py): never calls one or `.submit`s it itself, so the
    same recipe runs in a test's process (tests/stages.py). The steps and the model runner are where tasks are run."""
    direct = []
    for path in sorted((ROOT / "flows").glob("*.py")):
        if path.stem in ("steps", "runners"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = ast.unparse(node.func)
                if name.endswith("_task") or name.endswith(".submit"):
                    direct.append(f"{path.name}:{node.lineno} {name}")
    assert direct == []


@cache
def uses() -> Counter:
    """How often each name is used as code in the package: read (a name, an attribute), imported by name, or named in
    a registry string ("terazi.x:Class"); never a word in a docstring or a comment."""
    count: Counter = Counter()
    for path in modules().values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                count[node.id] += 1
            elif isinstance(node, ast.Attribute):
                count[node.attr] += 1
            elif isinstance(node, ast.ImportFrom):
                count.update(a.name for a in node.names)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and REGISTRY_STRING.match(node.value):
                count[node.value.rsplit(":", 1)[1]] += 1
    return count


def test_every_function_is_used_by_the_package_itself():
    """No twin paths: a top-level function or class that only tests or benchmarks call has no place in the package."""
    used = uses()
    unused = []
    for mod, path in modules().items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith(
                "__"
            ):
                registered = any(
                    re.match(r"(\w+\.)?(command|callback|flow|task|declares)\b", ast.unparse(d))
                    for d in getattr(node, "decorator_list", [])
                )
                if not registered and used[node.name] == 0:
                    unused.append(f"{mod}.{node.name}")
    assert unused == []


@pytest.mark.slow
def test_an_installation_adds_terazi_and_nothing_else(tmp_path):
    source = tmp_path / "source"  # built from a copy: the build leaves nothing in the checkout
    for part in ("terazi", *MAPPED):
        shutil.copytree(ROOT / part, source / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("pyproject.toml", "README.md"):
        shutil.copyfile(ROOT / part, source / part)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    wheel = zipfile.ZipFile(next(tmp_path.glob("terazi-*.whl")))
    names = wheel.namelist()
    assert {n.split("/")[0] for n in names if ".dist-info/" not in n} == {"terazi"}
    packaged = {str(Path(n).parent) for n in names if n.endswith("__init__.py")}
    expected = {
        ("terazi/" + str(p.parent.relative_to(ROOT)))
        if p.parent.name in MAPPED or p.parent.parent.name in MAPPED
        else str(p.parent.relative_to(ROOT))
        for p in modules().values()
        if p.name == "__init__.py"
    }
    assert packaged == expected, sorted(expected ^ packaged)
    assert any(n.startswith("terazi/demo/") for n in names), "the bundled demo dataset is part of the package"
