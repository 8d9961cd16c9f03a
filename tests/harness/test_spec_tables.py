"""spec/harness.md §The scripted world states what the code plays: every menu entry, its
chunks, the step-3 entry, ``plan_entry``'s mapping and the bodies' result texts. A port is
written from the table, so the table is checked against ``trio_agent/testing/plan.py``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from trio_agent.runtime.scheduler import (
    ABORTED_BEFORE_DISPATCH_TEXT,
    ABORTED_BEFORE_START_TEXT,
    ABORTED_TEXT,
    DENIED_TEXT,
    FAILED_TEXT,
)
from trio_agent.testing.plan import FINAL_ENTRY, MENU, expected_chunks, plan_entry, unstarted_text

SPEC = (Path(__file__).resolve().parents[2] / "spec" / "harness.md").read_text("utf-8")
SECTION = SPEC.split("### The scripted world\n", 1)[1].split("\n### ", 1)[0]


def rows(header: str) -> list[list[str]]:
    """The cells of the table whose header line starts with ``header``."""
    table = SECTION.split(header, 1)[1].split("\n\n", 1)[0]
    return [
        [cell.strip() for cell in line.strip("|").split(" | ")]
        for line in table.splitlines()[2:]
        if line.startswith("|")
    ]


def codes(cell: str) -> list[Any]:
    return [json.loads(text) for text in re.findall(r"`(\{.*?\})`(?= |$)", cell)]


def test_the_entry_table_is_the_menu_and_its_chunks() -> None:
    table = {row[0].strip("`"): row for row in rows("| name | script entry |")}
    assert set(table) == {*MENU, "FINAL"}
    for name, row in table.items():
        entry = FINAL_ENTRY if name == "FINAL" else MENU[name]
        assert codes(row[1]) == [dict(entry)], name
        want = json.loads(
            json.dumps(expected_chunks(entry, 7, 9)).replace("call-7-9", "call-<t>-<s>")
        )
        assert codes(row[2]) == want, name


def test_the_mapping_is_plan_entry() -> None:
    assert '`FINAL`, `{"text": "wrapping up"}`' in SECTION
    plan = ["talk", "job", "cut"]
    for t in range(1, 6):
        for s in range(1, 5):
            want = FINAL_ENTRY if s > 2 else MENU[plan[(t - 1 + s - 1) % len(plan)]]
            assert plan_entry(plan, t, s) == want
    assert plan_entry([], 1, 1) == FINAL_ENTRY


def test_the_result_texts_are_the_runtimes() -> None:
    text = "\n".join(" | ".join(row) for row in rows("| call | body | result |"))
    for template in (ABORTED_TEXT, ABORTED_BEFORE_START_TEXT, ABORTED_BEFORE_DISPATCH_TEXT):
        assert template.format(name="<name>") in text
    assert DENIED_TEXT.format(name="job") in text
    assert FAILED_TEXT.format(name="job", error="RuntimeError: job <callId> failed") in text
    assert "`job <callId> done`" in text and '"text": "job <callId> started\\n"' in text


def test_the_unstarted_text_the_model_compares_is_the_runtimes() -> None:
    """A cancel in the dispatch flush (``tool/call:flushed``): the reference model compares
    the result with plan.py's text, which must be the runtime's and the table's (K17)."""
    for name in ("job", "sleep"):
        assert unstarted_text(name) == ABORTED_BEFORE_START_TEXT.format(name=name)
    assert unstarted_text("<name>") in "\n".join(
        " | ".join(row) for row in rows("| call | body | result |")
    )
