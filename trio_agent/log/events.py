"""Log format v1: the header, the event envelope and the data of every event type.

The attrs classes below are the single description of each event's ``data`` (spec/log.md).
They serve three purposes:

* typed construction and access through :data:`converter` (one cattrs converter; Python
  attribute names are snake_case, wire names camelCase);
* the JSON Schema in ``spec/schema/`` is checked against them by the tests;
* :mod:`trio_agent.log.schema` compiles them into the fast validators used on every decoded
  line (rule ``I0``), so the hot path never instantiates these classes.

On the hot path an event is an :class:`Event` whose ``data`` is the decoded JSON object, kept
as written (lossless round trip).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final, Literal

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

FORMAT_VERSION: Final = 1

TurnEndKind = Literal["completed", "max-tokens", "blocked", "aborted", "error", "interrupted"]
InboxTarget = Literal["next-turn", "next-step"]
ApprovalOutcome = Literal["allowed", "rejected", "cancelled"]
OutputStream = Literal["stdout", "stderr"]
ResultCode = Literal[
    "ABORTED",
    "ABORTED_BEFORE_DISPATCH",
    "DENIED",
    "TOOL_FAILED",
    "TOOL_OUTCOME_UNKNOWN",
    "TOOL_NOT_STARTED",
]

# Field metadata understood by the schema compiler.
_POS = {"min": 1}  # turn, step, pgid: numbered from 1
_NAT = {"min": 0}  # seq, start, times
_ID = {"nonempty": True}


@attrs.frozen(slots=True)
class Event:
    """One log line after the header: ``{"seq", "time", "type", "data"}`` (spec/log.md §Envelope).

    ``data`` is the decoded JSON object as written; treat it as read-only.
    """

    seq: int
    time: int
    type: str
    data: Mapping[str, Any]


@attrs.frozen(slots=True)
class Header:
    """The first line: ``{"type":"session","version":1,"id":...,"createdAt":<ms>}``."""

    id: str
    created_at: int
    version: int = FORMAT_VERSION


# -- shared shapes ---------------------------------------------------------------------------


@attrs.frozen
class Message:
    """A user message as queued in the inbox and entered into a step."""

    id: str = attrs.field(metadata=_ID)
    text: str
    source: str


@attrs.frozen
class ErrorInfo:
    code: str
    message: str


@attrs.frozen
class TurnEndReason:
    """``error`` is present exactly when ``kind`` is ``"error"`` (spec/log.md, turn/end)."""

    kind: TurnEndKind
    error: ErrorInfo | None = None

    def __attrs_post_init__(self) -> None:
        if (self.kind == "error") != (self.error is not None):
            raise ValueError("reason.error is required when kind is 'error', and only then")


@attrs.frozen
class TextBlock:
    type: Literal["text"]
    text: str


@attrs.frozen
class ToolCallBlock:
    type: Literal["tool-call"]
    id: str = attrs.field(metadata=_ID)
    name: str = attrs.field(metadata=_ID)
    arguments: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class AssistantContent:
    id: str = attrs.field(metadata=_ID)
    content: list[TextBlock | ToolCallBlock] = attrs.field(factory=list)


@attrs.frozen
class TextDeltaChunk:
    type: Literal["text-delta"]
    text: str


@attrs.frozen
class ToolCallChunk:
    type: Literal["tool-call"]
    id: str = attrs.field(metadata=_ID)
    name: str = attrs.field(metadata=_ID)
    arguments: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class FinishChunk:
    type: Literal["finish"]
    reason: str


@attrs.frozen
class OtherChunk:
    """Any other chunk type a model may stream (usage, reasoning, ...): only ``type`` is fixed."""

    type: str


Chunk = TextDeltaChunk | ToolCallChunk | FinishChunk | OtherChunk


@attrs.frozen
class ResultError:
    code: ResultCode


# -- event data, one class per type ----------------------------------------------------------


@attrs.frozen
class TurnStart:
    TYPE: ClassVar[str] = "turn/start"
    turn: int = attrs.field(metadata=_POS)


@attrs.frozen
class TurnEnd:
    TYPE: ClassVar[str] = "turn/end"
    turn: int = attrs.field(metadata=_POS)
    reason: TurnEndReason = attrs.field()


@attrs.frozen
class StepStart:
    TYPE: ClassVar[str] = "step/start"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)


@attrs.frozen
class StepEnd:
    TYPE: ClassVar[str] = "step/end"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)


@attrs.frozen
class InboxSpliced:
    """Every inbox mutation. A claim is a removal without ``outcome`` (spec/log.md)."""

    TYPE: ClassVar[str] = "agent/inbox/spliced"
    target: InboxTarget
    start: int = attrs.field(metadata=_NAT)
    inserted: list[Message] = attrs.field(factory=list)
    removed_count: int | None = attrs.field(default=None, metadata={"min": 1})
    outcome: Literal["canceled"] | None = None


@attrs.frozen
class UserMessage:
    TYPE: ClassVar[str] = "user/message"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)
    message: Message = attrs.field()


@attrs.frozen
class AssistantChunk:
    TYPE: ClassVar[str] = "assistant/chunk"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)
    chunk: Chunk = attrs.field()


@attrs.frozen
class AssistantMessage:
    TYPE: ClassVar[str] = "assistant/message"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)
    message: AssistantContent = attrs.field()
    interrupted: Literal[True] | None = None


@attrs.frozen
class ApprovalAsked:
    TYPE: ClassVar[str] = "approval/asked"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)
    id: str = attrs.field(metadata=_ID)
    call_id: str = attrs.field(metadata=_ID)
    tool_name: str = attrs.field(metadata=_ID)


@attrs.frozen
class ApprovalDecided:
    TYPE: ClassVar[str] = "approval/decided"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)
    id: str = attrs.field(metadata=_ID)
    outcome: ApprovalOutcome = attrs.field()


@attrs.frozen
class ToolCallEvent:
    """``tool/call``: the dispatch marker, durable before the body runs."""

    TYPE: ClassVar[str] = "tool/call"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)
    call_id: str = attrs.field(metadata=_ID)
    name: str = attrs.field(metadata=_ID)
    arguments: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class ToolSpawned:
    TYPE: ClassVar[str] = "tool/spawned"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)
    call_id: str = attrs.field(metadata=_ID)
    pgid: int = attrs.field(metadata=_POS)
    identity: str = attrs.field(metadata=_ID)


@attrs.frozen
class ToolOutput:
    TYPE: ClassVar[str] = "tool/output"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)
    call_id: str = attrs.field(metadata=_ID)
    stream: OutputStream = attrs.field()
    text: str = attrs.field()


@attrs.frozen
class ToolResult:
    """Exactly one per requested call. Any ``error`` requires ``is_error`` (rule I15)."""

    TYPE: ClassVar[str] = "tool/result"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)
    call_id: str = attrs.field(metadata=_ID)
    is_error: bool = attrs.field()
    content: str = attrs.field()
    error: ResultError | None = None


EventData = (
    TurnStart
    | TurnEnd
    | StepStart
    | StepEnd
    | InboxSpliced
    | UserMessage
    | AssistantChunk
    | AssistantMessage
    | ApprovalAsked
    | ApprovalDecided
    | ToolCallEvent
    | ToolSpawned
    | ToolOutput
    | ToolResult
)

#: Every event type of format v1, in the order spec/log.md lists them.
DATA_CLASSES: Final[dict[str, type[Any]]] = {
    cls.TYPE: cls
    for cls in (
        TurnStart,
        TurnEnd,
        StepStart,
        StepEnd,
        InboxSpliced,
        UserMessage,
        AssistantChunk,
        AssistantMessage,
        ApprovalAsked,
        ApprovalDecided,
        ToolCallEvent,
        ToolSpawned,
        ToolOutput,
        ToolResult,
    )
}

#: Events that belong to a step: they carry ``turn`` and ``step`` and need both open (rule I8).
STEP_SCOPED: Final = frozenset(
    {
        "user/message",
        "assistant/chunk",
        "assistant/message",
        "approval/asked",
        "approval/decided",
        "tool/call",
        "tool/spawned",
        "tool/output",
        "tool/result",
    }
)


def wire_name(name: str) -> str:
    """``removed_count`` -> ``removedCount``: Python names are snake_case, the wire camelCase."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=False)

    def renamed(cls: type[Any]) -> dict[str, Any]:
        return {
            a.name: override(rename=wire_name(a.name), omit_if_default=a.default is None)
            for a in attrs.fields(cls)
        }

    conv.register_structure_hook_factory(
        attrs.has, lambda cls: make_dict_structure_fn(cls, conv, **renamed(cls))
    )
    conv.register_unstructure_hook_factory(
        attrs.has, lambda cls: make_dict_unstructure_fn(cls, conv, **renamed(cls))
    )

    def structure_chunk(value: Any, _: Any) -> Any:
        cls = _CHUNK_CLASSES.get(value.get("type"), OtherChunk)
        if cls is OtherChunk:
            return OtherChunk(type=value["type"])
        return conv.structure(value, cls)

    conv.register_structure_hook(Chunk, structure_chunk)

    def structure_block(value: Any, _: Any) -> Any:
        cls = TextBlock if value.get("type") == "text" else ToolCallBlock
        return conv.structure(value, cls)

    conv.register_structure_hook(TextBlock | ToolCallBlock, structure_block)
    return conv


_CHUNK_CLASSES: Final[dict[str, type[Any]]] = {
    "text-delta": TextDeltaChunk,
    "tool-call": ToolCallChunk,
    "finish": FinishChunk,
}

#: The one cattrs converter of the project: typed data <-> JSON-able dicts with wire names.
converter: Final = _make_converter()


def typed(event: Event) -> EventData:
    """Structure an event's ``data`` into its attrs class (for readers; not used on hot paths)."""
    result: EventData = converter.structure(dict(event.data), DATA_CLASSES[event.type])
    return result


def to_data(value: EventData) -> dict[str, Any]:
    """Unstructure typed data into the JSON object written on the wire."""
    result: dict[str, Any] = converter.unstructure(value)
    return result
