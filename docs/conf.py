"""Sphinx configuration of the documentation site (``make docs``).

The source directory is the repository's root, so the pages are the very files a reader
browses in the tree (README.md, docs/, spec/, notes/), written in Markdown (myst-parser), and
every relative link between them is checked as a cross-reference: ``make docs`` builds with
warnings as errors, so a broken link or anchor fails it. Links to source files outside the
pages become downloads of those files. External links are not fetched (the build never
touches the network); notes/2026-12-05-docs-site.md says why.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

project = "trio_agent"
author = "the trio_agent developers"
copyright = "2026, the trio_agent developers"  # Sphinx's name for it shadows a builtin

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
root_doc = "docs/index"
include_patterns = [
    "README.md",
    "bench/README.md",
    "docs/**",
    "spec/*.md",
    "notes/*.md",
    "trio_agent/**/*.svg",
]
exclude_patterns = ["build/**", ".venv/**", "docs/tutorial/*.py"]
source_suffix = {".md": "markdown"}

myst_heading_anchors = 4  # "file.md#a-heading" links resolve to headings
myst_enable_extensions = ["colon_fence"]
suppress_warnings = [
    "myst.header",  # a page may start at "##" under its own title
    # A block whose lexer Pygments lacks (jsonl) or that shows a shape, not JSON
    # ({"turn": T, ...}), is shown as plain text: nothing is lost but colour.
    "misc.highlighting_failure",
]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False}

html_theme = "alabaster"
html_title = "trio_agent"
html_theme_options = {"description": "Esc, kill -9, and the next open"}
