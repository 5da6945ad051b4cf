"""The docs stay true: relative links resolve, and the source cites no lab notes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def _doc_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [f for f in files if f.is_file()]


def _broken_links(md: Path) -> list[str]:
    text = FENCE.sub("", md.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL or an anchor in the same page
        path = target.split("#", 1)[0]
        if not (md.parent / path).exists():
            broken.append(target)
    return broken


def test_docs_exist() -> None:
    names = {f.name for f in _doc_files()}
    assert {"README.md", "benchmarks.md", "tools.md", "sidecar.md"} <= names


@pytest.mark.parametrize("md", _doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(md: Path) -> None:
    assert _broken_links(md) == []


def test_broken_link_is_reported(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("x")
    page.write_text(
        "[ok](there.md#a) [web](https://example.com) [anchor](#top) [gone](missing.md)\n"
        "```\n[in code](not-checked.md)\n```\n"
    )
    assert _broken_links(page) == ["missing.md"]


def test_source_cites_no_lab_notes() -> None:
    citing = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "src").rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "lab-notes" in line or "§2.0" in line
    ]
    assert citing == []
