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
from .render import _BOLD, _DIM, _RESET, _emphasis, _quote, describe, timeline_header
from .scan import TornTail

__all__ = ["TimelineLines", "timeline_header"]


class _TextDelta(msgspec.Struct, tag_field="type", tag="text-delta", gc=False):
    text: str


class _ChunkData(msgspec.Struct, gc=False):
    chunk: _TextDelta


class _OutputData(msgspec.Struct, gc=False, rename={"call_id": "callId"}):
    call_id: str
    stream: str
    text: str


class _Envelope(msgspec.Struct, tag_field="type", gc=False):
    seq: int
    time: int


class _Chunk(_Envelope, tag="assistant/chunk"):
    data: _ChunkData


class _Output(_Envelope, tag="tool/output"):
    data: _OutputData


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
    if kind not in ("assistant/chunk", "tool/output")
}
_DECODE: Final = msgspec.json.Decoder(Union[(_Chunk, _Output, *_OTHER)]).decode
#: A line the structs do not describe: another chunk type, or a shape they do not state.
_NOT_TYPED: Final = (msgspec.ValidationError, msgspec.DecodeError)
#: Rendered lines held before they are handed to ``emit`` (bounded memory, few calls).
_BATCH: Final = 4096


class TimelineLines:
    """The lines of :func:`.render.render_timeline` after its header, pushed one event at a
    time: :meth:`line` for each accepted line of the log, :meth:`event` for an event already
    decoded, then :meth:`finish` with the closers and the torn tail. Rendered lines (without
    their newline) go to ``emit`` in batches; only a run of streamed chunks and one batch are
    held."""

    def __init__(
        self, emit: Callable[[list[str]], None], *, color: bool = False, full: bool = False
    ) -> None:
        self._emit = emit
        self._color = color
        self._full = full
        self._out: list[str] = []
        self._depth = 0
        self._indent = ""
        # The run of streamed text chunks: their texts, first and last seq.
        self._run: list[str] = []
        self._first = 0
        self._last = 0
        self._output_width: int | None = None if full else 40

    def line(self, line: bytes) -> None:
        """One accepted line of the log (its newline may stay)."""
        try:
            ev: Any = _DECODE(line)
        except _NOT_TYPED:
            obj = orjson.loads(line)
            self.event(Event(obj["seq"], obj["time"], obj["type"], obj["data"]))
            return
        cls = type(ev)
        if cls is _Chunk:  # a text delta: one more chunk in the run
            if not self._run:
                self._first = ev.seq
            self._run.append(ev.data.chunk.text)
            self._last = ev.seq
            return
        if cls is not _Output:
            self.event(Event(ev.seq, ev.time, _OTHER[cls], ev.data))
            return
        if self._run:
            self._flush_run()
        d = ev.data
        # describe's tool/output line, never emphasised (render._emphasis)
        text = d.text.replace("\n", "⏎")
        width = self._output_width
        if width is not None and len(text) > width:
            text = text[: width - 1] + "…"
        out = self._out
        out.append(f'{self._indent}[{ev.seq}] tool/output {d.call_id} {d.stream} "{text}"')
        if len(out) >= _BATCH:
            self._emit(out)
            self._out = []

    def event(self, event: Event, *, synthetic: bool = False) -> None:
        """One event, as :func:`.render.render_timeline`'s loop shows it (``synthetic``: a
        closer repair would append)."""
        if (
            not synthetic
            and event.type == "assistant/chunk"
            and event.data["chunk"]["type"] == "text-delta"
        ):
            if not self._run:
                self._first = event.seq
            self._run.append(event.data["chunk"]["text"])
            self._last = event.seq
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
        self._put(f"{style}{text}{_RESET}" if self._color and style else text)
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
            self._out = []

    def _set_depth(self, depth: int) -> None:
        self._depth = depth
        self._indent = "  " * depth

    def _flush_run(self) -> None:
        run = self._run
        span = f"{self._first}" if len(run) == 1 else f"{self._first}-{self._last}"
        quoted = _quote("".join(run), None if self._full else 60)
        self._put(f"{self._indent}[{span}] streamed {len(run)} chunk(s) {quoted}")
        self._run = []

    def _put(self, text: str) -> None:
        out = self._out
        out.append(text)
        if len(out) >= _BATCH:
            self._emit(out)
            self._out = []


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
    for line in lines:
        timeline.line(line)
    timeline.finish(closers, tail)
    return out
