"""The timeline of :mod:`.render`, built from a log's accepted lines as they stream by.

``trio-agent show`` on a long session renders every event; most of them are of the two
types that dominate such a log, a text delta of ``assistant/chunk`` (folded into a run) and
a ``tool/output`` line. For those two, :class:`TimelineLines` decodes the line with msgspec
straight into the few fields the timeline shows and formats them itself. Every other line
(another type, another chunk type, a shape these structs do not describe) becomes its
:class:`Event` and goes through the readable renderer's own pieces (``describe``, the
emphasis and the indentation rules of :func:`.render.render_timeline`).

:func:`.render.render_timeline` stays the reference: ``tests/log/test_render_fast.py`` holds
this module to produce exactly its lines, byte for byte, on every vector and on generated
logs, in each mode (plain, ``color``, ``full``).

The lines given must be lines a checker accepted (the scan's ``line_sink``): nothing is
checked here. Pure: lines in, strings out through the ``emit`` callback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final, Union

import msgspec
import orjson

from .events import DATA_CLASSES, Event, Header
from .render import (
    _BOLD,
    _CYAN,
    _DIM,
    _GREEN,
    _RED,
    _RESET,
    _clip,
    _emphasis,
    _quote,
    describe,
    timeline_header,
)
from .scan import TornTail

__all__ = ["TimelineLines", "timeline_header"]


# The structs state exactly the shape each fast line assumes (msgspec skips other keys, as
# the readable renderer does); a line of another shape fails to decode and takes the readable
# path. gc=False: no cycles, so the collector need not track them.


class _Envelope(msgspec.Struct, tag_field="type", gc=False):
    seq: int
    time: int


class _TextDelta(msgspec.Struct, tag_field="type", tag="text-delta", gc=False):
    text: str


class _ChunkData(msgspec.Struct, gc=False):
    chunk: _TextDelta


class _Chunk(_Envelope, tag="assistant/chunk"):
    data: _ChunkData


class _OutputData(msgspec.Struct, gc=False, rename={"call_id": "callId"}):
    call_id: str
    stream: str
    text: str


class _Output(_Envelope, tag="tool/output"):
    data: _OutputData


class _TurnData(msgspec.Struct, gc=False):
    turn: int


class _TurnStart(_Envelope, tag="turn/start"):
    data: _TurnData


class _StepData(msgspec.Struct, gc=False):
    step: int


class _StepStart(_Envelope, tag="step/start"):
    data: _StepData


class _StepEnd(_Envelope, tag="step/end"):
    data: _StepData


class _Reason(msgspec.Struct, gc=False):
    kind: str


class _TurnEndData(msgspec.Struct, gc=False):
    turn: int
    reason: _Reason


class _TurnEnd(_Envelope, tag="turn/end"):
    data: _TurnEndData


class _Text(msgspec.Struct, gc=False):
    text: str


class _MessageData(msgspec.Struct, gc=False):
    message: _Text


class _UserMessage(_Envelope, tag="user/message"):
    data: _MessageData


class _CallData(msgspec.Struct, gc=False, rename={"call_id": "callId"}):
    call_id: str
    name: str


class _ToolCall(_Envelope, tag="tool/call"):
    data: _CallData


class _ResultData(msgspec.Struct, gc=False, rename={"call_id": "callId", "is_error": "isError"}):
    call_id: str
    is_error: bool
    content: str
    error: Any = None


class _ToolResult(_Envelope, tag="tool/result"):
    data: _ResultData


_TYPED: Final = (
    _Chunk,
    _Output,
    _TurnStart,
    _StepStart,
    _StepEnd,
    _TurnEnd,
    _UserMessage,
    _ToolCall,
    _ToolResult,
)


def _envelope_of(kind: str) -> type[_Envelope]:
    """The envelope of a type the readable renderer shows, its ``data`` as a dict."""
    name = "_" + kind.replace("/", "_")
    cls = msgspec.defstruct(name, [("data", dict[str, Any])], bases=(_Envelope,), tag=kind)
    assert issubclass(cls, _Envelope)
    return cls


#: envelope class -> its event type, for the types shown through the readable ``describe``.
_OTHER: Final = {
    _envelope_of(kind): kind
    for kind in sorted(DATA_CLASSES)
    if kind not in {str(cls.__struct_config__.tag) for cls in _TYPED}
}
_DECODE: Final = msgspec.json.Decoder(Union[(*_TYPED, *_OTHER)]).decode
#: A line the structs do not describe: another chunk type, or a shape they do not state.
_NOT_TYPED: Final = (msgspec.ValidationError, msgspec.DecodeError)
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

    def lines(self, lines: Iterable[bytes]) -> None:
        """Accepted lines of the log, in order (each may keep its newline)."""
        decode, run, out, width = _DECODE, self._run, self._out, self._output_width
        for line in lines:
            try:
                ev: Any = decode(line)
            except _NOT_TYPED:
                self._readable(line)
                continue
            cls = type(ev)
            if cls is _Chunk:  # a text delta: one more chunk in the run
                run.append(ev)
                continue
            if cls is _Output:
                if run:
                    self._flush_run()
                d = ev.data
                # describe's tool/output line, never emphasised (render._emphasis)
                text = d.text.replace("\n", "⏎")
                if width is not None and len(text) > width:
                    text = text[: width - 1] + "…"
                out.append(f'{self._indent}[{ev.seq}] tool/output {d.call_id} {d.stream} "{text}"')
            elif cls in _OTHER:
                self.event(Event(ev.seq, ev.time, _OTHER[cls], ev.data))
            else:
                if run:
                    self._flush_run()
                self._boundary(ev, line)
        if len(out) >= _BATCH:
            self._emit(out)
            out.clear()

    def _boundary(self, ev: Any, line: bytes) -> None:
        """A line of the other typed shapes: the turn and step boundaries, a user message, a
        dispatch, a result without an error; describe's line and emphasis for each."""
        cls = type(ev)
        d = ev.data
        style = None
        if cls is _TurnStart:
            text = f"turn/start {d.turn}"
        elif cls is _StepStart:
            text = f"step/start {d.step}"
        elif cls is _StepEnd:
            self._set_depth(max(0, self._depth - 1))
            text = f"step/end {d.step}"
        elif cls is _TurnEnd:
            kind = d.reason.kind
            if kind == "completed":
                style = _GREEN
            elif kind == "aborted":
                style = _RED
            else:  # an error or crash recovery's interruption: worded by describe
                self._readable(line)
                return
            self._set_depth(max(0, self._depth - 1))
            text = f"turn/end {d.turn} {kind.upper()}"
        elif cls is _UserMessage:
            text = f"user/message {_quote(d.message.text, None if self._full else 60)}"
        elif cls is _ToolCall:
            text = f"tool/call {d.name}#{d.call_id} (dispatched)"
            style = _CYAN
        else:  # tool/result
            if d.error is not None:  # an error code, a repair placeholder: describe's
                self._readable(line)
                return
            status = "error" if d.is_error else "ok"
            content = _clip(d.content, None if self._full else 40)
            text = f"tool/result {d.call_id} {status}: {content}"
        text = f"{self._indent}[{ev.seq}] {text}"
        self._out.append(f"{style}{text}{_RESET}" if self._color and style else text)
        if cls is _TurnStart or cls is _StepStart:
            self._set_depth(self._depth + 1)

    def _readable(self, line: bytes) -> None:
        """A line the structs do not describe, shown by the readable renderer's pieces."""
        obj = orjson.loads(line)
        self.event(Event(obj["seq"], obj["time"], obj["type"], obj["data"]))

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
        text = "".join(
            e.data.chunk.text if type(e) is _Chunk else e.data["chunk"]["text"] for e in run
        )
        span = f"{run[0].seq}" if len(run) == 1 else f"{run[0].seq}-{run[-1].seq}"
        quoted = _quote(text, None if self._full else 60)
        self._out.append(f"{self._indent}[{span}] streamed {len(run)} chunk(s) {quoted}")
        run.clear()


def render_lines(
    header: Header,
    lines: Iterable[bytes],
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
