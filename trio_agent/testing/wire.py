"""The harness protocol's messages as attrs classes, checked with cattrs (spec/harness.md).

A driven implementation is another program, often in another language, so every line it
writes is checked here before the machine reads it: :func:`check_journal` for a journal
entry, :func:`check_reply` for a reply to a given request. A malformed message becomes one
:class:`~trio_agent.testing.protocol.AdapterError` that names the message and the field
(``journal entry rt/turn-ended: ... @ $.reason``) instead of a ``KeyError`` deep inside the
reference model. The same shapes are published as JSON Schema in ``spec/schema/harness/``
for ports; ``tests/harness/test_wire.py`` keeps the two in agreement on real traffic.

Unknown keys are refused everywhere and no value is coerced
(:func:`trio_agent.boundary.strict_converter`): a port's typo in an optional key, or a string
where the schema says an array, must not pass silently. The machine itself keeps working on
the plain dicts once checked. Our own adapter (:class:`~trio_agent.testing.host.WorldHost`)
structures every request it receives with :func:`parse_request` and acts on the class.
"""

from __future__ import annotations

import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, override

from ..boundary import errors, object_hook, strict_converter
from .protocol import POINTS, PROTOCOL, AdapterError

__all__ = [
    "Request",
    "check_journal",
    "check_reply",
    "check_request",
    "json_schemas",
    "parse_request",
]

T = TypeVar("T")

Point = Literal[
    "turn/start:before",
    "turn/start:after",
    "claim:after",
    "step/start:after",
    "stream:mid",
    "tool/call:after",
    "tool/call:flushed",
    "tool:running",
    "approval:waiting",
    "step/end:after",
    "turn/end:after",
    "flush",
    "finish:observer",
    "assistant/message:observer",
    "turn/end:observer",
]
Cause = Literal["user", "parent", "hook", "disposed"]
TurnKind = Literal["completed", "max-tokens", "blocked", "aborted", "error"]
Target = Literal["next-turn", "next-step"]

# -- state ------------------------------------------------------------------------------------


@attrs.frozen
class Controller:
    turn: int | None
    cancelled: bool


@attrs.frozen
class Inbox:
    next_turn: list[str]
    next_step: list[str]


@attrs.frozen
class CrashAction:
    kind: Literal["crash"]
    after_write: bool


@attrs.frozen
class CancelAction:
    kind: Literal["cancel"]
    cause: Literal["user", "parent"]
    keep_inbox: bool


@attrs.frozen
class DiskAction:
    kind: Literal["disk"]
    fail: int


Action = CrashAction | CancelAction | DiskAction


@attrs.frozen
class Trap:
    point: Point
    action: Action


@attrs.frozen
class State:
    status: Literal["idle", "running", "closed"]
    controller: Controller | None
    where: str
    jobs: int
    approvals: int
    inbox: Inbox
    events: int
    acked: int
    disk_failures: int
    armed: Trap | None
    violations: list[str]
    failure: str | None
    # Optional extras a port may report (ours does); the driver does not read them.
    alive: bool = True
    closed_ok: bool = False


# -- results, one shape per request -------------------------------------------------------------


@attrs.frozen
class HelloResult:
    protocol: str
    implementation: str
    points: list[Point]


@attrs.frozen
class StartResult:
    events: int


@attrs.frozen
class SendResult:
    id: str


@attrs.frozen
class CancelResult:
    hit: bool
    where: str


@attrs.frozen
class DecisionResult:
    call: str


@attrs.frozen
class ShutdownResult:
    closed_ok: bool


@attrs.frozen
class CrashResult:
    where: str


@attrs.frozen
class NewAgentResult:
    """``second``: how opening a second agent on the session, while the first still ran, was
    refused (one line), or null if it was not (spec/cancel.md K24)."""

    second: str | None


RESULTS: Final[dict[str, type | None]] = {
    "hello": HelloResult,
    "start": StartResult,
    "followup": SendResult,
    "steer": SendResult,
    "inject": SendResult,
    "cancel": CancelResult,
    "advance": None,
    "tool": DecisionResult,
    "approval": DecisionResult,
    "flush": None,
    "disk": None,
    "arm": None,
    "shutdown": ShutdownResult,
    "crash": CrashResult,
    "new_agent": NewAgentResult,
    "bye": None,
}


