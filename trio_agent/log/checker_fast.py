"""The checker's fast path: spec/invariants.md restated for speed, beside the rules.

:mod:`trio_agent.log.checker` holds the rules as a porter reads them (``LogChecker.feed``
and its ``_on_<type>`` handlers). This module restates the same rules in a cheaper form for
the file commands and the cold open, which read millions of lines: :func:`feed_fast` takes a
line's JSON value as ``orjson.loads`` returned it, without building an
:class:`~trio_agent.log.events.Event`, and either accepts it (advancing the checker exactly
as ``feed(decode_event(line))`` would) or declines it, changing nothing, so that the caller
takes the readable path, which words the error. It can therefore never accept what the rules
refuse, and must accept all they accept.

Two things hold it to the rules: tests/log/test_stream.py (property tests over every event
type, shape and state: the fast path accepts exactly what ``feed`` accepts, and leaves the
same state) and tests/log/test_splice.py (its inline claim test equals ``splice_kind``). A
change of a rule changes ``checker.py`` first; these tests then fail until this module says
the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from .checker import (
    _ANSWERED,
    _INPUT,
    _INTERRUPTED,
    _STREAMING,
    LogChecker,
    _Call,
    _same_json,
)
from .data_predicates import DATA_PREDICATES
from .rules import NOT_DISPATCHED_CODES, REPAIR_ONLY_CODES

__all__ = ["FAST_TYPES", "feed_fast"]


def feed_fast(c: LogChecker, obj: Any) -> bool:
    """Accept one decoded line on the fast path, or decline it (spec/invariants.md).

    ``obj`` is the JSON value of a line as ``orjson.loads`` returned it. When it is a
    well-formed event (I0) that breaks no rule, this advances the state exactly as
    ``feed(decode_event(line))`` would and returns True, for every event type. Anything
    else (a malformed line, any broken rule) returns False with the state untouched: the
    caller then takes the explanatory path (:meth:`feed`), which raises the precise
    error. So the fast path can only accept what :meth:`feed` accepts, and accepts all of
    it (property tests in tests/log/test_stream.py hold both to that).
    """
    # Every check mirrors one of decode_event (I0) or feed/_check_in_step/handler, in a
    # cheaper form that declines (never raises) on a broken rule. The two types that
    # dominate long logs (assistant/chunk, tool/output) test their common shapes inline;
    # any other shape, and every other type, goes through the compiled predicate of its
    # data class, then a per-type method that checks the rules and commits.
    if type(obj) is not dict or len(obj) != 4:
        return False
    try:  # a missing key or a value of the wrong type declines (KeyError, TypeError)
        kind = obj["type"]
        data = obj["data"]
        seq = obj["seq"]
        time = obj["time"]
        if (
            seq != c.next_seq  # I1 (next_seq >= 0, so a matching int is a valid seq)
            or type(seq) is not int  # I0 (True == 1)
            or type(time) is not int
            or time < 0
            or type(data) is not dict
        ):
            return False
        if kind == "assistant/chunk":
            phase = c._phase
            if phase is _ANSWERED or phase is _INTERRUPTED:  # I9
                return False
            chunk = data["chunk"]
            if not (
                len(data) == 3
                and type(chunk) is dict
                and len(chunk) == 2
                and chunk["type"] == "text-delta"
                and type(chunk["text"]) is str
            ) and not _chunk_ok(data):
                return False
            turn = data["turn"]
            step = data["step"]
        elif kind == "tool/output":
            call_id = data["callId"]
            if not (
                len(data) == 5
                and type(call_id) is str
                and call_id
                and type(data["text"]) is str
                and data["stream"] in _STREAMS
            ) and not _output_ok(data):
                return False
            call = c._calls.get(call_id)
            if call is None or not call.dispatched or call.resolved:  # I13
                return False
            turn = data["turn"]
            step = data["step"]
        else:
            accept = FAST_TYPES.get(kind)  # an unhashable type raises TypeError
            if accept is None or not accept(c, data):
                return False
            c.next_seq = seq + 1
            c.last_time = time
            return True
    except (KeyError, TypeError):
        return False
    if (
        type(turn) is not int  # I0 (a bool equals 1; the predicate's type test)
        or type(step) is not int
        or turn != c.open_turn  # I7/I8: the open turn has not ended
        or step != c.open_step
        or c._repairing  # I17
    ):
        return False
    if kind == "assistant/chunk":
        c._phase = _STREAMING
    c.next_seq = seq + 1
    c.last_time = time
    return True


# The per-type halves of feed_fast: ``data`` is the line's data object (a dict), the
# envelope already checked (I0, I1). Each returns False, changing nothing, on anything
# its handler (or decode_event's predicate) would refuse; else it commits and returns
# True. Nothing that can raise runs after the first change of state.


def _in_step(c: LogChecker, data: dict[str, Any]) -> bool:
    """``_check_in_step`` (I7, I8, I17) on data the predicate accepted (int turn, step)."""
    return data["turn"] == c.open_turn and data["step"] == c.open_step and not c._repairing


def _turn_start(c: LogChecker, data: dict[str, Any]) -> bool:
    turn = data["turn"]
    # I0 (an int; >= 1 follows from I3; other keys through the predicate), I2, I3.
    if (
        (len(data) != 1 and not _TURN_START_OK(data))
        or type(turn) is not int
        or c.open_turn is not None
        or turn != c.last_turn + 1
    ):
        return False
    c.open_turn = c.last_turn = turn
    c._last_step = 0
    c._repairing = False
    return True


def _step_start(c: LogChecker, data: dict[str, Any]) -> bool:
    turn = data["turn"]
    step = data["step"]
    # I0 (ints; >= 1 follows from I6; other keys through the predicate), I6/I7, I17.
    if (
        (len(data) != 2 and not _STEP_OK(data))
        or type(turn) is not int
        or type(step) is not int
        or turn != c.open_turn
        or c.open_step is not None
        or step != c._last_step + 1
        or c._repairing
    ):
        return False
    c.open_step = c._last_step = step
    c._phase = _INPUT
    c._calls = {}
    c._open_approvals = {}
    return True


def _step_end(c: LogChecker, data: dict[str, Any]) -> bool:
    turn = data["turn"]
    step = data["step"]
    if (
        (len(data) != 2 and not _STEP_OK(data))
        or type(turn) is not int
        or type(step) is not int
        or turn != c.open_turn  # I7, I8
        or step != c.open_step
    ):
        return False
    for call in c._calls.values():  # I16
        if not call.resolved:
            return False
    c.open_step = None
    c._calls = {}
    c._open_approvals = {}
    return True


def _turn_end(c: LogChecker, data: dict[str, Any]) -> bool:
    if not _TURN_END_OK(data):
        return False
    # I4/I7 (the open turn has not ended), I5, I17.
    if data["turn"] != c.open_turn or c.open_step is not None:
        return False
    if c._repairing and data["reason"]["kind"] != "interrupted":
        return False
    c.open_turn = None
    c._repairing = False
    return True


def _spliced(c: LogChecker, data: dict[str, Any]) -> bool:
    if not _SPLICED_OK(data):
        return False
    # A claim (I19, I17): splice_kind(data) is CLAIM (log/splice.py), spelled out because
    # the call measured slower here on the bench; test_splice.py holds the two equal.
    if (
        "removedCount" in data
        and "outcome" not in data
        and (
            c.open_turn is None
            or c.open_step is not None
            or data["inserted"]
            or data["start"] != 0
            or (data["target"] == "next-turn" and data["removedCount"] != 1)
            or c._repairing
        )
    ):
        return False
    return c.inbox.try_apply(data)  # I18


def _user_message(c: LogChecker, data: dict[str, Any]) -> bool:
    return _USER_MESSAGE_OK(data) and _in_step(c, data) and c._phase is _INPUT  # I9


def _assistant_message(c: LogChecker, data: dict[str, Any]) -> bool:
    if not _ASSISTANT_MESSAGE_OK(data) or not _in_step(c, data):
        return False
    phase = c._phase
    if phase is _ANSWERED or phase is _INTERRUPTED:  # I9
        return False
    blocks = [b for b in data["message"]["content"] if b["type"] == "tool-call"]
    interrupted = "interrupted" in data  # the predicate admits only true
    if blocks:
        if interrupted:  # I9
            return False
        used = c._call_ids
        ids: dict[str, None] = {}
        for block in blocks:  # I10
            cid = block["id"]
            if cid in used or cid in ids:
                return False
            ids[cid] = None
        used.update(ids)
    c._phase = _INTERRUPTED if interrupted else _ANSWERED
    c._calls = {b["id"]: _Call(b["name"], b["arguments"]) for b in blocks}
    return True


def _approval_asked(c: LogChecker, data: dict[str, Any]) -> bool:
    if not _APPROVAL_ASKED_OK(data) or not _in_step(c, data):
        return False
    cid = data["callId"]
    call = c._calls.get(cid)
    aid = data["id"]
    if (  # I12
        call is None
        or aid in c._approval_ids
        or call.approval is not None
        or call.dispatched
        or call.resolved
        or data["toolName"] != call.name
    ):
        return False
    c._approval_ids[aid] = None
    c._open_approvals[aid] = cid
    call.approval = "asked"
    return True


def _approval_decided(c: LogChecker, data: dict[str, Any]) -> bool:
    if not _APPROVAL_DECIDED_OK(data) or not _in_step(c, data):
        return False
    aid = data["id"]
    cid = c._open_approvals.get(aid)
    if cid is None:  # I12
        return False
    call = c._calls[cid]
    if call.resolved:  # I12
        return False
    del c._open_approvals[aid]
    call.approval = data["outcome"]
    return True


def _tool_call(c: LogChecker, data: dict[str, Any]) -> bool:
    if not _TOOL_CALL_OK(data) or not _in_step(c, data):
        return False
    call = c._calls.get(data["callId"])
    if (
        call is None  # I11
        or call.dispatched
        or call.resolved
        or data["name"] != call.name
        or not _same_json(data["arguments"], call.arguments)
    ):
        return False
    approval = call.approval
    if approval is not None and approval != "allowed":  # I12
        return False
    call.dispatched = True
    return True


def _tool_spawned(c: LogChecker, data: dict[str, Any]) -> bool:
    if not _TOOL_SPAWNED_OK(data) or not _in_step(c, data):
        return False
    call = c._calls.get(data["callId"])
    if call is None or not call.dispatched or call.resolved or call.spawned:  # I13
        return False
    call.spawned = True
    call.identity = data["identity"]
    return True


def _tool_result(c: LogChecker, data: dict[str, Any]) -> bool:
    # tool/result is the one step-scoped type a repair placeholder lets through (I17).
    if (
        not _TOOL_RESULT_OK(data)
        or data["turn"] != c.open_turn  # I7, I8
        or data["step"] != c.open_step
    ):
        return False
    call = c._calls.get(data["callId"])
    if call is None or call.resolved:  # I14
        return False
    error = data.get("error")
    if error is None:
        if not call.dispatched or c._repairing:  # I15, I17
            return False
        call.resolved = True
        return True
    code = error["code"]
    if not data["isError"]:  # I15
        return False
    if (code in _NOT_DISPATCHED) is call.dispatched:  # I15: keyed to the dispatch marker
        return False
    placeholder = code in _REPAIR_ONLY
    if c._repairing and not placeholder:  # I17
        return False
    call.resolved = True
    if placeholder:
        c._repairing = True
    return True


_chunk_ok: Final = DATA_PREDICATES["assistant/chunk"]
_output_ok: Final = DATA_PREDICATES["tool/output"]
_TURN_START_OK: Final = DATA_PREDICATES["turn/start"]
_STEP_OK: Final = DATA_PREDICATES["step/start"]  # step/end has the same fields
_TURN_END_OK: Final = DATA_PREDICATES["turn/end"]
_SPLICED_OK: Final = DATA_PREDICATES["agent/inbox/spliced"]
_USER_MESSAGE_OK: Final = DATA_PREDICATES["user/message"]
_ASSISTANT_MESSAGE_OK: Final = DATA_PREDICATES["assistant/message"]
_APPROVAL_ASKED_OK: Final = DATA_PREDICATES["approval/asked"]
_APPROVAL_DECIDED_OK: Final = DATA_PREDICATES["approval/decided"]
_TOOL_CALL_OK: Final = DATA_PREDICATES["tool/call"]
_TOOL_SPAWNED_OK: Final = DATA_PREDICATES["tool/spawned"]
_TOOL_RESULT_OK: Final = DATA_PREDICATES["tool/result"]
_NOT_DISPATCHED: Final = NOT_DISPATCHED_CODES
_REPAIR_ONLY: Final = REPAIR_ONLY_CODES
#: The values of ``tool/output.stream`` (spec/log.md), as the inline fast test reads them:
#: ``events.OutputStream``'s, written out so that checking a log does not load the data
#: classes (tests/log/test_schema_source.py holds the two equal).
_STREAMS: Final = frozenset({"stdout", "stderr"})
#: type -> the per-type half of :func:`feed_fast` (every type but the two it
#: tests inline).
FAST_TYPES: Final[dict[str, Callable[[LogChecker, dict[str, Any]], bool]]] = {
    "turn/start": _turn_start,
    "turn/end": _turn_end,
    "step/start": _step_start,
    "step/end": _step_end,
    "agent/inbox/spliced": _spliced,
    "user/message": _user_message,
    "assistant/message": _assistant_message,
    "approval/asked": _approval_asked,
    "approval/decided": _approval_decided,
    "tool/call": _tool_call,
    "tool/spawned": _tool_spawned,
    "tool/result": _tool_result,
}
