"""Every event data class of log/events.py names its section of spec/log.md, and it exists."""

from __future__ import annotations

import re
from pathlib import Path

from trio_agent.log import DATA_CLASSES

LOG_MD = Path(__file__).resolve().parents[2] / "spec" / "log.md"
#: The headings of spec/log.md without their data shape: "### `turn/start` — `{turn}`"
#: is cited as §``turn/start``.
SECTIONS = {
    line[4:].split(" — ")[0]
    for line in LOG_MD.read_text("utf-8").splitlines()
    if line[:4] == "### "
}


def test_every_data_class_cites_its_section_of_log_md() -> None:
    for type_, cls in DATA_CLASSES.items():
        doc = cls.__doc__ or ""
        assert "\n" not in doc.strip(), f"{cls.__name__}: a one-line docstring"
        found = re.search(r"\(spec/log\.md §(.+)\)\.$", doc.strip())
        assert found, f"{cls.__name__}: no spec/log.md § citation"
        section = found.group(1).replace("``", "`")
        assert section in SECTIONS, f"{cls.__name__} cites §{section}, not a heading of log.md"
        assert f"`{type_}`" in section, f"{cls.__name__} cites the section of another type"
