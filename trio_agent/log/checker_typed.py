"""The checker's typed fast path: a line decoded straight into a typed envelope.

:func:`~trio_agent.log.checker_fast.feed_fast` takes the dict ``orjson.loads`` built and tests
its shape in Python. On a long log most lines are of the two types that dominate (a text
delta of ``assistant/chunk`` and ``tool/output``), and most of their cost was that shape. Here
msgspec decodes the line straight into structs that state it (spec/log.md §Values, §Envelope,
§Shared shapes: an envelope of exactly four keys, integers written without a fraction and
within range, ``null`` never a value, a non-empty call id), so what is left in Python is the
rules that read the checker's state (I1, I7/I8, I9, I13, I17). Every other type is decoded
with its ``data`` as a dict and goes through ``feed_fast``'s per-type half, which tests its
shape as before, once the line's depth is known to be within the limit.

Like ``feed_fast`` it only accepts or declines: :func:`decode_typed` raises one of
:data:`TYPED_ERRORS` for a line these structs do not describe (another chunk type, an unknown
event type, a key the structs do not name, a malformed line), and :func:`feed_typed`
returns False, changing nothing, for an event it does not accept. The reader then parses the
line with orjson and takes ``feed_fast``, and after it the readable path, which words the
error. So it can never accept what the rules refuse; tests/log/test_stream.py holds it to
that, and to leaving the same state as ``feed(decode_event(line))``, on every vector line and
on generated and mutated logs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from types import MappingProxyType
from typing import Annotated, Any, Final, Literal, Union

import msgspec

from .checker import _ANSWERED, _INTERRUPTED, _STREAMING, LogChecker
from .checker_fast import FAST_TYPES
from .codec import MAX_DEPTH, too_deep
from .envelope import MAX_INTEGER

__all__ = [
    "CHUNK_ENVELOPE",
    "ENVELOPE_TYPES",
    "HOT_TYPES",
    "OUTPUT_ENVELOPE",
    "TYPED_ERRORS",
    "decode_typed",
    "feed_typed",
    "typed_kinds",
]

# gc=False: these structs hold no cycles, and untracked objects spare the collector's count
# of allocations on every line. Closed (an unknown key declines): the envelope allows none,
# and a hot type's data with one (readers ignore it) is rare enough for the orjson path, which
# also keeps the line's depth in view (an unknown key may nest, spec/log.md §Values).
_CLOSED: Final[dict[str, Any]] = {"forbid_unknown_fields": True, "gc": False}
_Time = Annotated[int, msgspec.Meta(ge=0, le=MAX_INTEGER)]
_NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]


class _TextDelta(msgspec.Struct, tag_field="type", tag="text-delta", **_CLOSED):
    text: str


class _ChunkData(msgspec.Struct, **_CLOSED):
    turn: int  # compared to the open turn, a valid integer (I7)
    step: int
    chunk: _TextDelta


class _OutputData(msgspec.Struct, rename={"call_id": "callId"}, **_CLOSED):
    turn: int
    step: int
    call_id: _NonEmpty
    stream: Literal["stdout", "stderr"]
    text: str


class _Envelope(msgspec.Struct, tag_field="type", **_CLOSED):
    """The event envelope: ``seq``, ``time``, ``type`` (the tag) and ``data``, no other key."""

    seq: int  # compared to the next seq, a valid integer (I1)
    time: _Time


class _Chunk(_Envelope, tag="assistant/chunk"):
    data: _ChunkData


class _Output(_Envelope, tag="tool/output"):
    data: _OutputData


def _envelope_of(kind: str) -> type[_Envelope]:
    """The envelope of a type whose ``data`` its ``feed_fast`` half tests as a dict."""
    name = "_" + kind.replace("/", "_")
    cls = msgspec.defstruct(name, [("data", dict[str, Any])], bases=(_Envelope,), tag=kind)
    assert issubclass(cls, _Envelope)
    return cls


#: envelope class -> the per-type half of feed_fast that checks its data and commits.
_ACCEPT_DATA: Final = {_envelope_of(kind): accept for kind, accept in FAST_TYPES.items()}
#: envelope class -> its event type.
_TYPE_OF: Final[dict[type[_Envelope], str]] = {
    _Chunk: "assistant/chunk",
    _Output: "tool/output",
    **{cls: str(cls.__struct_config__.tag) for cls in _ACCEPT_DATA},
}
_DECODER: Final = msgspec.json.Decoder(Union[(_Chunk, _Output, *_ACCEPT_DATA)])

#: The envelopes of a text-delta chunk and of a tool output, and the event type of every
#: envelope class, for a reader handed an accepted envelope (``show``'s renderer).
CHUNK_ENVELOPE: Final = _Chunk
OUTPUT_ENVELOPE: Final = _Output
ENVELOPE_TYPES: Final[Mapping[type, str]] = MappingProxyType(_TYPE_OF)
#: The types whose data the structs hold (not as a dict, and without the unknown keys a
#: reader ignores): a reader that hands these events on as written parses their lines again.
HOT_TYPES: Final = frozenset({"assistant/chunk", "tool/output"})
#: What :func:`decode_typed` raises for a line the structs do not describe.
TYPED_ERRORS: Final = (
    msgspec.MsgspecError,  # not JSON, or not the structs' shape
    RecursionError,  # nested deeper than msgspec's limit (orjson's is deeper: it decides)
)
#: The longest line too short to nest deeper than the limit (``too_deep``'s first test).
_SHORT: Final = 2 * MAX_DEPTH + 1
#: Decode one line (its newline may stay) into its typed envelope.
decode_typed: Final = _DECODER.decode


def feed_typed(c: LogChecker, ev: Any, line: bytes) -> bool:
    """Accept one typed event, decoded from ``line``, advancing ``c`` exactly as
    ``feed(decode_event(line))`` would, or decline it, changing nothing (spec/invariants.md)."""
    if ev.seq != c.next_seq:  # I1
        return False
    cls = type(ev)
    data = ev.data
    if cls is _Chunk:
        phase = c._phase
        if phase is _ANSWERED or phase is _INTERRUPTED:  # I9
            return False
    elif cls is _Output:
        call = c._calls.get(data.call_id)
        if call is None or not call.dispatched or call.resolved:  # I13
            return False
    else:  # data is a dict: its per-type half tests its shape and rules, and commits
        # Free JSON (arguments, unknown keys) may nest too deep (spec/log.md §Values); a
        # line too short to hold the limit's brackets cannot, and spares the call.
        if len(line) > _SHORT and too_deep(line):
            return False
        try:  # a missing key or a value of the wrong type declines, as in feed_fast
            if not _ACCEPT_DATA[cls](c, data):
                return False
        except (KeyError, TypeError):
            return False
        c.next_seq = ev.seq + 1
        c.last_time = ev.time
        return True
    if data.turn != c.open_turn or data.step != c.open_step or c._repairing:  # I7/I8, I17
        return False
    if cls is _Chunk:
        c._phase = _STREAMING
    c.next_seq = ev.seq + 1
    c.last_time = ev.time
    return True


def typed_kinds(types: Collection[str]) -> dict[type, str]:
    """The envelope classes of the event types ``types`` whose ``data`` is the dict the line
    wrote (every type but :data:`HOT_TYPES`), each with its type, so a reader hands an
    accepted envelope's fields on as written, telling its type from its class."""
    return {cls: kind for cls, kind in _TYPE_OF.items() if kind in types and kind not in HOT_TYPES}
