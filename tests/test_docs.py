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
