"""The README stays a guide (under 400 lines, the detail in docs/ and the module docstrings), and every relative
link in it and in docs/ leads somewhere: an existing file and, after a `#`, one of that page's headings."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def prose(text: str) -> str:
    """`text` without its fenced code blocks, where brackets and parentheses are code, not links."""
    return re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)


def anchors(page: Path) -> set[str]:
    """The `#fragment`s GitHub gives `page`'s headings: lowercased, punctuation dropped (backticks, colons, dots),
    spaces as hyphens, and a repeated heading numbered -1, -2, ..."""
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#+ (.+)$", prose(page.read_text()), flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            seen[f"{slug}-{count}"] = 1
    return set(seen)


def relative_links(page: Path) -> list[str]:
    return [t for t in LINK.findall(prose(page.read_text())) if not re.match(r"[a-z]+:", t)]


def broken_links(page: Path) -> list[str]:
    """`page`'s relative links whose file does not exist or whose `#fragment` is none of that file's headings."""
    broken = []
    for target in relative_links(page):
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or (fragment and file.suffix == ".md" and fragment not in anchors(file)):
            broken.append(target)
    return broken


def test_the_readme_is_under_400_lines():
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines < 400, f"README.md has {lines} lines: move detail to docs/ or the module docstrings (goal: < 400)"


def test_every_relative_link_in_the_readme_and_docs_leads_to_a_file_and_heading():
    broken = {page.relative_to(ROOT).as_posix(): links for page in PAGES if (links := broken_links(page))}
    assert not broken, f"relative links to no file or no heading: {broken}"


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in relative_links(ROOT / "README.md")}
    unlinked = [p.name for p in PAGES[1:] if p.resolve() not in linked]
    assert not unlinked, f"docs pages the README does not link: {unlinked}"


def test_the_link_checker_finds_a_missing_file_and_a_missing_heading(tmp_path):
    """A page linking `other.md#b`, where other.md's headings are 'A: `x` y' and 'A: `x` y' again, is broken; links
    to 'a-x-y', its repeat 'a-x-y-1', an absolute URL and a link inside a code block are not; `gone.md` is."""
    (tmp_path / "other.md").write_text("# A: `x` y\n\ntext\n\n## A: `x` y\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[1](other.md#a-x-y) [2](other.md#a-x-y-1) [3](https://example.org/x.md) [4](other.md#b) [5](gone.md)\n"
        "```\n[6](in-code.md)\n```\n"
    )
    assert broken_links(page) == ["other.md#b", "gone.md"]
