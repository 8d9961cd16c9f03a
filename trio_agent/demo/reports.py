"""The demo worker's reports: attrs classes, (un)structured by one cattrs converter.

The worker (:mod:`trio_agent.demo.worker`) writes one report per line on its stdout; the
engine reads them in another process. Each line is a JSON object whose ``type`` picks one
class of :data:`REPORTS` (a tagged union on ``"type"``); every other field is checked against
that class. A line that is not a report is refused by :func:`parse` with a
:class:`BadReport` that names the report and the field and says why
(``bad report controller: $.turn: expected an integer, got str '1'``), not a ``KeyError``
deep inside the runtime view.

Unknown keys are refused and no value is coerced (``"1"`` is not an integer, ``0`` is not a
boolean; :func:`trio_agent.boundary.strict_converter`): the two ends are one program, so any
difference is a bug to report, not to paper over. Reports describe runtime state only; what
is durable is read from the session file itself.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import attrs
import cattrs
import orjson

from ..boundary import errors, strict_converter

__all__ = [
    "REPORTS",
    "AgentErrorReport",
    "BadCommand",
    "BadReport",
    "Bye",
    "Cancelled",
    "Closer",
    "ControllerSeen",
    "Current",
    "Hello",
    "InboxChanged",
    "InboxDropped",
    "Prevented",
    "Ready",
    "Recovered",
    "Report",
    "StatusReport",
    "TurnEndedReport",
    "encode",
    "parse",
]


class BadReport(Exception):
    """A worker's stdout line that is not a report; the message names the field and why."""


@attrs.frozen
class Hello:
    """The worker process is up (before it opens the store)."""

    pid: int
    mode: Literal["create", "open"]


@attrs.frozen
class Closer:
    """One event the store's crash recovery appended on a cold open."""

    seq: int
    type: str
    text: str


@attrs.frozen
class Recovered:
    """A cold open finished; ``closers`` are the events its recovery appended."""

    closers: list[Closer]


@attrs.frozen
class Ready:
    """The agent runs on the session, which holds ``events`` events; commands are read."""

    events: int


@attrs.frozen
class StatusReport:
    """The agent's status changed (a ``StatusChanged`` runtime event)."""

    status: Literal["idle", "running"]


@attrs.frozen
class Current:
    """The agent's live controller changed (``controller`` numbers it within this worker)."""

    controller: int | None
    turn: int | None


@attrs.frozen
class InboxChanged:
    """The texts waiting in the inbox changed."""

    next_turn: list[str]
    next_step: list[str]


@attrs.frozen
class ControllerSeen:
    """A controller at its turn's ``turn/start`` (``live``) or ``turn/end`` (``released``
    before the line was written, or ``still-held``), observed inside the append of ``seq``."""

    controller: int
    turn: int
    state: Literal["live", "released", "still-held"]
    seq: int
    cause: str | None = None


@attrs.frozen
class TurnEndedReport:
    """A turn ended (a ``TurnEnded`` runtime event); ``reason`` is the turn/end kind."""

    turn: int
    reason: str
    cause: str | None


@attrs.frozen
class InboxDropped:
    """Inbox messages were dropped unrun by a cancel."""

    target: str
    texts: list[str]
    cause: str | None


@attrs.frozen
class Prevented:
    """A cancelled controller closed before its turn started (no ``turn/start``)."""

    cause: str | None
    parked: int


@attrs.frozen
class Cancelled:
    """The worker pressed Esc: ``hit`` says whether a controller was cancelled."""

    cause: str
    hit: bool
    controller: int | None
    turn: int | None


@attrs.frozen
class AgentErrorReport:
    """The agent, or a command it was given, failed; the agent keeps running."""

    message: str


@attrs.frozen
class BadCommand:
    """A command line on stdin was refused."""

    message: str


@attrs.frozen
class Bye:
    """The worker left the agent and the store and is about to exit."""


Report = (
    Hello
    | Recovered
    | Ready
    | StatusReport
    | Current
    | InboxChanged
    | ControllerSeen
    | TurnEndedReport
    | InboxDropped
    | Prevented
    | Cancelled
    | AgentErrorReport
    | BadCommand
    | Bye
)

#: The ``type`` tag of each report.
REPORTS: Final[dict[str, type[Report]]] = {
    "hello": Hello,
    "recovered": Recovered,
    "ready": Ready,
    "status": StatusReport,
    "current": Current,
    "inbox": InboxChanged,
    "controller": ControllerSeen,
    "turn_ended": TurnEndedReport,
    "inbox_dropped": InboxDropped,
    "prevented": Prevented,
    "cancel": Cancelled,
    "agent_error": AgentErrorReport,
    "bad_command": BadCommand,
    "bye": Bye,
}
_TAGS: Final[dict[type[Any], str]] = {cls: tag for tag, cls in REPORTS.items()}


# -- the converter ---------------------------------------------------------------------------

converter: Final = strict_converter()


def encode(report: Report) -> bytes:
    """One report as its line (with the newline): ``{"type": tag, **fields}``."""
    body: dict[str, Any] = converter.unstructure(report)
    return orjson.dumps({"type": _TAGS[type(report)], **body}) + b"\n"


def parse(line: bytes) -> Report:
    """One line from the worker -> its report; :class:`BadReport` (naming the field) if not."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise BadReport(f"bad report: not JSON: {line[:60]!r}") from None
    if not isinstance(obj, dict):
        raise BadReport(f'bad report: expected a JSON object with a "type", got {obj!r:.60}')
    kind = obj.get("type")
    cls = REPORTS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        if "type" not in obj:
            raise BadReport("bad report: $.type: is missing")
        raise BadReport(f"bad report: $.type: unknown report type {kind!r:.40}")
    fields = {k: v for k, v in obj.items() if k != "type"}
    try:
        report: Report = converter.structure(fields, cls)
    except cattrs.BaseValidationError as exc:
        raise BadReport(f"bad report {kind}: {_detail(exc)}") from None
    return report


def _detail(exc: cattrs.BaseValidationError) -> str:
    """Every leaf error as ``$.path: why`` (``$.closers[0].text: is missing``)."""
    return "; ".join(f"{path}: {why}" for path, why in errors(exc))
