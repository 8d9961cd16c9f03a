"""The JSON that ``check --json`` and ``show --json`` print for tools (spec/cli.md
§`show --full` and JSON output).

Each shape is an attrs class, unstructured by one cattrs converter into the object written as
one line of stdout; a field that does not apply is ``null``, never left out, so a reader can
rely on every key being there.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import attrs
import cattrs
import orjson


@attrs.frozen
class TornTailJson:
    """A torn tail a command ignored: its first line, its size in bytes, why."""

    line: int
    bytes: int
    reason: str


@attrs.frozen
class CheckResult:
    """``check --json``: one per FILE. ``exit`` is the code this FILE alone would give."""

    path: str
    ok: bool
    exit: int
    events: int | None
    turns: int | None
    open_turn: int | None
    torn_tail: TornTailJson | None
    live: bool
    rule: str | None = None
    seq: int | None = None
    line: int | None = None
    message: str | None = None


@attrs.frozen(kw_only=True)
class ShowHeader:
    """``show --json``, first line: the session and how many events are shown."""

    kind: Literal["header"] = "header"
    session: str
    created_at: int
    events: int
    live: bool


@attrs.frozen
class ShowEvent:
    """An event as written in the log (``event``), or a closer repair would append."""

    kind: Literal["event", "closer"]
    event: dict[str, Any]


@attrs.frozen(kw_only=True)
class ShowViolation:
    """The line a broken log stops at: the rule (``null`` for a line that is not JSON)."""

    kind: Literal["violation"] = "violation"
    line: int
    rule: str | None
    seq: int | None
    message: str
    exit: int
    text: str


@attrs.frozen(kw_only=True)
class ShowTornTail:
    """The torn tail ``show`` ignored, last."""

    kind: Literal["torn_tail"] = "torn_tail"
    line: int
    bytes: int
    reason: str


_CONVERTER: Final = cattrs.Converter()


def json_text(text: str) -> str:
    """``text`` as JSON can hold it: a byte of a file name that is not UTF-8, which Python
    carries as a lone surrogate (``surrogateescape``) and JSON cannot, is written ``\\xNN``,
    as Python's ``backslashreplace`` shows it (spec/cli.md: `check --json`)."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def dumps(record: object) -> str:
    """One record as one line of JSON (no newline)."""
    return orjson.dumps(_CONVERTER.unstructure(record)).decode()