@attrs.frozen
class Reply:
    ok: bool
    crashed: bool
    result: Any = None
    state: State | None = None
    error: str | None = None


# -- journal entries ---------------------------------------------------------------------------


@attrs.frozen
class WireEvent:
    seq: int
    time: int
    type: str
    data: dict[str, Any]


@attrs.frozen
class Opened:
    k: Literal["opened"]
    created: bool
    events: list[WireEvent]


@attrs.frozen
class EventEntry:
    k: Literal["event"]
    event: WireEvent


@attrs.frozen
class HookEntry:
    """A hook was entered (each hook is a seam: a deferred cancel's entries follow it)."""

    k: Literal["hook"]
    name: Literal["pre_step", "assemble_prompt", "turn_stopping"]
    turn: int
    step: int


@attrs.frozen
class WriteEntry:
    """A batch of the live session's writer finished: ``events`` events written to the file
    (``ok``), or refused before a byte was written (an injected disk failure)."""

    k: Literal["write"]
    events: int
    ok: bool


@attrs.frozen
class StatusEntry:
    k: Literal["rt"]
    type: Literal["status"]
    status: Literal["idle", "running"]


@attrs.frozen
class TurnStartedEntry:
    k: Literal["rt"]
    type: Literal["turn-started"]
    turn: int


@attrs.frozen
class TurnEndedEntry:
    """``reason`` is the turn/end kind as a string; ``cause`` the cancel cause's kind, set
    exactly when the reason is ``aborted`` (spec/harness.md §Journal entries)."""

    k: Literal["rt"]
    type: Literal["turn-ended"]
    turn: int
    reason: TurnKind
    cause: Cause | None


@attrs.frozen
class PreventedEntry:
    k: Literal["rt"]
    type: Literal["prevented"]
    cause: Cause
    parked: int


@attrs.frozen
class DroppedEntry:
    k: Literal["rt"]
    type: Literal["dropped"]
    target: Target
    ids: list[str]
    cause: Cause


@attrs.frozen
class AgentErrorEntry:
    k: Literal["rt"]
    type: Literal["agent-error"]
    message: str


@attrs.frozen
class SendBegin:
    k: Literal["act"]
    op: Literal["followup", "steer", "inject"]
    phase: Literal["begin"]
    text: str


@attrs.frozen
class SendEnd:
    k: Literal["act"]
    op: Literal["followup", "steer", "inject"]
    phase: Literal["end"]
    id: str


@attrs.frozen
class CancelBegin:
    k: Literal["act"]
    op: Literal["cancel"]
    phase: Literal["begin"]
    cause: Literal["user", "parent"]
    keep_inbox: bool
    where: str


@attrs.frozen
class CancelEnd:
    """``turn`` is the live controller's turn read *before* the cancel (null: none, or it had
    not started its turn). ``error``: the one-line error ``cancel`` raised (a clear refused
    inside a session observer, spec/cancel.md K5); ``hit`` then says whether it still
    cancelled the live controller."""

    k: Literal["act"]
    op: Literal["cancel"]
    phase: Literal["end"]
    hit: bool
    turn: int | None
    error: str | None = None


@attrs.frozen
class ShutdownBegin:
    k: Literal["act"]
    op: Literal["shutdown"]
    phase: Literal["begin"]


@attrs.frozen
class NewAgentBegin:
    """The running agent is about to be left (as ``shutdown`` leaves it, K22); ``second`` is
    how a second agent opened on the session just before was refused, or null (K24)."""

    k: Literal["act"]
    op: Literal["new_agent"]
    phase: Literal["begin"]
    second: str | None


@attrs.frozen
class NewAgentEnd:
    """The agent was left; ``closed`` is whether the session was closed then (K24: never).
    A new agent is opened on the session next."""

    k: Literal["act"]
    op: Literal["new_agent"]
    phase: Literal["end"]
    closed: bool


@attrs.frozen
class DecisionEnd:
    k: Literal["act"]
    op: Literal["tool", "approval"]
    phase: Literal["end"]
    call: str
    decision: Literal["finish", "fail", "allow", "deny"]


