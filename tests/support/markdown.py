"""The links of a Markdown page, as the tests that follow them read them."""

from __future__ import annotations

import re

#: A Markdown link's target: ``[text](target)``.
LINK = re.compile(r"\]\(([^)\s]+)\)")


def link_targets(text: str) -> list[str]:
    """The relative targets of the Markdown links in ``text``, each without its ``#``
    anchor (no web addresses, no anchor within the page)."""
    found = LINK.findall(text)
    return [t.split("#")[0] for t in found if "://" not in t and not t.startswith("#")]
