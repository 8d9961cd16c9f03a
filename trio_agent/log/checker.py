"""``LogChecker``: the incremental validator of spec/invariants.md.

Like h11's connection state, it is a pure state machine: feed it events one at a time; an
event that breaks a rule raises :class:`~trio_agent.log.errors.LogViolation` and **leaves the
state unchanged**, so a live session can veto an append and carry on. The same object checks a
file in ``trio-agent check`` and every append of a live session.

Each ``_on_<type>`` method first checks everything (raising on the first broken rule, in the
order of :data:`~trio_agent.log.rules.RULES`), then mutates state. Nothing is mutated before
the last check of an event has passed.
"""

from __future__ import annotations

import enum
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from .errors import LogViolation
from .events import STEP_SCOPED, Event, OutputStream
from .inbox import InboxProjection, SpliceError
from .rules import DISPATCHED_CODES, NOT_DISPATCHED_CODES, REPAIR_ONLY_CODES
from .schema import DATA_PREDICATES
from .splice import SpliceKind, splice_kind


class Phase(enum.Enum):
    """Where the open step is (rule I9): input, then model output, then tool work."""

    INPUT = "input"
    STREAMING = "streaming"
    ANSWERED = "answered"  # the step's assistant/message is in
    INTERRUPTED = "interrupted"  # its assistant/message was interrupted: only step/end follows


# Module-level names: a global load is cheaper than an attribute of the enum class, and the
# hot path compares by identity (an Enum's hash is a Python-level call).
_INPUT: Final = Phase.INPUT
_STREAMING: Final = Phase.STREAMING
_ANSWERED: Final = Phase.ANSWERED
_INTERRUPTED: Final = Phase.INTERRUPTED
_CLAIM: Final = SpliceKind.CLAIM


def _same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values (spec/log.md §Values): ``==``, except that a boolean never equals
    a number (Python has ``True == 1``). Numbers still compare by value (``2 == 2.0``)."""
    return bool(a == b) and _no_bool_for_number(a, b)


def _no_bool_for_number(a: Any, b: Any) -> bool:
    # Only called on values that are already ``==``: dicts have the same keys, lists the
    # same length. A string equals only a string, so string members need no descent.
    ta = type(a)
    if ta is bool or type(b) is bool:
        return ta is type(b)
    if ta is dict:
        for key, value in a.items():
            if type(value) is not str and not _no_bool_for_number(value, b[key]):
                return False
        return True
    if ta is list:
        for value, other in zip(a, b, strict=True):
            if type(value) is not str and not _no_bool_for_number(value, other):
                return False
        return True
    return True


class _Call:
    """A call requested by the open step's assistant/message."""

    __slots__ = (
        "approval",
        "arguments",
        "dispatched",
        "identity",
        "name",
        "resolved",
        "spawned",
    )

    def __init__(self, name: str, arguments: Any) -> None:
        self.name = name
        self.arguments = arguments
        self.dispatched = False
        self.resolved = False
        self.spawned = False
        self.identity: str | None = None  # the tool/spawned identity, once spawned
        self.approval: str | None = None  # None | "asked" | an outcome


