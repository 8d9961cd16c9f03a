"""Log format v1: the data of every event type, described once (spec/log.md).

The attrs classes below are the single description of each event's ``data``. They serve two
purposes:

* the JSON Schema in ``spec/schema/`` is checked against them by the tests;
* :mod:`trio_agent.log.schema` compiles them into the validators that explain what is wrong
  with a ``data`` object, and into the source of :mod:`trio_agent.log.data_predicates`, the
  fast yes/no checks run on every decoded line (rule ``I0``). No code path instantiates
  these classes, and reading a log does not even load them.

The header and the envelope (:class:`Event`, :class:`Header`) are in
:mod:`trio_agent.log.envelope`, imported here too. Python attribute names are snake_case,
wire names camelCase (:func:`wire_name`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Final, Literal

import attrs

from .envelope import (
    FORMAT_VERSION as FORMAT_VERSION,
    STEP_SCOPED as STEP_SCOPED,
    Event as Event,
    Header as Header,
)

TurnEndKind = Literal["completed", "max-tokens", "blocked", "aborted", "error", "interrupted"]
InboxTarget = Literal["next-turn", "next-step"]
ApprovalOutcome = Literal["allowed", "rejected", "cancelled"]
OutputStream = Literal["stdout", "stderr"]
Containment = Literal["pid-namespace", "process-group"]
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


# -- shared shapes ---------------------------------------------------------------------------


@attrs.frozen
class Message:
    """A user message, queued in the inbox and entered into a step (spec/log.md §Shared shapes)."""

    id: str = attrs.field(metadata=_ID)
    text: str
    source: str


@attrs.frozen
class ErrorInfo:
    """``reason.error`` of an ``error`` turn: ``{code, message}`` (spec/log.md §``turn/end``)."""

    code: str
    message: str


@attrs.frozen
class TurnEndReason:
    """``error`` is present exactly when ``kind`` is ``"error"`` (spec/log.md §``turn/end``)."""

    kind: TurnEndKind
    error: ErrorInfo | None = None

    def __attrs_post_init__(self) -> None:
        if (self.kind == "error") != (self.error is not None):
            raise ValueError("reason.error is required when kind is 'error', and only then")


@attrs.frozen
class TextBlock:
    """A ``text`` content block of an assistant message (spec/log.md §Shared shapes)."""

    type: Literal["text"]
    text: str


@attrs.frozen
class ToolCallBlock:
    """A ``tool-call`` content block: it requests a call (spec/log.md §Shared shapes)."""

    type: Literal["tool-call"]
    id: str = attrs.field(metadata=_ID)
    name: str = attrs.field(metadata=_ID)
    arguments: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class AssistantContent:
    """An assistant ``message``: ``{id, content}`` (spec/log.md §``assistant/message``)."""

    id: str = attrs.field(metadata=_ID)
    content: list[TextBlock | ToolCallBlock] = attrs.field(factory=list)


@attrs.frozen
class TextDeltaChunk:
    """A ``text-delta`` chunk of a model's stream (spec/log.md §Shared shapes)."""

    type: Literal["text-delta"]
    text: str


@attrs.frozen
class ToolCallChunk:
    """A ``tool-call`` chunk of a model's stream (spec/log.md §Shared shapes)."""

    type: Literal["tool-call"]
    id: str = attrs.field(metadata=_ID)
    name: str = attrs.field(metadata=_ID)
    arguments: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class FinishChunk:
    """A ``finish`` chunk: the model ended its output (spec/log.md §Shared shapes)."""

    type: Literal["finish"]
    reason: str


@attrs.frozen
class OtherChunk:
    """Any other chunk type a model may stream (usage, reasoning, ...): only ``type`` is fixed."""

    type: str


Chunk = TextDeltaChunk | ToolCallChunk | FinishChunk | OtherChunk


@attrs.frozen
class ResultError:
    """``tool/result``'s ``error``: ``{code}`` (spec/log.md §``tool/result``)."""

    code: ResultCode


# -- event data, one class per type ----------------------------------------------------------


@attrs.frozen
class TurnStart:
    """``turn/start``: opens turn ``turn`` (spec/log.md §``turn/start``)."""

    TYPE: ClassVar[str] = "turn/start"
    turn: int = attrs.field(metadata=_POS)