@attrs.frozen
class FlushEnd:
    k: Literal["act"]
    op: Literal["flush"]
    phase: Literal["end"]
    ok: bool
    error: str | None = None


@attrs.frozen
class Fire:
    k: Literal["fire"]
    point: Point
    action: Action
    events: int


@attrs.frozen
class ViolationEntry:
    k: Literal["violation"]
    text: str


@attrs.frozen
class FailureEntry:
    k: Literal["failure"]
    text: str


#: Journal entry classes by their discriminating keys: ``k``, then ``type`` (rt) or
#: ``op``/``phase`` (act).
_SIMPLE: Final[dict[str, type]] = {
    "opened": Opened,
    "event": EventEntry,
    "write": WriteEntry,
    "hook": HookEntry,
    "fire": Fire,
    "violation": ViolationEntry,
    "failure": FailureEntry,
}
_RT: Final[dict[str, type]] = {
    "status": StatusEntry,
    "turn-started": TurnStartedEntry,
    "turn-ended": TurnEndedEntry,
    "prevented": PreventedEntry,
    "dropped": DroppedEntry,
    "agent-error": AgentErrorEntry,
}
_ACT: Final[dict[tuple[str, str], type]] = {
    **{(op, "begin"): SendBegin for op in ("followup", "steer", "inject")},
    **{(op, "end"): SendEnd for op in ("followup", "steer", "inject")},
    ("cancel", "begin"): CancelBegin,
    ("cancel", "end"): CancelEnd,
    ("shutdown", "begin"): ShutdownBegin,
    ("new_agent", "begin"): NewAgentBegin,
    ("new_agent", "end"): NewAgentEnd,
    ("tool", "end"): DecisionEnd,
    ("approval", "end"): DecisionEnd,
    ("flush", "end"): FlushEnd,
}


def _converter() -> cattrs.Converter:
    conv = strict_converter()
    conv.register_structure_hook(
        Inbox,
        object_hook(
            make_dict_structure_fn(
                Inbox,
                conv,
                _cattrs_forbid_extra_keys=True,
                next_turn=override(rename="next-turn"),
                next_step=override(rename="next-step"),
            )
        ),
    )

    def action(value: Any, _: Any) -> Action:
        kind = value.get("kind") if isinstance(value, dict) else None
        if kind == "crash":
            return conv.structure(value, CrashAction)
        if kind == "cancel":
            return conv.structure(value, CancelAction)
        if kind == "disk":
            return conv.structure(value, DiskAction)
        raise ValueError(f"action.kind must be 'crash', 'cancel' or 'disk', got {kind!r}")

    conv.register_structure_hook(Action, action)
    return conv


_CONVERTER: Final = _converter()
assert tuple(Point.__args__) == POINTS  # type: ignore[attr-defined]


def _structure(value: Any, cls: type[T], what: str) -> T:
    try:
        return _CONVERTER.structure(value, cls)
    except Exception as exc:  # cattrs raises groups of per-field errors
        if isinstance(exc, cattrs.BaseValidationError):
            detail = "; ".join(f"{why} @ {path}" for path, why in errors(exc))
        else:
            detail = str(exc)
        raise AdapterError(f"protocol: {what}: {detail}") from None


def _entry_class(entry: dict[str, Any]) -> tuple[type | None, str]:
    """The class for an entry and its name for messages (``rt/turn-ended``)."""
    k = entry.get("k")
    if k == "rt":
        kind = entry.get("type")
        return (_RT.get(kind) if isinstance(kind, str) else None), f"rt/{kind}"
    if k == "act":
        op, phase = entry.get("op"), entry.get("phase")
        found = _ACT.get((op, phase)) if isinstance(op, str) and isinstance(phase, str) else None
        return found, f"act/{op}/{phase}"
    return (_SIMPLE.get(k) if isinstance(k, str) else None), str(k)


def check_journal(entry: Any) -> None:
    """Raise :class:`AdapterError` unless ``entry`` is a journal entry of spec/harness.md."""
    if not isinstance(entry, dict):
        raise AdapterError(f"protocol: a journal entry is a JSON object, got {entry!r:.80}")
    cls, name = _entry_class(entry)
    if cls is None:
        raise AdapterError(f"protocol: unknown journal entry {name}")
    _structure(entry, cls, f"journal entry {name}")


