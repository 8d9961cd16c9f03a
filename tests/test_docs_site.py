"""The documentation site's build fails on a broken link: ``make docs`` is a real link check.

The real site is built by ``make docs`` (``make test`` runs it); here a small tree of pages
is built with the site's own configuration (docs/conf.py), once with every link good and
once with a link to a missing page and one to a missing heading, which must fail the build
and be named.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build(tree: Path, out: Path) -> subprocess.CompletedProcess[str]:
    (tree / "docs").mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "sphinx", "-E", "-q", "-W", "--keep-going",
         "-c", str(ROOT / "docs"), "-b", "html", str(tree), str(out)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def pages(tree: Path, link: str) -> None:
    (tree / "docs").mkdir(parents=True, exist_ok=True)
    (tree / "docs" / "index.md").write_text(
        f"# Home\n\nSee [the page]({link}).\n\n```{{toctree}}\npage\n```\n", encoding="utf-8"
    )
    (tree / "docs" / "page.md").write_text("# Page\n\n## A heading\n\nText.\n", encoding="utf-8")


def test_good_links_build(tmp_path: Path) -> None:
    pages(tmp_path / "src", "page.md#a-heading")
    done = build(tmp_path / "src", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "docs" / "page.html").exists()


def test_a_missing_page_or_heading_fails_the_build(tmp_path: Path) -> None:
    pages(tmp_path / "a", "missing.md")
    done = build(tmp_path / "a", tmp_path / "out-a")
    assert done.returncode != 0
    assert "missing.md" in done.stderr
    pages(tmp_path / "b", "page.md#no-such-heading")
    done = build(tmp_path / "b", tmp_path / "out-b")
    assert done.returncode != 0
    assert "no-such-heading" in done.stderr
