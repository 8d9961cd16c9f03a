"""The timeline of :mod:`.render`, built from a log's accepted lines as they stream by.

``trio-agent show`` on a long session renders every event; most of them are of the two
types that dominate such a log, a text delta of ``assistant/chunk`` (folded into a run) and
a ``tool/output`` line. For those two, :class:`TimelineLines` decodes the line with the checker's
typed decoder (msgspec) straight into structs and formats them itself. Every other type
is decoded with its ``data`` as a dict; the lines every turn has (its start and end when it
completed or was aborted, the step's, the splices, the user message, the assistant's
message when not interrupted, the dispatch, a result without an error) are formatted here
as ``describe`` words them, and the rest (approvals, a spawned call, errors, crash
recovery's endings, a line no struct describes) become their :class:`Event` and go
through the readable renderer's own pieces (``describe``, the emphasis and the
indentation rules of :func:`.render.render_timeline`).

:func:`.render.render_timeline` stays the reference: ``tests/log/test_render_fast.py`` holds
this module to produce exactly its lines, byte for byte, on every vector file, on generated
logs and on lines written in the less usual ways JSON allows, in each mode (plain,
``color``, ``full``).

The lines given must be lines a checker accepted (the scan's ``line_sink``): nothing is
checked here. Pure: lines in, strings out through the ``emit`` callback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

import orjson

from . import checker_typed
from .envelope import Event, Header
from .render import (
    _BOLD,
    _CYAN,
    _DIM,
    _GREEN,
    _RED,
    _RESET,
    _YELLOW,
    _clip,
    _describe_splice,
    _emphasis,
    _quote,
    describe,
    timeline_header,
    visible,
)
from .scan import TornTail
from .splice import SpliceKind, splice_kind

__all__ = ["TimelineLines", "timeline_header"]


# A line is decoded by the checker's own typed decoder (:mod:`.checker_typed`): the two hot
# types into structs holding the few fields the timeline shows, every other type with its
# ``data`` as a dict. The scan's ``item_sink`` hands over those same envelopes for the lines
# its typed path accepted. A line they do not describe (another chunk type, an unknown key)
# is parsed by orjson and takes the readable path.
_DECODE: Final = checker_typed.decode_typed
_CHUNK: Final = checker_typed.CHUNK_ENVELOPE
_OUTPUT: Final = checker_typed.OUTPUT_ENVELOPE
_KIND: Final = checker_typed.ENVELOPE_TYPES
#: A line the structs do not describe.
_NOT_TYPED: Final = checker_typed.TYPED_ERRORS
#: Rendered lines held before they are handed to ``emit`` (bounded memory, few calls).
_BATCH: Final = 512


class TimelineLines:
    """The lines of :func:`.render.render_timeline` after its header, pushed as the log
    streams by: :meth:`lines` for the accepted lines of the log, :meth:`event` for an event
    already decoded, then :meth:`finish` with the closers and the torn tail. Rendered lines
    (without their newline) go to ``emit`` in batches (``emit`` must not keep the list it
    is given); only a run of streamed chunks and a batch are held."""

    def __init__(
        self, emit: Callable[[list[str]], None], *, color: bool = False, full: bool = False
    ) -> None:
        self._emit = emit
        self._color = color
        self._full = full
        self._out: list[str] = []
        self._depth = 0
        self._indent = ""
        #: The run of streamed text chunks: typed envelopes, or events of the readable path.
        self._run: list[Any] = []
        self._output_width: int | None = None if full else 40

    def lines(self, lines: Iterable[object]) -> None:
        """Accepted lines of the log, in order (each may keep its newline), or what the scan
        accepted them as (its ``item_sink``: a typed envelope or the line)."""
        decode, run, out, width = _DECODE, self._run, self._out, self._output_width
        call_id, shown_id = None, ""
        for line in lines:
            ev: Any = line
            if type(line) is bytes:
                try:
                    ev = decode(line)
                except _NOT_TYPED:
                    obj = orjson.loads(line)
                    self.event(Event(obj["seq"], obj["time"], obj["type"], obj["data"]))
                    continue
            cls = type(ev)
            if cls is _CHUNK:  # a text delta: one more chunk in the run
                run.append(ev)
                continue
            if cls is not _OUTPUT:
                self._common(ev.seq, ev.time, _KIND[cls], ev.data)
                continue
            if run:
                self._flush_run()
            d = ev.data
            # describe's tool/output line, never emphasised (render._emphasis); _clip inline
            text = d.text
            if width is not None and len(text) > width:
                text = text[: width - 1] + "…"
            text = text.replace("\n", "⏎")
            if not text.isprintable():
                text = visible(text)
            if d.call_id != call_id:  # a call's outputs come in a row: its id shown once
                call_id, shown_id = d.call_id, visible(d.call_id)
            out.append(f'{self._indent}[{ev.seq}] tool/output {shown_id} {d.stream} "{text}"')
        if len(out) >= _BATCH:
            self._emit(out)
            out.clear()

    def _common(self, seq: int, time: int, kind: str, d: dict[str, Any]) -> None:
        """An event of the kinds every turn has, shown as describe and the emphasis would show
        it: the turn and step boundaries (a turn ended completed or aborted), a splice, a user
        message, an assistant message that was not interrupted, a dispatch, a result without
        an error. Any other goes to :meth:`event`."""
        style = None
        if kind == "turn/start":
            text = f"turn/start {d['turn']}"
        elif kind == "step/start":
            text = f"step/start {d['step']}"
        elif kind == "step/end":
            text = f"step/end {d['step']}"
        elif kind == "turn/end" and d["reason"]["kind"] in ("completed", "aborted"):
            reason = d["reason"]["kind"]
            style = _GREEN if reason == "completed" else _RED
            text = f"turn/end {d['turn']} {reason.upper()}"
        elif kind == "user/message":
            text = f"user/message {_quote(d['message']['text'], None if self._full else 60)}"
        elif kind == "tool/call":
            text = f"tool/call {visible(d['name'])}#{visible(d['callId'])} (dispatched)"
            style = _CYAN
        elif kind == "tool/result" and d.get("error") is None:
            status = "error" if d["isError"] else "ok"
            content = _clip(d["content"], None if self._full else 40)
            text = f"tool/result {visible(d['callId'])} {status}: {content}"
        elif kind == "agent/inbox/spliced":
            text = _describe_splice(d, full=self._full)
            style = _YELLOW if splice_kind(d) is SpliceKind.DROP else None
        elif kind == "assistant/message" and not d.get("interrupted"):
            width = None if self._full else 40
            parts = [
                _quote(block["text"], width)
                if block["type"] == "text"
                else f"→ {visible(block['name'])}#{visible(block['id'])}"
                for block in d["message"]["content"]
            ]
            text = f"assistant/message {' '.join(parts) or '(empty)'}"
        else:
            self.event(Event(seq, time, kind, d))
            return
        if self._run:
            self._flush_run()
        if kind == "turn/end" or kind == "step/end":
            self._set_depth(max(0, self._depth - 1))
        text = f"{self._indent}[{seq}] {text}"
        self._out.append(f"{style}{text}{_RESET}" if self._color and style else text)
        if kind == "turn/start" or kind == "step/start":
            self._set_depth(self._depth + 1)

    def event(self, event: Event, *, synthetic: bool = False) -> None:
        """One event, as :func:`.render.render_timeline`'s loop shows it (``synthetic``: a
        closer repair would append)."""
        if (
            not synthetic
            and event.type == "assistant/chunk"
            and event.data["chunk"]["type"] == "text-delta"
        ):
            self._run.append(event)
            return
        if self._run:
            self._flush_run()
        if event.type in ("turn/end", "step/end"):
            self._set_depth(max(0, self._depth - 1))
        mark = "+" if synthetic else " "
        text = f"{self._indent}[{event.seq}]{mark}{describe(event, full=self._full)}"
        if synthetic:
            text += "   <- repair would append (not on disk)"
        style = _emphasis(event) or (_BOLD if synthetic else None)
        self._out.append(f"{style}{text}{_RESET}" if self._color and style else text)
        if event.type in ("turn/start", "step/start"):
            self._set_depth(self._depth + 1)

    def finish(self, closers: Iterable[Event] = (), tail: TornTail | None = None) -> None:
        """The closers, the torn tail's line, and every line still held, to ``emit``."""
        for event in closers:
            self.event(event, synthetic=True)
        if self._run:
            self._flush_run()
        if tail is not None:
            text = f"line {tail.line}: torn tail ignored ({tail.size} bytes): {tail.reason}"
            self._out.append(f"{_DIM}{text}{_RESET}" if self._color else text)
        if self._out:
            self._emit(self._out)
            self._out.clear()

    def _set_depth(self, depth: int) -> None:
        self._depth = depth
        self._indent = "  " * depth

    def _flush_run(self) -> None:
        run = self._run
        text = "".join(  # a list, not a generator: join makes one of it anyway
            [e.data["chunk"]["text"] if type(e) is Event else e.data.chunk.text for e in run]
        )
        span = f"{run[0].seq}" if len(run) == 1 else f"{run[0].seq}-{run[-1].seq}"
        quoted = _quote(text, None if self._full else 60)
        self._out.append(f"{self._indent}[{span}] streamed {len(run)} chunk(s) {quoted}")
        run.clear()


def render_lines(
    header: Header,
    lines: Iterable[object],
    count: int,
    closers: Iterable[Event] = (),
    tail: TornTail | None = None,
    *,
    color: bool = False,
    full: bool = False,
) -> list[str]:
    """The whole timeline of ``lines`` in memory (for tests and small logs)."""
    out = [timeline_header(header, count)]
    timeline = TimelineLines(out.extend, color=color, full=full)
    timeline.lines(lines)
    timeline.finish(closers, tail)
    return out