def check_reply(reply: Any, op: str) -> None:
    """Raise :class:`AdapterError` unless ``reply`` is a well-formed reply to ``op``."""
    what = f"reply to {op!r}"
    _structure(reply, Reply, what)
    if not reply["ok"]:
        if not isinstance(reply.get("error"), str):
            raise AdapterError(f"protocol: {what}: $.error: a refusal says why (a string)")
        return
    if reply["crashed"]:
        return  # the world died inside the request: no state, and the result is moot
    if op not in ("hello", "bye") and reply.get("state") is None:
        raise AdapterError(f"protocol: {what}: $.state: required when ok and not crashed")
    result_cls = RESULTS.get(op)
    if result_cls is None:
        if reply.get("result") is not None and op in RESULTS:
            raise AdapterError(f"protocol: {what}: $.result: must be null")
        return
    _structure(reply.get("result"), result_cls, f"{what} $.result")


# -- requests (what the driver sends; published for ports, checked before sending) -------------


@attrs.frozen
class HelloRequest:
    op: Literal["hello"]


@attrs.frozen
class StartRequest:
    op: Literal["start"]
    log: str
    create: bool
    plan: list[str]


@attrs.frozen
class SendRequest:
    op: Literal["followup", "steer", "inject"]
    text: str


@attrs.frozen
class CancelRequest:
    """``settle: false`` asks for the reply right after ``agent.cancel`` returned, before the
    cancelled run unwinds; the world then stays still until the next request, whose action
    happens first (spec/harness.md §Requests)."""

    op: Literal["cancel"]
    cause: Literal["user", "parent"]
    keep_inbox: bool
    settle: bool = True


@attrs.frozen
class AdvanceRequest:
    op: Literal["advance"]
    ticks: int
    seconds: float


@attrs.frozen
class ToolRequest:
    op: Literal["tool"]
    decision: Literal["finish", "fail"]


@attrs.frozen
class ApprovalRequest:
    op: Literal["approval"]
    decision: Literal["allow", "deny"]


@attrs.frozen
class DiskRequest:
    op: Literal["disk"]
    fail: int


@attrs.frozen
class ArmRequest:
    op: Literal["arm"]
    point: Point
    action: Action


@attrs.frozen
class BareRequest:
    op: Literal["flush", "shutdown", "new_agent", "crash", "bye"]


_REQUESTS: Final[dict[str, type]] = {
    "hello": HelloRequest,
    "start": StartRequest,
    **{op: SendRequest for op in ("followup", "steer", "inject")},
    "cancel": CancelRequest,
    "advance": AdvanceRequest,
    "tool": ToolRequest,
    "approval": ApprovalRequest,
    "disk": DiskRequest,
    "arm": ArmRequest,
    **{op: BareRequest for op in ("flush", "shutdown", "new_agent", "crash", "bye")},
}


#: One request of spec/harness.md §Requests, structured.
Request = (
    HelloRequest | StartRequest | SendRequest | CancelRequest | AdvanceRequest | ToolRequest
    | ApprovalRequest | DiskRequest | ArmRequest | BareRequest
)  # fmt: skip


def parse_request(request: Any) -> Request:
    """``request`` (a decoded JSON line) as its class of spec/harness.md §Requests; raise
    :class:`AdapterError` naming the field and why unless it is one."""
    op = request.get("op") if isinstance(request, dict) else None
    cls = _REQUESTS.get(op) if isinstance(op, str) else None
    if cls is None:
        raise AdapterError(f"protocol: unknown request {op!r}")
    parsed: Request = _structure(request, cls, f"request {op}")
    return parsed


def check_request(request: Any) -> None:
    """Raise :class:`AdapterError` unless ``request`` is a request of spec/harness.md (the
    driver checks each request it sends)."""
    parse_request(request)


# -- the same shapes as JSON Schema, for ports (spec/schema/harness/) ---------------------------

