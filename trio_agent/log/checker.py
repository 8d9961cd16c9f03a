"""``LogChecker``: the incremental validator of spec/invariants.md.

Like h11's connection state, it is a pure state machine: feed it events one at a time; an
event that breaks a rule raises :class:`~trio_agent.log.errors.LogViolation` and **leaves the
state unchanged**, so a live session can veto an append and carry on. The same object checks a
file in ``trio-agent check`` and every append of a live session.

Each ``_on_<type>`` method first checks everything (raising on the first broken rule, in the
order of :data:`~trio_agent.log.rules.RULES`), then mutates state. Nothing is mutated before
the last check of an event has passed.

These are the rules as a porter reads them, and the only place they are stated in code. The
file commands' fast path, :mod:`trio_agent.log.checker_fast`, restates them for speed on the
same state, held equal to this module by tests/log/test_stream.py.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from .envelope import STEP_SCOPED, Event
from .errors import LogViolation
from .inbox import InboxProjection, SpliceError
from .rules import DISPATCHED_CODES, NOT_DISPATCHED_CODES, REPAIR_ONLY_CODES
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
    a number (Python has ``True == 1``), and numbers compare as the binary64 values a JSON
    reader gives them (``2 == 2.0``; ``9007199254740993 == 9007199254740992``, which Python's
    exact ``==`` of two ints denies)."""
    if a == b:
        return _no_bool_for_number(a, b)
    return _same_binary64(a, b)  # only on a mismatch: an I11 violation, or a large number


def _same_binary64(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if ta in (int, float) and tb in (int, float):
        return _binary64(a) == _binary64(b)
    if ta is not tb:
        return False
    if ta is dict:
        return a.keys() == b.keys() and all(_same_binary64(a[k], b[k]) for k in a)
    if ta is list:
        return len(a) == len(b) and all(map(_same_binary64, a, b))
    return bool(a == b)


def _binary64(number: float) -> float:
    """The binary64 value a JSON reader gives ``number``: an integer too large for it reads
    as an infinity (as ``JSON.parse`` does) instead of raising ``OverflowError``."""
    try:
        return float(number)
    except OverflowError:
        return math.inf if number > 0 else -math.inf


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
        # Every tool-call id (I10) and approval id (I12) of the log, as ordered sets (dicts of
        # None): in the order accepted, so that after a restore from a checkpoint (its ids
        # sorted) the next checkpoint's sort meets one sorted run and the tail's few ids.
        self._call_ids: dict[str, None] = {}
        self._approval_ids: dict[str, None] = {}
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
        ids: dict[str, None] = {}
        for block in blocks:
            cid = block["id"]
            if cid in self._call_ids or cid in ids:
                raise LogViolation("I10", event.seq, f"tool-call id {cid!r} is already used")
            ids[cid] = None

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
            self._approval_ids[aid] = None
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


def check_events(events: Iterable[Event]) -> LogChecker:
    """Feed every event to a fresh checker and return it (raises on the first violation)."""
    checker = LogChecker()
    checker.feed_all(events)
    return checker
