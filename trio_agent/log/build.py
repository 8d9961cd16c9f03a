"""Constructors of the events the runtime appends, one per event type (spec/log.md).

Each returns a *draft*: the event's type and its ``data``, ready for
``session.append(*draft)`` (crash repair's closers, :mod:`trio_agent.log.repair`, are the
same drafts given the seq and time that continue the log). Only the shape is built here (key
order included, which is the order the encoder writes); whether the event is valid *now* is
the live checker's verdict at the append. Pure: no trio, no I/O, no validation on this path
(a test checks every constructor's output against the schema).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "Draft",
    "approval_asked",
    "approval_decided",
    "assistant_chunk",
    "assistant_message",
    "inbox_claimed",
    "inbox_cleared",
    "inbox_inserted",
    "step_end",
    "step_start",
    "tool_call",
    "tool_output",
    "tool_result",
    "tool_spawned",
    "turn_end",
    "turn_start",
    "user_message",
]

#: ``(type, data)`` of an event not yet appended.
Draft = tuple[str, dict[str, Any]]


# -- turns and steps ------------------------------------------------------------------------


def turn_start(turn: int) -> Draft:
    return "turn/start", {"turn": turn}


def turn_end(turn: int, kind: str, error: Mapping[str, str] | None = None) -> Draft:
    """``reason`` is ``{kind}``, plus ``error{code, message}`` for kind ``error``."""
    reason: dict[str, Any] = {"kind": kind}
    if error is not None:
        reason["error"] = dict(error)
    return "turn/end", {"turn": turn, "reason": reason}


def step_start(turn: int, step: int) -> Draft:
    return "step/start", {"turn": turn, "step": step}


def step_end(turn: int, step: int) -> Draft:
    return "step/end", {"turn": turn, "step": step}


# -- the inbox --------------------------------------------------------------------------------


def inbox_inserted(target: str, start: int, message: Mapping[str, Any]) -> Draft:
    """One message ``{id, text, source}`` inserted at ``start`` of ``target``."""
    return "agent/inbox/spliced", {"target": target, "start": start, "inserted": [message]}


def inbox_claimed(target: str, count: int) -> Draft:
    """A claim: the first ``count`` items of ``target`` removed, no outcome (K12)."""
    return "agent/inbox/spliced", {
        "target": target,
        "start": 0,
        "removedCount": count,
        "inserted": [],
    }


def inbox_cleared(target: str, count: int) -> Draft:
    """A cancel's clear: the whole queue of ``count`` items removed as ``canceled`` (K5)."""
    return "agent/inbox/spliced", {
        "target": target,
        "start": 0,
        "removedCount": count,
        "inserted": [],
        "outcome": "canceled",
    }


def user_message(turn: int, step: int, message: Mapping[str, Any]) -> Draft:
    return "user/message", {"turn": turn, "step": step, "message": message}


# -- the model --------------------------------------------------------------------------------


def assistant_chunk(turn: int, step: int, chunk: Mapping[str, Any]) -> Draft:
    return "assistant/chunk", {"turn": turn, "step": step, "chunk": chunk}


def assistant_message(
    turn: int,
    step: int,
    message_id: str,
    content: Sequence[Mapping[str, Any]],
    *,
    interrupted: bool = False,
) -> Draft:
    """``content`` is the message's blocks; ``interrupted`` marks a cancelled stream's
    visible prefix (K14)."""
    data: dict[str, Any] = {
        "turn": turn,
        "step": step,
        "message": {"id": message_id, "content": list(content)},
    }
    if interrupted:
        data["interrupted"] = True
    return "assistant/message", data


# -- tools --------------------------------------------------------------------------------------


def approval_asked(turn: int, step: int, approval_id: str, call_id: str, tool_name: str) -> Draft:
    return "approval/asked", {
        "turn": turn,
        "step": step,
        "id": approval_id,
        "callId": call_id,
        "toolName": tool_name,
    }


def approval_decided(turn: int, step: int, approval_id: str, outcome: str) -> Draft:
    return "approval/decided", {"turn": turn, "step": step, "id": approval_id, "outcome": outcome}


def tool_call(turn: int, step: int, call_id: str, name: str, arguments: Mapping[str, Any]) -> Draft:
    return "tool/call", {
        "turn": turn,
        "step": step,
        "callId": call_id,
        "name": name,
        "arguments": arguments,
    }


def tool_output(turn: int, step: int, call_id: str, stream: str, text: str) -> Draft:
    return "tool/output", {
        "turn": turn,
        "step": step,
        "callId": call_id,
        "stream": stream,
        "text": text,
    }


def tool_spawned(
    turn: int,
    step: int,
    call_id: str,
    pgid: int,
    identity: str,
    *,
    containment: str | None = None,
    owner: str | None = None,
) -> Draft:
    """A call's processes exist; ``containment`` and ``owner`` are optional (spec/log.md
    §``tool/spawned``) and left out when ``None``."""
    data: dict[str, Any] = {
        "turn": turn,
        "step": step,
        "callId": call_id,
        "pgid": pgid,
        "identity": identity,
    }
    if containment is not None:
        data["containment"] = containment
    if owner is not None:
        data["owner"] = owner
    return "tool/spawned", data


def tool_result(
    turn: int, step: int, call_id: str, content: str, *, is_error: bool, code: str | None
) -> Draft:
    """A call's one result; an error ``code`` makes it an error whatever ``is_error`` says
    (rule I15)."""
    data: dict[str, Any] = {
        "turn": turn,
        "step": step,
        "callId": call_id,
        "isError": is_error or code is not None,
        "content": content,
    }
    if code is not None:
        data["error"] = {"code": code}
    return "tool/result", data