_RENAMES: Final[dict[type, dict[str, str]]] = {
    Inbox: {"next_turn": "next-turn", "next_step": "next-step"}
}
_ENTRIES: Final = (
    Opened, EventEntry, WriteEntry, HookEntry, StatusEntry, TurnStartedEntry, TurnEndedEntry,
    PreventedEntry, DroppedEntry, AgentErrorEntry, SendBegin, SendEnd, CancelBegin, CancelEnd,
    ShutdownBegin, NewAgentBegin, NewAgentEnd, DecisionEnd, FlushEnd, Fire, ViolationEntry,
    FailureEntry,
)  # fmt: skip


def _schema_of(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return {}
    if tp in (int, bool, str, float):
        return {"type": {int: "integer", bool: "boolean", str: "string", float: "number"}[tp]}
    if origin is Literal:
        return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        return {"oneOf": [_schema_of(a, defs) for a in args]}
    if tp is type(None):
        return {"type": "null"}
    if origin is list:
        return {"type": "array", "items": _schema_of(args[0], defs)}
    if origin is dict:
        return {"type": "object"}
    if attrs.has(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder: recursion stops here
            hints = typing.get_type_hints(tp)
            renames = _RENAMES.get(tp, {})
            props, required = {}, []
            for field in attrs.fields(tp):
                key = renames.get(field.name, field.name)
                props[key] = _schema_of(hints[field.name], defs)
                if field.default is attrs.NOTHING:
                    required.append(key)
            defs[name] = {
                "type": "object",
                "required": required,
                "additionalProperties": False,
                "properties": props,
            }
            if tp.__doc__ and not tp.__doc__.startswith(f"{name}("):
                defs[name]["description"] = " ".join(tp.__doc__.split())
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"no JSON Schema for {tp!r}")


def json_schemas() -> dict[str, dict[str, Any]]:
    """``journal.schema.json`` and ``reply.schema.json``, generated from the classes above."""
    out: dict[str, dict[str, Any]] = {}
    journal_defs: dict[str, Any] = {}
    entries = [_schema_of(cls, journal_defs) for cls in _ENTRIES]
    out["journal.schema.json"] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:trio-agent:harness:2:journal",
        "title": f'{PROTOCOL}: one journal entry (the value of a {{"journal": ...}} line)',
        "description": "spec/harness.md §Journal entries. Generated by "
        "`python -m trio_agent.testing.wire`; do not edit.",
        "oneOf": entries,
        "$defs": dict(sorted(journal_defs.items())),
    }
    request_defs: dict[str, Any] = {}
    requests = [_schema_of(cls, request_defs) for cls in dict.fromkeys(_REQUESTS.values())]
    out["request.schema.json"] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:trio-agent:harness:2:request",
        "title": f"{PROTOCOL}: one request line (what the driver sends)",
        "description": "spec/harness.md §Requests. Generated by "
        "`python -m trio_agent.testing.wire`; do not edit.",
        "oneOf": requests,
        "$defs": dict(sorted(request_defs.items())),
    }
    reply_defs: dict[str, Any] = {}
    reply = _schema_of(Reply, reply_defs)
    results = {op: _schema_of(cls, reply_defs) for op, cls in RESULTS.items() if cls is not None}
    out["reply.schema.json"] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:trio-agent:harness:2:reply",
        "title": f'{PROTOCOL}: one reply (the value of a {{"reply": ...}} line)',
        "description": "spec/harness.md §Replies. `result` depends on the request: "
        "$defs/results maps each op to its result's schema (ops not listed answer null); "
        "`state` is required unless the reply is a refusal, a crash, or answers hello. "
        "Generated by `python -m trio_agent.testing.wire`; do not edit.",
        "allOf": [reply],
        "$defs": {**dict(sorted(reply_defs.items())), "results": results},
    }
    return out


#: The generated schemas of the source checkout (where ``python -m`` writes them).
SCHEMA_DIR: Final = Path(__file__).resolve().parents[2] / "spec" / "schema" / "harness"


def _write_schemas() -> None:
    SCHEMA_DIR.mkdir(parents=True, exist_ok=True)
    for name, schema in json_schemas().items():
        (SCHEMA_DIR / name).write_text(json.dumps(schema, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(json_schemas())} schemas to {SCHEMA_DIR}", file=sys.stderr)


if __name__ == "__main__":
    _write_schemas()