class LogChecker:
    """Validates a log event by event (spec/invariants.md, rules I1-I19; I0 is the codec's).

    Public state, for readers such as repair and the runtime:
    ``next_seq``, ``open_turn``, ``open_step``, ``last_turn``, ``last_time`` (the ``time`` of
    the last accepted event, 0 before any), ``inbox`` and ``pending_calls`` (call ids of the
    open step without a result, in request order).
    """

    def __init__(self) -> None:
        self.next_seq = 0
        self.last_time = 0
        self.last_turn = 0
        self.open_turn: int | None = None
        self.open_step: int | None = None
        self.inbox = InboxProjection()
        self._last_step = 0
        self._phase: Phase = _INPUT
        self._calls: dict[str, _Call] = {}
        self._call_ids: set[str] = set()  # every tool-call id of the log (I10)
        self._approval_ids: set[str] = set()
        self._open_approvals: dict[str, str] = {}  # approval id -> call id
        self._repairing = False  # a repair placeholder was written in the open turn (I17)
        self._handlers: dict[str, Callable[[Event], Callable[[], None] | None]] = {
            "turn/start": self._on_turn_start,
            "turn/end": self._on_turn_end,
            "step/start": self._on_step_start,
            "step/end": self._on_step_end,
            "agent/inbox/spliced": self._on_inbox_spliced,
            "user/message": self._on_user_message,
            "assistant/chunk": self._on_assistant_chunk,
            "assistant/message": self._on_assistant_message,
            "approval/asked": self._on_approval_asked,
            "approval/decided": self._on_approval_decided,
            "tool/call": self._on_tool_call,
            "tool/spawned": self._on_tool_spawned,
            "tool/output": self._on_tool_output,
            "tool/result": self._on_tool_result,
        }

    # -- public API -------------------------------------------------------------------------

    @property
    def balanced(self) -> bool:
        """True when no turn is open (every turn that started has ended)."""
        return self.open_turn is None

    @property
    def pending_calls(self) -> list[str]:
        return [cid for cid, call in self._calls.items() if not call.resolved]

    def unanswered_calls(self) -> list[tuple[str, str, bool]]:
        """``(call_id, tool_name, dispatched)`` for each call of the open step without a result,
        in the order the model requested them. ``dispatched`` means its ``tool/call`` is in."""
        return [(cid, c.name, c.dispatched) for cid, c in self._calls.items() if not c.resolved]

    def call_id_used(self, call_id: str) -> bool:
        """True when a ``tool-call`` block of the log already has ``call_id`` (I10)."""
        return call_id in self._call_ids

    def spawn_identity(self, call_id: str) -> str | None:
        """The ``identity`` that ``tool/spawned`` recorded for ``call_id`` of the open step, or
        ``None`` (no such call, or it logged no process group)."""
        call = self._calls.get(call_id)
        return None if call is None else call.identity

    def feed(self, event: Event) -> None:
        """Check ``event`` and advance. A broken rule raises :class:`LogViolation`; state stays."""
        if event.seq != self.next_seq:
            raise LogViolation("I1", event.seq, f"expected seq {self.next_seq}, got {event.seq}")
        handler = self._handlers.get(event.type)
        if handler is None:  # the codec rejects these; a hand-built Event can still carry one
            raise LogViolation("I0", event.seq, f"unknown event type {event.type!r}")
        if event.type in STEP_SCOPED:
            self._check_in_step(event)
        commit = handler(event)
        if commit is not None:
            commit()
        self.next_seq += 1
        self.last_time = event.time

    def feed_fast(self, obj: Any) -> bool:
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
                seq != self.next_seq  # I1 (next_seq >= 0, so a matching int is a valid seq)
                or type(seq) is not int  # I0 (True == 1)
                or type(time) is not int
                or time < 0
                or type(data) is not dict
            ):
                return False
            if kind == "assistant/chunk":
                phase = self._phase
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
                call = self._calls.get(call_id)
                if call is None or not call.dispatched or call.resolved:  # I13
                    return False
                turn = data["turn"]
                step = data["step"]
            else:
                accept = _FAST_TYPES.get(kind)  # an unhashable type raises TypeError
                if accept is None or not accept(self, data):
                    return False
                self.next_seq = seq + 1
                self.last_time = time
                return True
        except (KeyError, TypeError):
            return False
        if (
            type(turn) is not int  # I0 (a bool equals 1; the predicate's type test)
            or type(step) is not int
            or turn != self.open_turn  # I7/I8: the open turn has not ended
            or step != self.open_step
            or self._repairing  # I17
        ):
            return False
        if kind == "assistant/chunk":
            self._phase = _STREAMING
        self.next_seq = seq + 1
        self.last_time = time
        return True

    # The per-type halves of feed_fast: ``data`` is the line's data object (a dict), the
    # envelope already checked (I0, I1). Each returns False, changing nothing, on anything
    # its handler (or decode_event's predicate) would refuse; else it commits and returns
    # True. Nothing that can raise runs after the first change of state.

    def _in_step(self, data: dict[str, Any]) -> bool:
        """``_check_in_step`` (I7, I8, I17) on data the predicate accepted (int turn, step)."""
        return (
            data["turn"] == self.open_turn
            and data["step"] == self.open_step
            and not self._repairing
        )

    def _fast_turn_start(self, data: dict[str, Any]) -> bool:
        turn = data["turn"]
        # I0 (an int; >= 1 follows from I3; other keys through the predicate), I2, I3.
        if (
            (len(data) != 1 and not _TURN_START_OK(data))
            or type(turn) is not int
            or self.open_turn is not None
            or turn != self.last_turn + 1
        ):
            return False
        self.open_turn = self.last_turn = turn
        self._last_step = 0
        self._repairing = False
        return True

    def _fast_step_start(self, data: dict[str, Any]) -> bool:
        turn = data["turn"]
        step = data["step"]
        # I0 (ints; >= 1 follows from I6; other keys through the predicate), I6/I7, I17.
        if (
            (len(data) != 2 and not _STEP_OK(data))
            or type(turn) is not int
            or type(step) is not int
            or turn != self.open_turn
            or self.open_step is not None
            or step != self._last_step + 1
            or self._repairing
        ):
            return False
        self.open_step = self._last_step = step
        self._phase = _INPUT
        self._calls = {}
        self._open_approvals = {}
        return True

    def _fast_step_end(self, data: dict[str, Any]) -> bool:
        turn = data["turn"]
        step = data["step"]
        if (
            (len(data) != 2 and not _STEP_OK(data))
            or type(turn) is not int
            or type(step) is not int
            or turn != self.open_turn  # I7, I8
            or step != self.open_step
        ):
            return False
        for call in self._calls.values():  # I16
            if not call.resolved:
                return False
        self.open_step = None
        self._calls = {}
        self._open_approvals = {}
        return True

    def _fast_turn_end(self, data: dict[str, Any]) -> bool:
        if not _TURN_END_OK(data):
            return False
        # I4/I7 (the open turn has not ended), I5, I17.
        if data["turn"] != self.open_turn or self.open_step is not None:
            return False
        if self._repairing and data["reason"]["kind"] != "interrupted":
            return False
        self.open_turn = None
        self._repairing = False
        return True

    def _fast_spliced(self, data: dict[str, Any]) -> bool:
        if not _SPLICED_OK(data):
            return False
        # A claim (I19, I17): splice_kind(data) is CLAIM (log/splice.py), spelled out because
        # the call measured slower here on the bench; test_splice.py holds the two equal.
        if (
            "removedCount" in data
            and "outcome" not in data
            and (
                self.open_turn is None
                or self.open_step is not None
                or data["inserted"]
                or data["start"] != 0
                or (data["target"] == "next-turn" and data["removedCount"] != 1)
                or self._repairing
            )
        ):
            return False
        return self.inbox.try_apply(data)  # I18

    def _fast_user_message(self, data: dict[str, Any]) -> bool:
        return _USER_MESSAGE_OK(data) and self._in_step(data) and self._phase is _INPUT  # I9

    def _fast_assistant_message(self, data: dict[str, Any]) -> bool:
        if not _ASSISTANT_MESSAGE_OK(data) or not self._in_step(data):
            return False
        phase = self._phase
        if phase is _ANSWERED or phase is _INTERRUPTED:  # I9
            return False
        blocks = [b for b in data["message"]["content"] if b["type"] == "tool-call"]
        interrupted = "interrupted" in data  # the predicate admits only true
        if blocks:
            if interrupted:  # I9
                return False
            used = self._call_ids
            ids: set[str] = set()
            for block in blocks:  # I10
                cid = block["id"]
                if cid in used or cid in ids:
                    return False
                ids.add(cid)
            used.update(ids)
        self._phase = _INTERRUPTED if interrupted else _ANSWERED
        self._calls = {b["id"]: _Call(b["name"], b["arguments"]) for b in blocks}
        return True

    def _fast_approval_asked(self, data: dict[str, Any]) -> bool:
        if not _APPROVAL_ASKED_OK(data) or not self._in_step(data):
            return False
        cid = data["callId"]
        call = self._calls.get(cid)
        aid = data["id"]
        if (  # I12
            call is None
            or aid in self._approval_ids
            or call.approval is not None
            or call.dispatched
            or call.resolved
            or data["toolName"] != call.name
        ):
            return False
        self._approval_ids.add(aid)
        self._open_approvals[aid] = cid
        call.approval = "asked"
        return True

    def _fast_approval_decided(self, data: dict[str, Any]) -> bool:
        if not _APPROVAL_DECIDED_OK(data) or not self._in_step(data):
            return False
        aid = data["id"]
        cid = self._open_approvals.get(aid)
        if cid is None:  # I12
            return False
        call = self._calls[cid]
        if call.resolved:  # I12
            return False
        del self._open_approvals[aid]
        call.approval = data["outcome"]
        return True

    def _fast_tool_call(self, data: dict[str, Any]) -> bool:
        if not _TOOL_CALL_OK(data) or not self._in_step(data):
            return False
        call = self._calls.get(data["callId"])
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

    def _fast_tool_spawned(self, data: dict[str, Any]) -> bool:
        if not _TOOL_SPAWNED_OK(data) or not self._in_step(data):
            return False
        call = self._calls.get(data["callId"])
        if call is None or not call.dispatched or call.resolved or call.spawned:  # I13
            return False
        call.spawned = True
        call.identity = data["identity"]
        return True

    def _fast_tool_result(self, data: dict[str, Any]) -> bool:
        # tool/result is the one step-scoped type a repair placeholder lets through (I17).
        if (
            not _TOOL_RESULT_OK(data)
            or data["turn"] != self.open_turn  # I7, I8
            or data["step"] != self.open_step
        ):
            return False
        call = self._calls.get(data["callId"])
        if call is None or call.resolved:  # I14
            return False
        error = data.get("error")
        if error is None:
            if not call.dispatched or self._repairing:  # I15, I17
                return False
            call.resolved = True
            return True
        code = error["code"]
        if not data["isError"]:  # I15
            return False
        if (code in _NOT_DISPATCHED) is call.dispatched:  # I15: keyed to the dispatch marker
            return False
        placeholder = code in _REPAIR_ONLY
        if self._repairing and not placeholder:  # I17
            return False
        call.resolved = True
        if placeholder:
            self._repairing = True
        return True

    def feed_all(self, events: Iterable[Event]) -> None:
        for event in events:
            self.feed(event)

    # -- shared checks ----------------------------------------------------------------------

    def _ended(self, turn: int) -> bool:
        last_ended = self.last_turn if self.open_turn is None else self.last_turn - 1
        return turn <= last_ended

    def _check_in_step(self, event: Event) -> None:
        data = event.data
        turn, step = data["turn"], data["step"]
        if self._ended(turn):
            raise LogViolation("I7", event.seq, f"{event.type} names turn {turn}, which has ended")
        if turn != self.open_turn or step != self.open_step:
            raise LogViolation(
                "I8", event.seq, f"{event.type} names turn {turn} step {step}; {self._where()}"
            )
        if self._repairing and event.type != "tool/result":
            raise LogViolation(
                "I17", event.seq, f"{event.type} after a repair placeholder in turn {turn}"
            )

    def _where(self) -> str:
        if self.open_turn is None:
            return "no turn is open"
        if self.open_step is None:
            return f"turn {self.open_turn} is open with no step open"
        return f"turn {self.open_turn} step {self.open_step} is open"

    def _call(self, event: Event, rule: str) -> _Call:
        cid = event.data["callId"]
        call = self._calls.get(cid)
        if call is None:
            raise LogViolation(
                rule,
                event.seq,
                f"{event.type} for {cid!r}, which is not a requested call of this step",
            )
        return call

    # -- turns and steps --------------------------------------------------------------------

    def _on_turn_start(self, event: Event) -> Callable[[], None]:
        turn = event.data["turn"]
        if self.open_turn is not None:
            raise LogViolation(
                "I2", event.seq, f"turn/start {turn} while turn {self.open_turn} is open"
            )
        if turn != self.last_turn + 1:
            raise LogViolation(
                "I3", event.seq, f"turn/start {turn}; the next turn number is {self.last_turn + 1}"
            )

        def commit() -> None:
            self.open_turn = self.last_turn = turn
            self._last_step = 0
            self._repairing = False

        return commit

    def _on_turn_end(self, event: Event) -> Callable[[], None]:
        turn, kind = event.data["turn"], event.data["reason"]["kind"]
        if self._ended(turn):
            raise LogViolation("I7", event.seq, f"turn/end names turn {turn}, which has ended")
        if turn != self.open_turn:
            raise LogViolation("I4", event.seq, f"turn/end names turn {turn}; {self._where()}")
        if self.open_step is not None:
            raise LogViolation(
                "I5", event.seq, f"turn/end {turn} while step {self.open_step} is open"
            )
        if self._repairing and kind != "interrupted":
            raise LogViolation(
                "I17", event.seq, f"turn {turn} has repair placeholders but ends {kind!r}"
            )

        def commit() -> None:
            self.open_turn = None
            self._repairing = False

        return commit

    def _on_step_start(self, event: Event) -> Callable[[], None]:
        turn, step = event.data["turn"], event.data["step"]
        if self._ended(turn):
            raise LogViolation("I7", event.seq, f"step/start names turn {turn}, which has ended")
        if turn != self.open_turn:
            raise LogViolation("I6", event.seq, f"step/start names turn {turn}; {self._where()}")
        if self.open_step is not None:
            raise LogViolation(
                "I6", event.seq, f"step/start {step} while step {self.open_step} is open"
            )
        if step != self._last_step + 1:
            raise LogViolation(
                "I6",
                event.seq,
                f"step/start {step}; the next step of turn {turn} is {self._last_step + 1}",
            )
        if self._repairing:
            raise LogViolation("I17", event.seq, "step/start after a repair placeholder")

        def commit() -> None:
            self.open_step = self._last_step = step
            self._phase = _INPUT
            self._calls = {}
            self._open_approvals = {}

        return commit

    def _on_step_end(self, event: Event) -> Callable[[], None]:
        turn, step = event.data["turn"], event.data["step"]
        if self._ended(turn):
            raise LogViolation("I7", event.seq, f"step/end names turn {turn}, which has ended")
        if turn != self.open_turn or step != self.open_step:
            raise LogViolation(
                "I8", event.seq, f"step/end names turn {turn} step {step}; {self._where()}"
            )
        missing = self.pending_calls
        if missing:
            raise LogViolation(
                "I16",
                event.seq,
                f"step/end with no tool/result for {', '.join(map(repr, missing))}",
            )

        def commit() -> None:
            self.open_step = None
            self._calls = {}
            self._open_approvals = {}

        return commit

    # -- model side -------------------------------------------------------------------------

    def _on_user_message(self, event: Event) -> None:
        if self._phase != _INPUT:
            raise LogViolation("I9", event.seq, "user/message after the step's model output began")

    def _on_assistant_chunk(self, event: Event) -> Callable[[], None]:
        if self._phase in (_ANSWERED, _INTERRUPTED):
            raise LogViolation(
                "I9", event.seq, "assistant/chunk after the step's assistant/message"
            )

        def commit() -> None:
            self._phase = _STREAMING

        return commit

    def _on_assistant_message(self, event: Event) -> Callable[[], None]:
        if self._phase in (_ANSWERED, _INTERRUPTED):
            raise LogViolation("I9", event.seq, "a second assistant/message in one step")
        data = event.data
        interrupted = data.get("interrupted", False)
        blocks = [b for b in data["message"]["content"] if b["type"] == "tool-call"]
        if interrupted and blocks:
            raise LogViolation(
                "I9", event.seq, "an interrupted assistant/message must not carry tool-call blocks"
            )
        ids: set[str] = set()
        for block in blocks:
            cid = block["id"]
            if cid in self._call_ids or cid in ids:
                raise LogViolation("I10", event.seq, f"tool-call id {cid!r} is already used")
            ids.add(cid)

        def commit() -> None:
            self._phase = _INTERRUPTED if interrupted else _ANSWERED
            self._call_ids.update(ids)
            self._calls = {b["id"]: _Call(b["name"], b["arguments"]) for b in blocks}

        return commit

    # -- approvals and tools ----------------------------------------------------------------

    def _on_approval_asked(self, event: Event) -> Callable[[], None]:
        data = event.data
        call = self._call(event, "I12")
        aid = data["id"]
        if aid in self._approval_ids:
            raise LogViolation("I12", event.seq, f"approval id {aid!r} is already used")
        if call.approval is not None:
            raise LogViolation("I12", event.seq, f"call {data['callId']!r} already has an approval")
        if call.dispatched or call.resolved:
            raise LogViolation(
                "I12",
                event.seq,
                f"approval/asked for {data['callId']!r} after its dispatch or result",
            )
        if data["toolName"] != call.name:
            raise LogViolation(
                "I12",
                event.seq,
                f"approval/asked names tool {data['toolName']!r}; the call is {call.name!r}",
            )

        def commit() -> None:
            self._approval_ids.add(aid)
            self._open_approvals[aid] = data["callId"]
            call.approval = "asked"

        return commit

    def _on_approval_decided(self, event: Event) -> Callable[[], None]:
        aid = event.data["id"]
        cid = self._open_approvals.get(aid)
        if cid is None:
            raise LogViolation(
                "I12", event.seq, f"approval/decided {aid!r} answers no open approval/asked"
            )
        call = self._calls[cid]
        if call.resolved:
            raise LogViolation(
                "I12", event.seq, f"approval/decided {aid!r} after the call's tool/result"
            )

        def commit() -> None:
            del self._open_approvals[aid]
            call.approval = event.data["outcome"]

        return commit

    def _on_tool_call(self, event: Event) -> Callable[[], None]:
        data = event.data
        call = self._call(event, "I11")
        cid = data["callId"]
        if call.dispatched:
            raise LogViolation("I11", event.seq, f"tool/call {cid!r} is dispatched twice")
        if call.resolved:
            raise LogViolation("I11", event.seq, f"tool/call {cid!r} after its tool/result")
        if data["name"] != call.name or not _same_json(data["arguments"], call.arguments):
            raise LogViolation(
                "I11",
                event.seq,
                f"tool/call {cid!r} does not repeat its block's name and arguments",
            )
        if call.approval is not None and call.approval != "allowed":
            state = "undecided" if call.approval == "asked" else call.approval
            raise LogViolation("I12", event.seq, f"tool/call {cid!r} while its approval is {state}")

        def commit() -> None:
            call.dispatched = True

        return commit

    def _on_tool_spawned(self, event: Event) -> Callable[[], None]:
        call = self._in_flight(event)
        if call.spawned:
            raise LogViolation(
                "I13", event.seq, f"a second tool/spawned for {event.data['callId']!r}"
            )

        def commit() -> None:
            call.spawned = True
            call.identity = event.data["identity"]

        return commit

    def _on_tool_output(self, event: Event) -> None:
        self._in_flight(event)

    def _in_flight(self, event: Event) -> _Call:
        call = self._call(event, "I13")
        if not call.dispatched or call.resolved:
            when = "before its tool/call" if not call.dispatched else "after its tool/result"
            raise LogViolation(
                "I13", event.seq, f"{event.type} for {event.data['callId']!r} {when}"
            )
        return call

    def _on_tool_result(self, event: Event) -> Callable[[], None]:
        data = event.data
        call = self._call(event, "I14")
        cid = data["callId"]
        if call.resolved:
            raise LogViolation("I14", event.seq, f"a second tool/result for {cid!r}")
        error = data.get("error")
        code = None if error is None else error["code"]
        if code is not None and not data["isError"]:
            raise LogViolation("I15", event.seq, f"error code {code} with isError false")
        if call.dispatched and code in NOT_DISPATCHED_CODES:
            raise LogViolation(
                "I15", event.seq, f"{code} for {cid!r}, which has its tool/call (use ABORTED)"
            )
        if not call.dispatched and code not in NOT_DISPATCHED_CODES:
            raise LogViolation(
                "I15",
                event.seq,
                f"result for undispatched {cid!r} must carry ABORTED_BEFORE_DISPATCH, DENIED "
                f"or TOOL_NOT_STARTED, not {code or 'no code'}",
            )
        assert code is None or code in DISPATCHED_CODES | NOT_DISPATCHED_CODES
        placeholder = code in REPAIR_ONLY_CODES
        if self._repairing and not placeholder:
            raise LogViolation(
                "I17", event.seq, f"tool/result for {cid!r} after a repair placeholder"
            )

        def commit() -> None:
            call.resolved = True
            if placeholder:
                self._repairing = True

        return commit

    # -- inbox ------------------------------------------------------------------------------

    def _on_inbox_spliced(self, event: Event) -> Callable[[], None]:
        data: Mapping[str, Any] = event.data
        if splice_kind(data) is _CLAIM:  # the claim rules (log/splice.py says what a claim is)
            if self.open_turn is None:
                raise LogViolation(
                    "I19", event.seq, "a claim (removal without outcome) outside a turn"
                )
            if self.open_step is not None:
                raise LogViolation(
                    "I19", event.seq, "a claim while a step is open (claims happen between steps)"
                )
            if data["inserted"] or data["start"] != 0:
                raise LogViolation(
                    "I19", event.seq, "a claim removes from the head and inserts nothing"
                )
            if data["target"] == "next-turn" and data["removedCount"] != 1:
                raise LogViolation("I19", event.seq, "a claim takes exactly one next-turn item")
            if self._repairing:
                raise LogViolation("I17", event.seq, "a claim after a repair placeholder")
        try:
            self.inbox.check(data)
        except SpliceError as exc:
            raise LogViolation("I18", event.seq, str(exc)) from None

        def commit() -> None:
            self.inbox.apply(data)

        return commit


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
#: The values of ``tool/output.stream`` (spec/log.md), as the inline fast test reads them.
_STREAMS: Final = frozenset(typing.get_args(OutputStream))
#: type -> the per-type half of :meth:`LogChecker.feed_fast` (every type but the two it
#: tests inline).
_FAST_TYPES: Final[dict[str, Callable[[LogChecker, dict[str, Any]], bool]]] = {
    "turn/start": LogChecker._fast_turn_start,
    "turn/end": LogChecker._fast_turn_end,
    "step/start": LogChecker._fast_step_start,
    "step/end": LogChecker._fast_step_end,
    "agent/inbox/spliced": LogChecker._fast_spliced,
    "user/message": LogChecker._fast_user_message,
    "assistant/message": LogChecker._fast_assistant_message,
    "approval/asked": LogChecker._fast_approval_asked,
    "approval/decided": LogChecker._fast_approval_decided,
    "tool/call": LogChecker._fast_tool_call,
    "tool/spawned": LogChecker._fast_tool_spawned,
    "tool/result": LogChecker._fast_tool_result,
}


def check_events(events: Iterable[Event]) -> LogChecker:
    """Feed every event to a fresh checker and return it (raises on the first violation)."""
    checker = LogChecker()
    checker.feed_all(events)
    return checker
