"""The docs stay true: relative links and their anchors resolve, and nothing cites a section by
its former `§2.0…` number (the lab notes themselves, history, excepted)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.M)
OLD_SECTION = re.compile(r"§2\.\d|\b2\.0z")


def _doc_files() -> list[Path]:
    files = [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        *sorted((ROOT / "docs").rglob("*.md")),
        *sorted((ROOT / "adapters").glob("*/README.md")),
        ROOT / "adapters" / "README.md",
    ]
    return [f for f in files if f.is_file()]


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


@cache
def _anchors(md: Path) -> frozenset[str]:
    if md.suffix != ".md":
        return frozenset()
    seen: dict[str, int] = {}
    anchors = set()
    for heading in HEADING.findall(FENCE.sub("", md.read_text(encoding="utf-8"))):
        slug = _slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return frozenset(anchors)


def _broken_links(md: Path) -> list[str]:
    text = FENCE.sub("", md.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # a URL
        path, _, anchor = target.partition("#")
        page = (md.parent / path) if path else md
        if not page.exists() or (anchor and anchor not in _anchors(page)):
            broken.append(target)
    return broken


def test_docs_exist() -> None:
    names = {str(f.relative_to(ROOT)) for f in _doc_files()}
    assert {"README.md", "docs/benchmarks.md", "docs/tools.md", "docs/sidecar.md"} <= names
    assert "adapters/smollm2-135m-sidecar/README.md" in names


@pytest.mark.parametrize("md", _doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(md: Path) -> None:
    assert _broken_links(md) == []


@pytest.mark.parametrize(
    "md",
    [f for f in _doc_files() if "lab-notes" not in f.parts],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_no_former_section_numbers(md: Path) -> None:
    lines = md.read_text(encoding="utf-8").splitlines()
    assert [n for n, line in enumerate(lines, 1) if OLD_SECTION.search(line)] == []


def test_broken_link_is_reported(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("# A `heading`, here\n\n## Twice\n\n## Twice\n")
    page.write_text(
        "# Top\n\n[ok](there.md#a-heading-here) [web](https://example.com) [anchor](#top)\n"
        "[second](there.md#twice-1) [gone](missing.md#a-heading-here) [no anchor](there.md#nowhere)\n"
        "[no self anchor](#bottom)\n"
        "```\n[in code](not-checked.md)\n# not a heading\n```\n"
    )
    assert _broken_links(page) == ["missing.md#a-heading-here", "there.md#nowhere", "#bottom"]


def test_former_section_number_is_caught() -> None:
    assert OLD_SECTION.search("as measured ([§2.0zz](lab-notes/x.md))")
    assert OLD_SECTION.search("see 2.0zzzzzzzzzz'' in the notes")
    assert not OLD_SECTION.search("version 2.0 of the format; 12.05 s")


def test_source_cites_no_lab_notes() -> None:
    citing = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "src").rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "lab-notes" in line or "§2.0" in line
    ]
    assert citing == []
