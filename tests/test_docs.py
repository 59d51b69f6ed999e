"""The documentation stands alone: every relative link in README.md and docs/*.md resolves inside the repository
(anchors included), and none of it points outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lowercase, punctuation dropped, spaces as '-'."""
    out = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            out.add(re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", text)))
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve_inside_the_repository(page):
    links = LINK.findall(page.read_text(encoding="utf-8"))
    for target in links:
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto: not this test's business
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.name}: link {target!r} does not resolve"
        assert ROOT in dest.parents or dest == ROOT, f"{page.name}: link {target!r} leaves the repository"
        if anchor and dest.suffix == ".md":
            assert anchor in anchors(dest), f"{page.name}: no heading for #{anchor} in {dest.name}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_reference_outside_the_repository(page):
    text = page.read_text(encoding="utf-8")
    for outside in ("../shared", "/work/shared", "METHOD.md"):
        assert outside not in text, f"{page.name} mentions {outside}"


def test_the_readme_links_the_method():
    assert "(docs/method.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(LINK.findall((ROOT / "docs" / "method.md").read_text(encoding="utf-8"))) >= 3


# docs/architecture.md is the map a contributor moves by: every path it names must exist, every function and task
# its table names must be defined where it says. Paths: tokens under a top-level folder of the repository (in
# backticks, links, tables or the tree), and the modules or folders listed in brackets after a folder
# ("terazi/corrupt/ (conditions.py the table; letters.py …)"); placeholders (`<stage>`, `*`) are not paths.
ARCHITECTURE = ROOT / "docs" / "architecture.md"
TOP = ("terazi", "flows", "tasks", "schemas", "deployments", "tests", "benchmarks", "docs", "scripts", "configs")
PATH = re.compile(rf"(?<![\w./<-])(?:{'|'.join(TOP)})/[\w./<>*-]*")
LISTED = re.compile(rf"(?<![\w./<-])((?:{'|'.join(TOP)})/(?:[\w-]+/)*) \(([^()]*)\)")
DOTTED = re.compile(r"`([a-z_]+(?:\.[A-Za-z_]\w*)+)(?:\(.*?\))?`")
MAPPED = ("flows", "tasks", "schemas", "deployments")  # installed as terazi.flows, …


def named_paths(text: str) -> set[str]:
    paths = {p.rstrip(".,:;") for p in PATH.findall(text) if not re.search(r"[<>*]", p)}
    for folder, inside in LISTED.findall(text):
        paths |= {folder + name for name in re.findall(r"(?<![\w./-])([\w-]+\.py|[\w-]+/)(?![\w/])", inside)}
    return paths


def module_file(parts: list[str]) -> Path | None:
    """The file of a dotted module name: `terazi.store.derived`, `terazi.flows` or `flows.lifecycle`, and inside terazi
    `rerank.stage`."""
    if parts[0] == "terazi":
        parts = parts[1:]
    base = ROOT if parts and parts[0] in MAPPED else ROOT / "terazi"
    path = base.joinpath(*parts)
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return None


def defined(module: Path) -> set[str]:
    """Top-level names of a module (functions, classes, assignments, imports) and, for a package, its modules."""
    import ast

    names: set[str] = set()
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    if module.name == "__init__.py":
        names |= {p.stem for p in module.parent.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file()}
    return names


def dotted_names(text: str) -> list[tuple[str, str]]:
    """(module, name) for every dotted code name in backticks that starts at a module of the repository, and for the
    bare names that follow one in the same table cell (`retrieval.first_stage.encode_shard`, `search`)."""
    out = []
    for line in text.splitlines():
        for cell in line.split("|"):
            module = None
            for whole in re.findall(r"`([^`]+)`", cell):
                name = re.sub(r"\(.*\)$", "", whole)
                if DOTTED.fullmatch(f"`{whole}`"):
                    parts = name.split(".")
                    cut = next((k for k in range(len(parts), 0, -1) if module_file(parts[:k])), None)
                    if cut is None:
                        if parts[0] in ("terazi", *MAPPED) or module_file(parts[:1]):
                            out.append((name, ""))  # names a module of ours that is not there
                        continue
                    module = ".".join(parts[:cut])
                    if cut < len(parts):
                        out.append((module, parts[cut]))
                elif module and re.fullmatch(r"[a-z_]\w*", name) and "|" in line:
                    out.append((module, name))
    return out


