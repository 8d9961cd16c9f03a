#!/usr/bin/env python3
"""Copy docs/glossary.md into the demo page (trio_agent/demo/static/index.html).

    python scripts/demo-glossary.py          # rewrite the page's glossary block
    python scripts/demo-glossary.py --check  # exit 1 if the page's block is out of date

The page is served from the package and docs/ is not, so the page carries the glossary itself,
between its ``glossary:begin`` and ``glossary:end`` comments. Each ``**Term.** text`` paragraph
becomes a ``<dt>``/``<dd>`` pair; inline code stays code, links keep their text only (the spec
files they point to are not served). ``tests/demo/test_demo_glossary.py`` runs ``--check``'s test.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GLOSSARY = REPO / "docs" / "glossary.md"
PAGE = REPO / "trio_agent" / "demo" / "static" / "index.html"
BEGIN = re.compile(r"(<!-- glossary:begin[^>]*-->\n)(.*?)(<!-- glossary:end -->)", re.S)


def entries(markdown: str) -> list[tuple[str, str]]:
    """``(term, text)`` for each ``**Term.** text`` paragraph, in order."""
    found = []
    for para in re.split(r"\n\s*\n", markdown):
        match = re.match(r"\*\*(.+?)\.\*\*\s+(.*)", para.strip(), re.S)
        if match:
            found.append((match.group(1), " ".join(match.group(2).split())))
    return found


def inline(text: str) -> str:
    """Markdown inline text to HTML: code spans, links as their text, emphasis."""
    parts = re.split(r"(`[^`]+`)", text)
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
            continue
        part = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", part)
        escaped = html.escape(part, quote=False)
        out.append(re.sub(r"\*([^*]+)\*", r"<em>\1</em>", escaped))
    return "".join(out)


def block(markdown: str) -> str:
    rows = [f"<dt>{inline(term)}</dt><dd>{inline(text)}</dd>" for term, text in entries(markdown)]
    return "<dl>\n" + "\n".join(rows) + "\n</dl>\n"


def current(page: str) -> str:
    match = BEGIN.search(page)
    if match is None:
        raise SystemExit(f"{PAGE}: no glossary:begin / glossary:end block")
    return match.group(2)


def main(argv: list[str]) -> int:
    page = PAGE.read_text(encoding="utf-8")
    wanted = block(GLOSSARY.read_text(encoding="utf-8"))
    if "--check" in argv:
        if current(page) != wanted:
            print("the demo page's glossary is out of date: run scripts/demo-glossary.py")
            return 1
        return 0
    new = BEGIN.sub(lambda m: m.group(1) + wanted + m.group(3), page, count=1)
    PAGE.write_text(new, encoding="utf-8")
    count = len(entries(GLOSSARY.read_text(encoding="utf-8")))
    print(f"wrote the glossary ({count} terms) into {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
