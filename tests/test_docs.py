"""The README stays a five-minute read, and every relative link of the README, bench/README.md and docs/ resolves."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_readme_is_short_and_starts_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) <= 20 * 1024
    first_block = text.split("```")[1]
    assert [line.split()[:2] for line in first_block.splitlines()[1:]] == [["make", "app"], ["make", "test"]]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_relative_links_resolve(page: Path):
    targets = [m.group(1).split("#")[0] for m in LINK.finditer(page.read_text())]
    broken = [t for t in targets if t and not re.match(r"[a-z]+:", t) and not (page.parent / t).exists()]
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"