def missing_paths(text: str) -> list[str]:
    return sorted(p for p in named_paths(text) if not (ROOT / p).exists())


def missing_code(text: str) -> list[str]:
    wrong = []
    for module, name in dotted_names(text):
        file = module_file(module.split("."))
        if file is None or (name and name not in defined(file)):
            wrong.append(f"{module}.{name}" if name else module)
    tasks = set().union(*(defined(p) for p in (ROOT / "tasks").glob("*.py")))
    return wrong + sorted(t for t in re.findall(r"`(\w+_task)`", text) if t not in tasks)


def test_every_path_architecture_names_exists():
    missing = missing_paths(ARCHITECTURE.read_text(encoding="utf-8"))
    assert missing == [], f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_function_and_task_architecture_names_is_defined():
    missing = missing_code(ARCHITECTURE.read_text(encoding="utf-8"))
    assert missing == [], f"docs/architecture.md names code that is not there: {missing}"


def test_the_architecture_checks_can_fail():
    """The checks on made-up text: a removed module, a wrong module in a folder's list, a misspelt function and
    task, a module that is not there."""
    text = (
        "| 2. | `corrupt_querys_task` | `corrupt.variants.corrupt_queries`, `corrupt_querys` | terazi/corrupt/ "
        "(letters.py, mobile.py, nowhere.py) | `terazi.nowhere.thing`, `flows.lifecycle.results_folder` | "
        "terazi/cli/kept_server.py, terazi/corrupt/typo.py |"
    )
    assert missing_paths(text) == ["terazi/cli/kept_server.py", "terazi/corrupt/nowhere.py"]
    assert missing_code(text) == ["corrupt.variants.corrupt_querys", "terazi.nowhere", "corrupt_querys_task"]


def map_rows(text: str) -> list[str]:
    """The first column of architecture.md's map (the code block that starts with the CLI): one path per row."""
    block = text.split("```\nterazi/cli/", 1)[1].split("```", 1)[0]
    return ["terazi/cli/", *(line.split()[0] for line in block.splitlines()[1:] if line[:1].strip())]


def test_the_map_names_every_folder_in_the_order_of_the_layers():
    """Every package of terazi is on the map (a row of its own, or a stage listed in the row of terazi/<stage>/), and
    the rows that are layers stand top-down in the order of tests/test_house.py's LAYERS."""
    from tests.test_house import LAYERS, MAPPED

    text = ARCHITECTURE.read_text(encoding="utf-8")
    rows = map_rows(text)
    stages = text.split("terazi/<stage>/", 2)[1].split("terazi/store/", 1)[0]
    packages = [p.name for p in sorted((ROOT / "terazi").iterdir()) if (p / "__init__.py").is_file()]
    unmapped = [
        n for n in [*packages, *MAPPED] if f"terazi/{n}/" not in rows and f"{n}/" not in rows and f" {n}/" not in stages
    ]
    assert unmapped == []
    layer = {name: rank for rank, names in enumerate(LAYERS) for name in names}
    ranks = [layer.get(r.removeprefix("terazi/").strip("/").removesuffix(".py"), None) for r in rows]
    ranks = [layer["core"] if r == "terazi/<stage>/" else k for r, k in zip(rows, ranks)]
    shown = [k for k in ranks if k is not None]
    assert shown == sorted(shown, reverse=True), list(zip(rows, ranks))


def test_the_two_commands_come_first_and_ci_runs_the_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"^(?: {4}|```\w*\n)(\S.*)$", readme, flags=re.MULTILINE)
    assert commands[:2] == ["bash scripts/demo", "bash scripts/test"]
    assert "bash scripts/test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def markdown_rows(text: str, first: str) -> dict[str, dict[str, str]]:
    """The first markdown table whose header starts with `first`: system → column → cell."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first} |"))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True))
        rows[cells["System"]] = cells
    return rows


def test_the_tour_shows_the_demo_as_it_is():
    """The README's leaderboard is the demo's (the golden test pins the demo's leaderboard.md): when the demo's
    figures change, the tour has to change with them."""
    tour = markdown_rows((ROOT / "README.md").read_text(encoding="utf-8"), "Group")
    demo = markdown_rows((ROOT / "tests" / "golden" / "demo" / "leaderboard.md").read_text(encoding="utf-8"), "Group")
    assert list(tour) == list(demo)
    for system, cells in tour.items():
        assert cells == {k: demo[system][k] for k in cells}, system