@attrs.frozen
class TurnEnd:
    """``turn/end``: closes the open turn with a ``reason`` (spec/log.md §``turn/end``)."""

    TYPE: ClassVar[str] = "turn/end"
    turn: int = attrs.field(metadata=_POS)
    reason: TurnEndReason = attrs.field()


@attrs.frozen
class StepStart:
    """``step/start``: opens step ``step`` (spec/log.md §``step/start``, ``step/end``)."""

    TYPE: ClassVar[str] = "step/start"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)


@attrs.frozen
class StepEnd:
    """``step/end``: closes step ``step`` (spec/log.md §``step/start``, ``step/end``)."""

    TYPE: ClassVar[str] = "step/end"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)


@attrs.frozen
class InboxSpliced:
    """``agent/inbox/spliced``: one inbox mutation (spec/log.md §``agent/inbox/spliced``)."""

    TYPE: ClassVar[str] = "agent/inbox/spliced"
    target: InboxTarget
    start: int = attrs.field(metadata=_NAT)
    inserted: list[Message] = attrs.field(factory=list)
    removed_count: int | None = attrs.field(default=None, metadata={"min": 1})
    outcome: Literal["canceled"] | None = None


@attrs.frozen
class UserMessage:
    """``user/message``: a message entered into the step (spec/log.md §``user/message``)."""

    TYPE: ClassVar[str] = "user/message"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)
    message: Message = attrs.field()


@attrs.frozen
class AssistantChunk:
    """``assistant/chunk``: one streamed model chunk (spec/log.md §``assistant/chunk``)."""

    TYPE: ClassVar[str] = "assistant/chunk"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)
    chunk: Chunk = attrs.field()


@attrs.frozen
class AssistantMessage:
    """``assistant/message``: the step's model output (spec/log.md §``assistant/message``)."""

    TYPE: ClassVar[str] = "assistant/message"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)
    message: AssistantContent = attrs.field()
    interrupted: Literal[True] | None = None


@attrs.frozen
class ApprovalAsked:
    """``approval/asked``: permission asked for a call (spec/log.md §``approval/asked``)."""

    TYPE: ClassVar[str] = "approval/asked"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)
    id: str = attrs.field(metadata=_ID)
    call_id: str = attrs.field(metadata=_ID)
    tool_name: str = attrs.field(metadata=_ID)


@attrs.frozen
class ApprovalDecided:
    """``approval/decided``: the answer (spec/log.md §``approval/decided``)."""

    TYPE: ClassVar[str] = "approval/decided"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)
    id: str = attrs.field(metadata=_ID)
    outcome: ApprovalOutcome = attrs.field()


@attrs.frozen
class ToolCallEvent:
    """``tool/call``: the dispatch marker (spec/log.md §``tool/call``)."""

    TYPE: ClassVar[str] = "tool/call"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)
    call_id: str = attrs.field(metadata=_ID)
    name: str = attrs.field(metadata=_ID)
    arguments: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class ToolSpawned:
    """``tool/spawned``: a tool's process group started (spec/log.md §``tool/spawned``)."""

    TYPE: ClassVar[str] = "tool/spawned"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)
    call_id: str = attrs.field(metadata=_ID)
    pgid: int = attrs.field(metadata=_POS)
    identity: str = attrs.field(metadata=_ID)
    #: How the kernel contained the call's processes (spec/tools.md §10); optional.
    containment: Containment | None = None
    #: The runtime that started the call, ``"<boot_id>:<pid>:<starttime>"``; optional.
    owner: str | None = attrs.field(default=None, metadata=_ID)


@attrs.frozen
class ToolOutput:
    """``tool/output``: output of a running call (spec/log.md §``tool/output``)."""

    TYPE: ClassVar[str] = "tool/output"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)
    call_id: str = attrs.field(metadata=_ID)
    stream: OutputStream = attrs.field()
    text: str = attrs.field()


@attrs.frozen
class ToolResult:
    """``tool/result``: the one result of a requested call (spec/log.md §``tool/result``)."""

    TYPE: ClassVar[str] = "tool/result"
    turn: int = attrs.field(metadata=_POS)
    step: int = attrs.field(metadata=_POS)
    call_id: str = attrs.field(metadata=_ID)
    is_error: bool = attrs.field()
    content: str = attrs.field()
    error: ResultError | None = None  # any ``error`` requires ``is_error`` (rule I15)


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


def wire_name(name: str) -> str:
    """``removed_count`` -> ``removedCount``: Python names are snake_case, the wire camelCase."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)
