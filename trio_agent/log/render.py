"""A readable timeline of a log, for ``trio-agent show`` and the demo (pure: events -> lines).

Turns and steps are indented; streamed chunks are folded into one line per run; endings that
matter for this project (aborted, interrupted, repair placeholders, dropped inbox work, closers
that are not on disk yet) are marked so they stand out even without colour.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from .envelope import Event, Header
from .rules import REPAIR_ONLY_CODES
from .scan import TornTail
from .splice import SpliceKind, splice_kind

# The palette, one meaning per colour, the same as the demo's (docs/demo.md, "Reading the
# colours"): red = ended by cancel or an error, violet = what crash recovery wrote, yellow = a
# repair placeholder or input dropped unrun, green = completed, cyan = the dispatch marker.
_RED, _VIOLET, _YELLOW, _GREEN, _CYAN = "\x1b[31m", "\x1b[35m", "\x1b[33m", "\x1b[32m", "\x1b[36m"
_DIM, _BOLD, _RESET = "\x1b[2m", "\x1b[1m", "\x1b[0m"


#: How a timeline shows the control characters of a log's strings, one character for one
#: (spec/cli.md §``show --full`` and JSON output): a newline as ``⏎``, the other controls
#: below U+0020 as their Unicode control pictures (``␛`` for ESC, ``␍`` for a carriage
#: return, ``␉`` for a tab), DEL as ``␡``, and the controls U+0080-U+009F, which have no
#: pictures, as ``�``. What a tool or a model wrote then cannot recolour, move the cursor
#: over or retitle the terminal it is read in, nor break the one line an event takes.
_VISIBLE: Final = (
    {c: 0x2400 + c for c in range(0x20)}
    | {0x0A: ord("⏎"), 0x7F: 0x2421}
    | dict.fromkeys(range(0x80, 0xA0), 0xFFFD)
)


def visible(text: str) -> str:
    """``text`` with its control characters shown (:data:`_VISIBLE`), as long as it was."""
    if text.isprintable():  # most ids and texts: nothing to do
        return text
    text = text.replace("\n", "⏎")  # the common control, and far cheaper than translate
    # isprintable is false for some characters that are not controls too (a no-break space):
    # translate leaves those as they are.
    return text if text.isprintable() else text.translate(_VISIBLE)


#: :data:`_VISIBLE` without the newline: for text that is lines already (a stream's).
_VISIBLE_IN_LINES: Final = {c: shown for c, shown in _VISIBLE.items() if c != 0x0A}


def visible_in_lines(text: str) -> str:
    """``text`` with its control characters shown as :func:`visible` shows them, but for the
    newlines that end its lines (what the command line writes to stderr)."""
    return text if text.isprintable() else text.translate(_VISIBLE_IN_LINES)


def _clip(text: str, width: int | None = 60) -> str:
    """``text`` on one line, its control characters shown (:func:`visible`), cut to ``width``
    characters with ``…`` (``None``: whole)."""
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    return visible(text)


def _quote(text: str, width: int | None = 60) -> str:
    return '"' + _clip(text, width) + '"'


def describe(event: Event, *, full: bool = False) -> str:
    """One short line for one event, without indentation (shared with the demo's log pane).

    Long texts (messages, tool output and results, error messages) are cut to a few dozen
    characters; ``full`` prints them whole. Every string of the log in it, ids and names
    included, has its control characters shown (:func:`visible`): still one line."""
    return visible(_describe(event, full=full))


def _describe(event: Event, *, full: bool = False) -> str:
    def cut(width: int) -> int | None:
        return None if full else width

    d: Any = event.data
    kind = event.type
    if kind == "turn/start":
        return f"turn/start {d['turn']}"
    if kind == "turn/end":
        reason = d["reason"]
        text = f"turn/end {d['turn']} {reason['kind'].upper()}"
        if reason["kind"] == "error":
            text += f" {reason['error']['code']}: {_clip(reason['error']['message'], cut(40))}"
        if reason["kind"] == "interrupted":
            text += " (written by crash recovery)"
        return text
    if kind in ("step/start", "step/end"):
        return f"{kind} {d['step']}"
    if kind == "agent/inbox/spliced":
        return _describe_splice(d, full=full)
    if kind == "user/message":
        return f"user/message {_quote(d['message']['text'], cut(60))}"
    if kind == "assistant/chunk":
        chunk = d["chunk"]
        if chunk["type"] == "text-delta":
            return f"assistant/chunk {_quote(chunk['text'], cut(40))}"
        if chunk["type"] == "tool-call":
            return f"assistant/chunk tool-call {chunk['name']} {chunk['id']}"
        if chunk["type"] == "finish":
            return f"assistant/chunk finish {chunk['reason']}"
        return f"assistant/chunk {chunk['type']}"
    if kind == "assistant/message":
        parts = []
        for block in d["message"]["content"]:
            if block["type"] == "text":
                parts.append(_quote(block["text"], cut(40)))
            else:
                parts.append(f"→ {block['name']}#{block['id']}")
        tail = " INTERRUPTED (visible prefix kept)" if d.get("interrupted") else ""
        return f"assistant/message {' '.join(parts) or '(empty)'}{tail}"
    if kind == "approval/asked":
        return f"approval/asked {d['toolName']}#{d['callId']}"
    if kind == "approval/decided":
        return f"approval/decided {d['id']} {d['outcome']}"
    if kind == "tool/call":
        return f"tool/call {d['name']}#{d['callId']} (dispatched)"
    if kind == "tool/spawned":
        # The containment is optional (spec/log.md); a value of another type is not shown.
        contained = d.get("containment")
        shown = f" ({contained})" if isinstance(contained, str) else ""
        return f"tool/spawned {d['callId']} pgid {d['pgid']}{shown}"
    if kind == "tool/output":
        return f"tool/output {d['callId']} {d['stream']} {_quote(d['text'], cut(40))}"
    if kind == "tool/result":
        error = d.get("error")
        if error is None:
            status = "error" if d["isError"] else "ok"
        else:
            status = error["code"]
            if status in REPAIR_ONLY_CODES:
                status += " (placeholder)"
        return f"tool/result {d['callId']} {status}: {_clip(d['content'], cut(40))}"
    return kind  # pragma: no cover - every v1 type is handled above


def _describe_splice(d: Any, *, full: bool = False) -> str:
    target = d["target"]
    kind = splice_kind(d)
    ids = ", ".join(_quote(m["text"], None if full else 24) for m in d["inserted"])
    if kind is SpliceKind.DROP:
        what = f"DROPPED {d['removedCount']} queued from {target}"
        return what + (f", re-queued {ids}" if ids else " (never ran)")
    if kind is SpliceKind.CLAIM:
        return f"claim {d['removedCount']} from {target}"
    return f"queue {target} {ids}"


def _emphasis(event: Event) -> str | None:
    d: Any = event.data
    if event.type == "turn/end":
        return {
            "aborted": _RED,
            "error": _RED,
            "interrupted": _VIOLET,
            "completed": _GREEN,
        }.get(d["reason"]["kind"])
    if event.type == "agent/inbox/spliced" and splice_kind(d) is SpliceKind.DROP:
        return _YELLOW
    if event.type == "tool/result" and d.get("error"):
        return _YELLOW if d["error"]["code"] in REPAIR_ONLY_CODES else _RED
    if event.type == "assistant/message" and d.get("interrupted"):
        return _RED
    if event.type in ("tool/call", "tool/spawned"):
        return _CYAN
    return None


def _utc(ms: int) -> str:
    """``createdAt`` as a UTC date; any integer >= 0 is valid (spec/log.md §Header), and one
    past year 9999 is shown as the number it is instead of breaking ``show``."""
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    except (ValueError, OverflowError, OSError):
        return f"{ms} ms after 1970 (past year 9999)"


def timeline_header(header: Header, count: int) -> str:
    """The timeline's first line: the session, when it was created, how many events."""
    shown = f"{count} event" + ("" if count == 1 else "s")
    return f"session {visible(header.id)}  created {_utc(header.created_at)}  {shown}"


def render_timeline(
    header: Header,
    events: Iterable[Event],
    closers: Sequence[Event] = (),
    tail: TornTail | None = None,
    *,
    color: bool = False,
    count: int | None = None,
    full: bool = False,
) -> Iterator[str]:
    """Yield the lines of the timeline. ``closers`` are shown as what repair would append;
    ``full`` prints long texts whole instead of cutting them (:func:`describe`).

    ``events`` may be a one-pass iterable (a file streaming by) when ``count``, the number of
    events it yields, is given; then only a run of streamed chunks is held at a time.
    """
    if count is None:
        assert isinstance(events, Sequence), "an iterable of events needs its count"
        count = len(events)
    yield timeline_header(header, count)

    def paint(text: str, style: str | None) -> str:
        return f"{style}{text}{_RESET}" if color and style else text

    depth = 0
    run: list[Event] = []

    def flush_run() -> Iterator[str]:
        if not run:
            return
        text = "".join(e.data["chunk"]["text"] for e in run)
        span = f"{run[0].seq}" if len(run) == 1 else f"{run[0].seq}-{run[-1].seq}"
        quoted = _quote(text, None if full else 60)
        yield "  " * depth + f"[{span}] streamed {len(run)} chunk(s) {quoted}"
        run.clear()

    marked = itertools.chain(((False, e) for e in events), ((True, e) for e in closers))
    for synthetic, event in marked:
        is_text = event.type == "assistant/chunk" and event.data["chunk"]["type"] == "text-delta"
        if is_text and not synthetic:
            run.append(event)
            continue
        yield from flush_run()
        if event.type in ("turn/end", "step/end"):
            depth = max(0, depth - 1)
        mark = "+" if synthetic else " "
        line = "  " * depth + f"[{event.seq}]{mark}{describe(event, full=full)}"
        if synthetic:
            line += "   <- repair would append (not on disk)"
        yield paint(line, _emphasis(event) or (_BOLD if synthetic else None))
        if event.type in ("turn/start", "step/start"):
            depth += 1
    yield from flush_run()
    if tail is not None:
        yield paint(f"line {tail.line}: torn tail ignored ({tail.size} bytes): {tail.reason}", _DIM)
