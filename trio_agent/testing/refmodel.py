"""The reference model: what must happen to queued messages and to turns (pure, no trio, no I/O).

It is written from the spec (spec/cancel.md K1-K12, K14-K19, K21-K22;
spec/consumed-work.md), not from the runtime's code, and replays the journal a world reports
(spec/harness.md §Journal entries): the harness's actions (sends, cancels, shutdown), the
runtime's events and every appended log event, in the order they happened. For each item it
checks that it is allowed *now*, and raises :class:`ModelViolation` otherwise. It decides on
its own:

* where a message goes (``followup`` → next-turn; ``steer`` → next-step, or next-turn after an
  abort; ``inject`` → next-step), and that a claim takes the head(s) of the queues;
* which messages a cancel must drop (the whole queue, next-step first) and that nothing else
  ever leaves the inbox except by a claim; that a cancel issued inside a session observer
  with a non-empty inbox to clear drops nothing, raises, and still cancels (K5);
* whether ``cancel`` reaches a live controller (so an idle cancel reaches nothing), and that a
  reached turn ends ``aborted`` while no other turn does; ``interrupted`` only from repair;
* when a turn may start (a woken, uncancelled controller), which messages each step enters,
  whether another step is owed, and how a turn that was not cancelled must end (from the
  plan: ``completed``, ``max-tokens`` or ``error``);
* when the agent may be idle with work still queued (only after a cancel, a failed
  checkpoint, a shutdown, or in a reopened session: *parked* work, K8/K21);
* that every runtime event naming a cause names the cancel's (K4), every hook gets the turn
  and step it runs for (K9), and a step's calls are prepared group by group (K15);
* where a cancel landed between seams: no call is prepared after it (K6), a cancel after the
  ``finish`` chunk still cuts the stream (K14), one after a hand-off reaches the next
  controller (K7), and a call cancelled in its dispatch flush never starts its body (K17);
* the consumed-work flag: ``dropped_unrun`` is true exactly when a cancel dropped queued
  messages after the last turn that consumed input.

After a crash the model is rebuilt from the durable prefix (:meth:`ReferenceModel.replay`):
what was not durable never happened, except that the new process knows nothing of the old
one's runtime state.
"""

from __future__ import annotations

import enum
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from ..log.splice import Splice, SpliceKind, classify_splice
from .plan import (
    CHUNK_DELAY,
    PARALLEL_TOOLS,
    entry_kind,
    expected_chunks,
    job_done_text,
    job_failed_text,
    plan_entry,
    unstarted_text,
)
from .protocol import OBSERVER_POINTS

__all__ = [
    "MODEL_RULES",
    "Controller",
    "MessageState",
    "ModelViolation",
    "ReferenceModel",
    "Status",
]

#: What the model checks, by rule, in the words :attr:`ReferenceModel.exercised` counts: each
#: is counted when a journal gave the check something to decide (not when it merely passed
#: over nothing), so a rule no example counts was never tested.
MODEL_RULES: Final = (
    "K1 a wake starts a run",
    "K2 a cancelled controller prevents its turn",
    "K3 a second cancel misses",
    "K4 a runtime event names the cancel's cause",
    "K5 an idle cancel reaches nothing",
    "K5 a cancel drops the queue",
    "K5 keep_inbox keeps the queue",
    "K5 a clear refused inside an observer still cancels",
    "K6 no call is prepared after the cancel",
    "K7 a cancel after turn/end reaches the next controller",
    "K8 a steer after an abort goes next-turn",
    "K8 a latched wake replays",
    "K9 a hook gets the turn and step it runs for",
    "K11 an unanswered approval ends cancelled",
    "K10 the stopping hook runs when a step ended the turn",
    "K10 no stopping hook after a model error",
    "K12 max-tokens ends the turn",
    "K12 max-tokens sticks across a later step",
    "K12 next-step input owes a step",
    "K12 next-step input is claimed before the turn's message",
    "K14 the chunks of a finished step",
    "K14 the message of a finished step",
    "K14 the interrupted message of a cut stream",
    "K14 a chunk every virtual second",
    "K14 a cancel after the finish chunk still cuts the stream",
    "K15 a non-parallel call waits for the calls before it",
    "K16 the result of a finished job",
    "K16 results are committed in request order",
    "K17 a cancel in the dispatch flush starts no body",
    "K18 the result of a failed job",
    "K18 the result of a denied call",
    "K19 a cancelled turn ends aborted",
    "K21 the next turn starts after a turn ends",
    "K22 a shutdown parks the queue",
    "K24 a second agent on a session is refused",
    "K24 leaving an agent keeps the session open and flushed",
    "R3 repair closes the open turn",
)

QUEUES = ("next-step", "next-turn")


class Status(enum.StrEnum):
    """The agent's status as the model expects it (the values the journal reports)."""

    IDLE = "idle"
    RUNNING = "running"


class Controller(enum.StrEnum):
    """Where the run's latest controller is (spec/cancel.md K1-K3, K7)."""

    #: No run, or the run's last controller was handed back: a cancel reaches nothing.
    NONE = "none"
    #: Woken, waiting to start its turn (a cancel now prevents the turn, K2).
    UNBOUND = "unbound"
    #: Governing the open turn (:attr:`ReferenceModel.controller_turn`).
    BOUND = "bound"


class MessageState(enum.StrEnum):
    """What has happened to a queued message."""

    QUEUED = "queued"
    CLAIMED = "claimed"  # taken by a claim splice for the next step
    ENTERED = "entered"  # its user/message is logged
    DROPPED = "dropped"  # a cancel removed it unrun


class ModelViolation(AssertionError):
    """The implementation did something the reference model forbids."""


@attrs.define
class TurnRecord:
    number: int
    hit: bool = False  # a cancel reached this turn's controller while it was live
    cause: str | None = None  # the cause of the first cancel that reached it (K3, K4)
    steps: int = 0
    open_step: int | None = None
    claimed: list[str] = attrs.Factory(list)
    batch: list[str] = attrs.Factory(list)  # claimed for the step about to start
    entering: list[str] = attrs.Factory(list)  # claimed ids the open step must enter, in order
    ends: str | None = None  # how the last step ended; None: a follow-up step is owed (K12)
    cut_off: bool = False  # a step stopped at max-tokens: the turn ends max-tokens (K12)
    error: bool = False  # a step's model call failed: the turn ends error
    more_steps: bool = False  # after the last step/end, another step is owed
    ended: str | None = None
    chunks: int = 0  # chunks the open step logged so far
    text: str = ""  # the open step's text-delta chunks, joined (the visible text)
    calls: list[dict[str, Any]] = attrs.Factory(list)  # the open step's tool-call chunks
    answered: set[str] = attrs.Factory(set)  # call ids of the open step with a tool/result
    finish: str | None = None  # the open step's finish reason, once its finish chunk is logged
    message: bool = False  # the open step logged its assistant/message
    stream_time: int = 0  # event time of the open step's start, then of its latest chunk
    timed: bool = False  # its step/start was stamped by the clock, not clamped (see _floor)
    stopping: int = 0  # the step the turn-stopping hook last ran after (K10)
    approvals: dict[str, str] = attrs.Factory(dict)  # approval id -> call id (asked)
    allowed: set[str] = attrs.Factory(set)  # call ids whose approval was decided allowed
    dispatched: list[str] = attrs.Factory(list)  # call ids with a tool/call, in order
    #: The call a cancel reached in its dispatch flush: its body must never start (K17).
    unstarted: str | None = None

    @property
    def cut(self) -> bool:
        """The open step's stream was cut (K14): a cancel reached the turn, or the model's
        ``finish`` was ``error``; only its visible text is kept, as an interrupted message."""
        return self.hit or self.finish == "error"


@attrs.define
class _Send:
    op: str
    text: str
    target: str
    woke_idle: bool
    after_abort: bool
    inserted: str | None = None


@attrs.define
class _Cancel:
    cause: str
    keep_inbox: bool
    drops: list[tuple[str, list[str]]]
    predicted_hit: bool
    controller_turn: int | None
    where: str = ""
    #: The drop splices a cancel from inside a session observer asked for, refused there (K5).
    refused: list[tuple[str, list[str]]] = attrs.Factory(list)


class ReferenceModel:
    """See the module docstring. ``plan`` is the plan the world's model plays."""

    def __init__(self, plan: Sequence[str]) -> None:
        self.plan = list(plan)
        # -- what the log says (rebuilt from the durable prefix after a crash) --
        self.queues: dict[str, list[str]] = {q: [] for q in QUEUES}
        self.messages: dict[str, MessageState] = {}
        self.turns: dict[int, TurnRecord] = {}
        self.open_turn: int | None = None
        self.last_turn = 0
        self.dropped_unrun = False
        self.events = 0
        # -- what the running agent knows (reset by a crash or a reopen) --
        self.status = Status.IDLE
        self.controller = Controller.NONE
        self.controller_turn: int | None = None
        self.controller_cancelled = False
        self.after_abort = False  # the run's latest controller was cancelled (K8)
        self.abort_cause: str | None = None
        self.latch = False
        self.closing = False
        self.checkpoint_failed = False
        self.parked: set[str] = set()  # queued ids allowed to wait while the agent is idle
        self.expect_running = False
        #: K14 differences of the stream being logged, reported together when it ends.
        self._chunk_diffs: list[str] = []
        self._chunk_step = ""
        self.repairing = False
        self._send: _Send | None = None
        #: ``("tool" | "approval", call id)`` -> the decision the driver delivered (K16, K18).
        self._decided: dict[tuple[str, str], str] = {}
        self._cancel: _Cancel | None = None
        self._last_end: tuple[int, str] | None = None
        self._last_drop: tuple[str, list[str]] | None = None
        #: Every turn/end seen, in order: (turn, kind).
        self.ends: list[tuple[int, str]] = []
        #: How often each of :data:`MODEL_RULES` had something to decide.
        self.exercised: Counter[str] = Counter()
        self._handed_off = False  # the open run's controller came from a turn's hand-off (K7)
        self._time = 0  # the time of the event being applied
        #: A reopened log's last time: until the new world's clock passes it, events are
        #: stamped with it (persistence.md §2), so their spacing says nothing.
        self._floor = -1

    def _saw(self, rule: str) -> None:
        self.exercised[rule] += 1

    # -- construction after a crash or a reopen ------------------------------------------------

    @classmethod
    def replay(cls, plan: Sequence[str], events: Iterable[Mapping[str, Any]]) -> ReferenceModel:
        """The model of a freshly opened session whose log is ``events`` (no checks: every
        event was checked when it was first appended)."""
        model = cls(plan)
        for event in events:
            model._replay_event(event)
        model.reopened()
        return model

    def reopened(self) -> None:
        """A new agent on the same log: no run, everything queued is parked (K8)."""
        self._floor = self._time
        self._handed_off = False
        self.status = Status.IDLE
        self.controller = Controller.NONE
        self.controller_turn = None
        self.controller_cancelled = False
        self.after_abort = False
        self.abort_cause = None
        self.latch = False
        self.closing = False
        self.checkpoint_failed = False
        self.expect_running = False
        self._send = None
        self._cancel = None
        self.parked = set(self.queues["next-step"]) | set(self.queues["next-turn"])

    def _replay_event(self, event: Mapping[str, Any]) -> None:
        kind, data = event["type"], event["data"]
        self._time = event["time"]
        self.events += 1
        if kind == "agent/inbox/spliced":
            splice = classify_splice(data, self.queues)
            queue = self.queues[splice.target]
            del queue[splice.start : splice.start + len(splice.removed)]
            for m in splice.inserted:
                queue.append(m["id"])
                self.messages[m["id"]] = MessageState.QUEUED
            for mid in splice.dropped:
                self.messages[mid] = MessageState.DROPPED
            if splice.drops_unrun:
                self.dropped_unrun = True
            if splice.claimed and self.open_turn is not None:
                for mid in splice.claimed:
                    self.messages[mid] = MessageState.CLAIMED
                self.turns[self.open_turn].claimed.extend(splice.claimed)
        elif kind == "turn/start":
            self.open_turn = self.last_turn = data["turn"]
            self.turns[data["turn"]] = TurnRecord(data["turn"])
        elif kind == "step/start":
            record = self.turns.get(data["turn"])
            if record is not None:
                record.steps = data["step"]
        elif kind == "turn/end":
            record = self.turns.get(data["turn"])
            if record is not None:
                record.ended = data["reason"]["kind"]
                if record.steps or (record.claimed and record.ended != "completed"):
                    self.dropped_unrun = False
            self.ends.append((data["turn"], data["reason"]["kind"]))
            self.open_turn = None

    # -- the journal ---------------------------------------------------------------------------

    def fail(self, text: str) -> None:
        raise ModelViolation(text)

    def apply(self, entry: Mapping[str, Any]) -> None:
        """Check and apply one journal entry."""
        k = entry["k"]
        if self._chunk_diffs and not (k == "event" and entry["event"]["type"] == "assistant/chunk"):
            self.report_chunks()
        if self.expect_running and not (
            k == "rt" and entry["type"] == "status" and entry["status"] == Status.RUNNING
        ):
            self.fail("a latched wake with pending work did not start a new run when idle (K8)")
        if k == "event":
            self._event(entry["event"])
        elif k == "rt":
            self._runtime(entry)
        elif k == "act":
            self._act(entry)
        elif k == "hook":
            self._hook(entry["name"], entry["turn"], entry["step"])

    # -- actions --

    def _act(self, entry: Mapping[str, Any]) -> None:
        op, phase = entry["op"], entry["phase"]
        if op in ("followup", "steer", "inject"):
            if phase == "begin":
                after_abort = self.status is Status.RUNNING and self.after_abort
                target = (
                    "next-turn"
                    if op == "followup" or (op == "steer" and after_abort)
                    else ("next-step")
                )
                idle = self.status is Status.IDLE
                self._send = _Send(op, entry["text"], target, idle, after_abort)
            else:
                self._send_end(entry)
        elif op == "cancel":
            if phase == "begin":
                self._cancel_begin(
                    entry["cause"], bool(entry["keep_inbox"]), entry.get("where", "")
                )
            else:
                self._cancel_end(entry.get("hit"), entry.get("turn"), entry.get("error"))
        elif op in ("tool", "approval"):
            self._decided[(op, entry["call"])] = entry["decision"]
        elif op == "shutdown" or (op == "new_agent" and phase == "begin"):
            if op == "new_agent":
                self._saw("K24 a second agent on a session is refused")
                if entry["second"] is None:
                    self.fail(
                        "K24: a second agent was opened on the session while its agent still "
                        "ran (at most one agent runs on a session: RuntimeError otherwise)"
                    )
            # K22: closing, then cancel(disposed, keep_inbox=True) inside the runtime.
            if any(self.queues.values()):
                self._saw("K22 a shutdown parks the queue")
            self.closing = True
            self._cancel_begin("disposed", True)
            self._cancel_end(None, None)
        elif op == "new_agent":
            # K24: the agent was left (open_agent exited); a new one opens on the session.
            # The driver checks the file right after the reply: the session was flushed.
            self._saw("K24 leaving an agent keeps the session open and flushed")
            if entry["closed"]:
                self.fail(
                    "K24: leaving the agent closed the session: open_agent does not take "
                    "ownership of it (it flushes it on exit and never closes it)"
                )
            if self.status is not Status.IDLE:
                self.fail("the agent was left while the model still has its run going (K22)")
            floor = self._floor  # the same world: its clock goes on
            self.reopened()
            self._floor = floor

    def _send_end(self, entry: Mapping[str, Any]) -> None:
        send = self._send
        self._send = None
        if send is None or send.inserted is None:
            self.fail(f"{entry['op']} returned without appending its insert splice")
            return
        if entry["id"] != send.inserted:
            self.fail(f"{entry['op']} returned id {entry['id']!r} but inserted {send.inserted!r}")
        if send.op == "inject":
            if self.status is Status.IDLE:
                self.parked.add(send.inserted)
            return
        if self.closing:
            self.parked.add(send.inserted)
            return
        if send.woke_idle:
            if self.status is not Status.RUNNING:
                self.fail(f"{send.op} on an idle agent did not start a run (K1)")
        elif send.after_abort and self.abort_cause != "disposed":
            self.latch = True

    def _cancel_begin(self, cause: str, keep_inbox: bool, where: str = "") -> None:
        if keep_inbox and any(self.queues.values()):
            self._saw("K5 keep_inbox keeps the queue")
        drops = [] if keep_inbox else [(q, list(self.queues[q])) for q in QUEUES if self.queues[q]]
        refused: list[tuple[str, list[str]]] = []
        if drops and where in OBSERVER_POINTS:
            # K5: issued inside a session observer, the clear's first splice is refused (an
            # observer may not append), so nothing of step 1 happens -- no splice, no
            # InboxDropped, a latched wake stays -- and step 2 still cancels the controller.
            refused, drops = drops, []
        elif not keep_inbox:
            self.latch = False
        predicted = self.controller is not Controller.NONE and not self.controller_cancelled
        turn = self.controller_turn if self.controller is Controller.BOUND else None
        self._cancel = _Cancel(cause, keep_inbox, drops, predicted, turn, where, refused)

    def _cancel_end(self, hit: object, turn: object, error: object = None) -> None:
        cancel = self._cancel
        self._cancel = None
        assert cancel is not None
        if cancel.drops:
            self.fail(f"cancel did not drop {cancel.drops} (K5: the whole queue, next-step first)")
        if cancel.refused:
            self._saw("K5 a clear refused inside an observer still cancels")
            if error is None:
                self.fail(
                    f"a cancel with keep_inbox false from inside the {cancel.where} observer, "
                    f"with {cancel.refused} queued, returned without an error: clearing them "
                    "appends, which a session observer may not (K5: the clear is refused, nothing "
                    "is dropped, the live controller is still cancelled and the error propagates)"
                )
        elif error is not None:
            self.fail(
                f"cancel at {cancel.where!r} raised {error}, but it had nothing to refuse (K5: "
                "only a clear refused inside a session observer makes cancel raise)"
            )
        if hit is not None and self.controller is Controller.NONE:
            self._saw("K5 an idle cancel reaches nothing")
        elif hit is not None and self.controller_cancelled:
            self._saw("K3 a second cancel misses")
        if hit is not None and hit is not cancel.predicted_hit:
            where = (
                "no live controller"
                if self.controller is Controller.NONE
                else f"a {'cancelled ' if self.controller_cancelled else ''}{self.controller} "
                f"controller (turn {self.controller_turn})"
            )
            self.fail(f"cancel returned hit={hit} but the model has {where} (K3/K5)")
        if hit is not None and turn != cancel.controller_turn:
            self.fail(
                f"the live controller governs turn {turn}, the model says {cancel.controller_turn}"
            )
        if cancel.predicted_hit:
            if self.controller is Controller.UNBOUND and self._handed_off:
                # K7: cancelled after a turn's hand-off (from an observer of its turn/end, or
                # during its checkpoint): the next turn's controller was installed first.
                self._saw("K7 a cancel after turn/end reaches the next controller")
            self.controller_cancelled = True
            self.after_abort = True
            self.abort_cause = cancel.cause
            if self.controller is Controller.BOUND:
                assert self.controller_turn is not None
                record = self.turns[self.controller_turn]
                if record.ended is not None:
                    self.fail(f"cancel reached turn {record.number}, which already ended (K7)")
                record.hit = True
                record.cause = cancel.cause
                self._hit_where(record, cancel.where)

    def _hit_where(self, record: TurnRecord, where: str) -> None:
        """What a cancel that just reached ``record``'s turn decides, by where it landed: after
        the open step's ``finish`` chunk and before its message, the stream is still cut
        (K14); after its ``assistant/message``, no call not yet prepared may be (K6); in the
        flush after a ``tool/call`` (``tool/call:flushed``), that call's body never starts
        (K17). The checks are where the events come."""
        if record.open_step is None:
            return
        if record.finish not in (None, "error") and not record.message:
            self._saw("K14 a cancel after the finish chunk still cuts the stream")
        asked = set(record.approvals.values())
        if record.message and any(c.get("id") not in asked for c in record.calls):
            self._saw("K6 no call is prepared after the cancel")
        if where == "tool/call:flushed" and record.dispatched:
            self._saw("K17 a cancel in the dispatch flush starts no body")
            record.unstarted = record.dispatched[-1]

    def _hook(self, name: str, turn: int, step: int) -> None:
        """K9: every seam gets the turn and step it runs for: the pre-step hook the step about
        to start (no step is open), prompt assembly the open step, the turn-stopping hook the
        step that ended the turn (K10, :meth:`_turn_stopping`)."""
        if name == "turn_stopping":
            self._turn_stopping(turn, step)
            return
        record = self.turns.get(self.open_turn) if self.open_turn is not None else None
        if record is None:
            self.fail(f"K9: the {name} hook ran for turn {turn} step {step}, but no turn is open")
            return
        if name == "pre_step":
            want = (record.number, record.steps + 1) if record.open_step is None else None
            what = "the step about to start"
        else:
            want = (record.number, record.open_step) if record.open_step is not None else None
            what = "the open step"
        self._saw("K9 a hook gets the turn and step it runs for")
        if want is None:
            self.fail(f"K9: the {name} hook ran for turn {turn} step {step} at the wrong place")
        elif (turn, step) != want:
            self.fail(
                f"K9: the {name} hook got turn {turn} step {step}; it runs for {what}, turn "
                f"{want[0]} step {want[1]} (its TurnContext)"
            )

    def _turn_stopping(self, turn: int, step: int) -> None:
        """K10: the hook runs when a step ended the turn (finished without calls, completed or
        cut off at max-tokens) and no next-step input is queued; never after a model error, a
        cancelled step, or a step that owes a follow-up."""
        record = self.turns.get(turn)
        why = None
        if record is None or record.ended is not None or record.steps != step:
            why = "it is not the last step of an open turn"
        elif record.error or record.finish == "error":
            why = "its model failed, which ends the turn at once, without the hook"
        elif record.open_step is not None:
            why = "the step has not ended"
        elif record.hit:
            why = "a cancel reached the turn"
        elif record.ends is None:
            why = "its model called tools, so a follow-up step is owed"
        elif self.queues["next-step"]:
            why = "next-step input is queued, so another step follows"
        if why is not None:
            self.fail(f"K10: turn_stopping ran for turn {turn} step {step}, but {why}")
            return
        assert record is not None
        record.stopping = step

    # -- runtime events --

    def _runtime(self, entry: Mapping[str, Any]) -> None:
        kind = entry["type"]
        if kind == "status":
            if entry["status"] == Status.RUNNING:
                self._running()
            else:
                self._idle()
        elif kind == "turn-started":
            if self.open_turn != entry["turn"]:
                self.fail(f"TurnStarted({entry['turn']}) but the open turn is {self.open_turn}")
        elif kind == "turn-ended":
            last = self._last_end
            if last is None or last != (entry["turn"], entry["reason"]):
                self.fail(f"TurnEnded({entry['turn']}, {entry['reason']}) but the log has {last}")
            if (entry["cause"] is None) != (entry["reason"] != "aborted"):
                self.fail(f"turn {entry['turn']} {entry['reason']} with cause {entry['cause']}")
            record = self.turns.get(entry["turn"])
            if entry["reason"] == "aborted" and record is not None and record.cause is not None:
                self._cause("TurnEnded", entry["cause"], record.cause)
            self._last_end = None
        elif kind == "prevented":
            if self.controller is not Controller.UNBOUND or not self.controller_cancelled:
                self.fail("TurnPrevented without a cancelled controller waiting to start (K2)")
            self.controller = Controller.NONE
            self.controller_turn = None
            pending = len(self.queues["next-turn"]) + len(self.queues["next-step"])
            if entry["parked"] != pending:
                self.fail(f"TurnPrevented says {entry['parked']} parked, the inbox holds {pending}")
            self._saw("K2 a cancelled controller prevents its turn")
            if self.abort_cause is not None:
                self._cause("TurnPrevented", entry["cause"], self.abort_cause)
        elif kind == "dropped":
            if self._last_drop != (entry["target"], list(entry["ids"])):
                self.fail(
                    f"InboxDropped({entry['target']}, {entry['ids']}) but the log dropped "
                    f"{self._last_drop}"
                )
            self._last_drop = None
            if self._cancel is not None:
                self._cause("InboxDropped", entry["cause"], self._cancel.cause)
        elif kind == "agent-error":
            self.checkpoint_failed = True

    def _cause(self, event: str, got: object, want: str) -> None:
        """K4: a runtime event names the cause of the cancel behind it (the first one that
        reached the controller, K3), the very cause passed to ``cancel``."""
        self._saw("K4 a runtime event names the cancel's cause")
        if got != want:
            self.fail(
                f"K4: {event} names the cause {got!r}, but the cancel behind it had cause {want!r}"
            )

    def _running(self) -> None:
        send = self._send
        woke = send is not None and send.woke_idle and send.op != "inject" and not self.closing
        if not (woke or self.expect_running) or self.status is not Status.IDLE:
            self.fail("the agent started a run nobody woke (K1, K8)")
        self._saw("K8 a latched wake replays" if self.expect_running else "K1 a wake starts a run")
        self.expect_running = False
        self.status = Status.RUNNING
        self.controller = Controller.UNBOUND
        self.controller_turn = None
        self.controller_cancelled = False
        self.after_abort = False
        self.abort_cause = None
        self.checkpoint_failed = False
        self.parked.clear()  # a run takes the whole queue, parked work included (K8)

    def _idle(self) -> None:
        if self.status is not Status.RUNNING:
            self.fail("StatusChanged(idle) while the model is already idle")
        if self.controller is Controller.BOUND:
            self.fail(f"the agent went idle with turn {self.controller_turn} still running")
        if (
            self.controller is Controller.UNBOUND
            and self.controller_cancelled
            and not self.checkpoint_failed  # the run stopped at the failed checkpoint (K13)
        ):
            self.fail(
                "the agent went idle without TurnPrevented for its cancelled controller, which "
                "never started its turn (K2: every prevented turn emits one, parked 0 included)"
            )
        pending = [*self.queues["next-step"], *self.queues["next-turn"]]
        stopped_by = self.after_abort or self.checkpoint_failed or self.closing
        if pending and not stopped_by and not self.latch:
            self.fail(
                f"the run ended with {pending} queued although no cancel or failure stopped it "
                "(K21: only a cancel parks work)"
            )
        self.status = Status.IDLE
        self.controller = Controller.NONE
        self.controller_turn = None
        self.controller_cancelled = False
        self._handed_off = False
        replay = self.latch and bool(pending) and not self.closing
        self.latch = False
        if replay:
            self.expect_running = True
        else:
            self.parked.update(pending)

    # -- log events --

    def _event(self, event: Mapping[str, Any]) -> None:
        kind, data, seq = event["type"], event["data"], event["seq"]
        self._time = event["time"]
        if seq != self.events:
            self.fail(f"event seq {seq} but the model counted {self.events} events")
        self.events += 1
        try:
            handler = getattr(self, "_on_" + kind.replace("/", "_"))
        except AttributeError:
            return
        handler(data, seq)

    def _on_agent_inbox_spliced(self, data: Mapping[str, Any], seq: int) -> None:
        splice = classify_splice(data, self.queues)
        target = splice.target
        queue = self.queues[target]
        if splice.kind is SpliceKind.INSERT:
            self._insert(data, seq)
        elif splice.kind is SpliceKind.DROP:
            cancel = self._cancel
            if cancel is None or not cancel.drops:
                self.fail(f"seq {seq}: messages dropped without a cancel that clears the inbox")
                return
            want_target, want_ids = cancel.drops.pop(0)
            got = list(splice.dropped)
            if target != want_target or splice.start != 0 or got != want_ids or splice.inserted:
                self.fail(
                    f"seq {seq}: cancel dropped {target} {got}, expected {want_target} {want_ids}"
                )
            del queue[:]
            self._saw("K5 a cancel drops the queue")
            self._last_drop = (target, list(got))
            for mid in got:
                self.messages[mid] = MessageState.DROPPED
            self.dropped_unrun = True
        else:
            self._claim(splice, seq)

    def _insert(self, data: Mapping[str, Any], seq: int) -> None:
        send = self._send
        inserted = data["inserted"]
        if send is None or send.inserted is not None or len(inserted) != 1:
            self.fail(f"seq {seq}: an insert that no single send asked for")
            return
        target = data["target"]
        if target != send.target:
            self.fail(
                f"seq {seq}: {send.op} queued its message on {target}, expected "
                f"{send.target}" + (" (after an abort, K8)" if send.after_abort else "")
            )
        queue = self.queues[target]
        if send.after_abort and send.op == "steer":
            self._saw("K8 a steer after an abort goes next-turn")
        if data["start"] != len(queue):
            self.fail(f"seq {seq}: insert at {data['start']}, not at the end of {target}")
        message = inserted[0]
        if message.get("source") != send.op or message.get("text") != send.text:
            self.fail(
                f"seq {seq}: {send.op}({send.text!r}) inserted {message}: a message's source "
                f"is the call that queued it ({send.op!r}, also after an abort) and its text "
                "the text sent"
            )
        mid = message["id"]
        queue.append(mid)
        self.messages[mid] = MessageState.QUEUED
        send.inserted = mid

    def _claim(self, splice: Splice[str], seq: int) -> None:
        turn = self.open_turn
        if turn is None:
            self.fail(f"seq {seq}: a claim outside a turn")
            return
        record = self.turns[turn]
        if record.hit and not self.repairing:
            self.fail(f"seq {seq}: turn {turn} claims input after its cancel")
        target = splice.target
        queue = self.queues[target]
        taken = list(splice.claimed)
        count = len(taken)
        if splice.start != 0:
            self.fail(f"seq {seq}: a claim must take the head of {target}")
        if target == "next-step" and record.batch:
            self.fail(
                f"seq {seq}: turn {turn} claimed next-step input after the turn's message "
                f"{record.batch} (K12: a step claims all of next-step first, then the turn's "
                "message; the batch is in that order)"
            )
        elif target == "next-turn" and record.batch:
            self._saw("K12 next-step input is claimed before the turn's message")
        if target == "next-step" and count != len(queue):
            self.fail(f"seq {seq}: claimed {count} of {len(queue)} next-step messages (K12)")
        if target == "next-turn" and (count != 1 or record.steps):
            self.fail(f"seq {seq}: a next-turn claim takes one message, at the first step only")
        del queue[:count]
        for mid in taken:
            self.messages[mid] = MessageState.CLAIMED
        record.claimed.extend(taken)
        record.batch.extend(taken)

    def _on_turn_start(self, data: Mapping[str, Any], seq: int) -> None:
        if self.status is not Status.RUNNING or self.controller is not Controller.UNBOUND:
            self.fail(f"seq {seq}: turn/start without a woken controller (K1)")
        elif self.controller_cancelled:
            self.fail(f"seq {seq}: turn/start although its controller was cancelled (K2)")
        turn = data["turn"]
        if self._handed_off:
            self._saw("K21 the next turn starts after a turn ends")
        self._handed_off = False
        self.turns[turn] = TurnRecord(turn)
        self.open_turn = self.last_turn = turn
        self.controller = Controller.BOUND
        self.controller_turn = turn

    def _on_step_start(self, data: Mapping[str, Any], seq: int) -> None:
        record = self.turns[data["turn"]]
        if record.hit:
            self.fail(f"seq {seq}: turn {record.number} starts a step after its cancel")
        if record.steps and not record.more_steps:
            self.fail(
                f"seq {seq}: step {data['step']} of turn {record.number} although the "
                "previous step ended the turn (K12)"
            )
        record.steps = data["step"]
        record.open_step = data["step"]
        record.chunks = 0
        record.text, record.calls, record.finish, record.message = "", [], None, False
        record.answered = set()
        record.stream_time = self._time
        record.timed = self._time > self._floor
        record.entering = record.batch
        record.batch = []
        record.more_steps = False

    def _on_user_message(self, data: Mapping[str, Any], seq: int) -> None:
        record = self.turns[data["turn"]]
        mid = data["message"]["id"]
        if not record.entering or record.entering[0] != mid:
            self.fail(f"seq {seq}: step entered {mid!r}, expected the claimed {record.entering}")
            return
        record.entering.pop(0)
        self.messages[mid] = MessageState.ENTERED

    def _on_assistant_chunk(self, data: Mapping[str, Any], seq: int) -> None:
        record = self.turns[data["turn"]]
        step = data["step"]
        expected = expected_chunks(plan_entry(self.plan, record.number, step), record.number, step)
        index = record.chunks
        if record.open_step != step:
            self.fail(f"seq {seq}: a chunk the scripted model never streamed: {data['chunk']}")
            return
        # K14: collect every differing chunk of this stream; the first entry that is not one
        # of its chunks (or the end of the reply) reports them all at once (report_chunks).
        self._chunk_step = f"turn {record.number} step {step}"
        # The scripted model sleeps CHUNK_DELAY virtual seconds before every chunk.
        due = record.stream_time + round(CHUNK_DELAY * 1000)
        if record.timed:
            self._saw("K14 a chunk every virtual second")
        if record.timed and self._time != due:
            self.fail(
                f"seq {seq}: chunk {index + 1} of turn {record.number} step {step} has time "
                f"{self._time}; the scripted model streams it {round(CHUNK_DELAY * 1000)} ms after "
                f"the step's start or its previous chunk, at {due} "
                "(spec/harness.md §The world, precisely: the event clock)"
            )
        record.stream_time = self._time
        if index >= len(expected):
            self._chunk_diffs.append(
                f"seq {seq}: chunk {index + 1} is {_json(data['chunk'])}; the scripted model "
                f"streams only {len(expected)}"
            )
        elif data["chunk"] != expected[index]:
            self._chunk_diffs.append(
                f"seq {seq}: chunk {index + 1} is {_json(data['chunk'])}; the scripted model "
                f"streams {_json(expected[index])}"
            )
        record.chunks += 1
        chunk = data["chunk"]
        if chunk.get("type") == "text-delta":
            record.text += str(chunk.get("text", ""))
        elif chunk.get("type") == "tool-call":
            record.calls.append(dict(chunk))
        elif chunk.get("type") == "finish":
            record.finish = chunk.get("reason")

    def _on_assistant_message(self, data: Mapping[str, Any], seq: int) -> None:
        """K14: the message a step's stream leaves, from the chunks it logged: id
        ``a-<turn>-<step>``; after a cancel or an ``error`` finish only the visible text,
        ``interrupted``; after ``max-tokens`` the text only; else the text and one
        ``tool-call`` block per call, in stream order."""
        self.report_chunks()
        record = self.turns[data["turn"]]
        step = data["step"]
        if record.open_step != step or record.message:
            self.fail(
                f"seq {seq}: an assistant/message for step {step}, which is not open or "
                "already has one"
            )
            return
        record.message = True
        text = [{"type": "text", "text": record.text}] if record.text else []
        cut = record.cut
        if cut and not record.text.strip():
            self.fail(
                f"seq {seq}: turn {record.number} step {step} logged an assistant/message "
                "although no visible text streamed before its stream was cut (K14: then no "
                "message is written)"
            )
            return
        if not cut and record.finish is None:
            self.fail(
                f"seq {seq}: turn {record.number} step {step} logged its assistant/message "
                "before the stream's finish chunk, with no cancel (K14)"
            )
            return
        self._saw(
            "K14 the interrupted message of a cut stream"
            if cut
            else "K14 the message of a finished step"
        )
        content = text if cut or record.finish == "max-tokens" else [*text, *record.calls]
        want = {"id": f"a-{record.number}-{step}", "content": content}
        got = (data["message"], bool(data.get("interrupted", False)))
        if got != (want, cut):
            self.fail(
                f"seq {seq}: turn {record.number} step {step}'s assistant/message is "
                f"{_json(got[0])}{' interrupted' if got[1] else ''}; from the chunks it logged "
                f"it must be {_json(want)}{' interrupted' if cut else ''} (K14)"
            )

    def _missing_message(self, record: TurnRecord, step: int, seq: int) -> None:
        """At step/end: a step whose stream left visible text, or finished without a cut,
        logged its assistant/message (K14)."""
        if record.message:
            return
        cut = record.cut
        if (cut and record.text.strip()) or (not cut and record.finish is not None):
            what = (
                "the visible text of its cut stream, as an interrupted message"
                if cut
                else "its message"
            )
            self.fail(
                f"seq {seq}: turn {record.number} step {step} ended without an "
                f"assistant/message: it must keep {what} (K14)"
            )

    def report_chunks(self) -> None:
        """Fail with every differing chunk of the stream just logged, if any (K14)."""
        diffs, self._chunk_diffs = self._chunk_diffs, []
        if diffs:
            self.fail(
                f"the chunks of {self._chunk_step} differ from what the scripted model streams "
                f"(K14; spec/harness.md §The scripted world), {len(diffs)} of them:\n  "
                + "\n  ".join(diffs)
            )

    def _on_approval_asked(self, data: Mapping[str, Any], seq: int) -> None:
        record = self.turns[data["turn"]]
        record.approvals[data["id"]] = data["callId"]
        self._not_after_cancel(record, "asks for the approval of", data["callId"], seq)
        self._grouped(record, data["callId"], seq)

    def _not_after_cancel(self, record: TurnRecord, what: str, call: str, seq: int) -> None:
        """K6: the loop checks the cancel before each call is prepared (its approval, then its
        dispatch), so once a cancel reached the turn no call is asked for or dispatched; every
        call not yet prepared gets ``ABORTED_BEFORE_DISPATCH`` (K11, K18)."""
        if record.hit and not self.repairing:
            self.fail(
                f"seq {seq}: turn {record.number} {what} {call} after a cancel reached it (K6: "
                "the cancel is checked before each call is prepared; the call gets "
                "ABORTED_BEFORE_DISPATCH without approval/asked or tool/call)"
            )

    def _grouped(self, record: TurnRecord, call: str, seq: int) -> None:
        """K15: calls are prepared (asked, with the world's approver) group by group: a call
        of a non-parallel tool is a group of its own, so it starts only once every earlier
        call of its step has its result, and so does any call after it."""
        ids = [c.get("id") for c in record.calls]
        if call not in ids or self.repairing:
            return
        index = ids.index(call)
        if index == 0:
            return
        parallel = [c.get("name") in PARALLEL_TOOLS for c in record.calls[index - 1 : index + 1]]
        if all(parallel):
            return  # the same group: their bodies overlap
        self._saw("K15 a non-parallel call waits for the calls before it")
        waiting = [c for c in ids[:index] if c not in record.answered]
        if waiting:
            name = record.calls[index].get("name")
            self.fail(
                f"seq {seq}: {call} ({name}) is prepared while {waiting} of the same step have no "
                "result (K15: a call of a non-parallel tool is a group of its own; groups run "
                "one after another)"
            )

    def _on_approval_decided(self, data: Mapping[str, Any], seq: int) -> None:
        record = self.turns[data["turn"]]
        call = record.approvals.get(data["id"])
        unanswered = (
            record.hit
            and not self.repairing
            and call is not None
            and ("approval", call) not in self._decided
        )
        if unanswered:
            self._saw("K11 an unanswered approval ends cancelled")
        if unanswered and data["outcome"] != "cancelled":
            # K11: once a cancel reached the turn, an approval the driver did not answer can
            # only end cancelled (the approver is cancelled at its seam or while it waits).
            self.fail(
                f"seq {seq}: approval {data['id']} of {call} decided {data['outcome']!r} after a "
                f"cancel reached turn {record.number}, with no decision from the driver; it "
                "can only be 'cancelled' (K11)"
            )
        if call is not None and data["outcome"] == "allowed":
            record.allowed.add(call)

    def _on_tool_call(self, data: Mapping[str, Any], seq: int) -> None:
        record = self.turns[data["turn"]]
        record.dispatched.append(data["callId"])
        self._not_after_cancel(record, "dispatches", data["callId"], seq)
        if data["callId"] not in record.allowed:
            self.fail(
                f"seq {seq}: tool/call {data['callId']} without an allowed approval bracket "
                "(K11: with an approver every dispatchable call is asked, then decided, "
                "before its tool/call)"
            )

    def _on_tool_output(self, data: Mapping[str, Any], seq: int) -> None:
        record = self.turns.get(data["turn"])
        if record is not None and record.unstarted == data["callId"]:
            self.fail(
                f"seq {seq}: tool/output of {data['callId']}, whose turn was cancelled in the "
                "flush after its tool/call: its body ran (K17: it must not start; the cancel is "
                "checked when the flush returns)"
            )

    def _on_tool_result(self, data: Mapping[str, Any], seq: int) -> None:
        """A result that follows a driver's decision, in a turn no cancel reached, is the one
        spec/harness.md §The scripted world gives (K16, K18): ``finish`` the job's text,
        ``fail`` ``TOOL_FAILED`` with the runtime's failure text, an approval's ``deny``
        ``DENIED``. Placeholders are repair's (checked against ``repair_closers``)."""
        call = data["callId"]
        answered = self.turns.get(data["turn"])
        if answered is not None:
            if not self.repairing:
                self._in_request_order(answered, call, seq)
            answered.answered.add(call)
        tool = self._decided.pop(("tool", call), None)
        approval = self._decided.pop(("approval", call), None)
        record = self.turns.get(data["turn"])
        code = (data.get("error") or {}).get("code")
        got = (data["isError"], code, data["content"])
        if record is not None and record.unstarted == call and not self.repairing:
            name = next((c.get("name") for c in record.calls if c.get("id") == call), "?")
            want_unstarted = (True, "ABORTED", unstarted_text(str(name)))
            if got != want_unstarted:
                self.fail(
                    f"seq {seq}: the result of {call}, cancelled in the flush after its "
                    f"tool/call, is isError={got[0]}, code {got[1]!r}, content {got[2]!r}; "
                    f"expected isError=True, code 'ABORTED', content {want_unstarted[2]!r} (K17: "
                    "its body never started; spec/harness.md §The scripted world)"
                )
        if self.repairing or record is None or record.hit:
            return
        want: tuple[bool, str | None, str] | None = None
        if approval == "deny":
            want = (True, "DENIED", "The job call was not approved, so it did not run.")
        elif tool == "finish":
            want = (False, None, job_done_text(call))
        elif tool == "fail":
            want = (True, "TOOL_FAILED", job_failed_text(call))
        if want is not None:
            self._saw(
                "K18 the result of a denied call"
                if approval == "deny"
                else "K16 the result of a finished job"
                if tool == "finish"
                else "K18 the result of a failed job"
            )
        if want is not None and got != want:
            decision = f"approval {approval}" if approval == "deny" else f"tool {tool}"
            self.fail(
                f"seq {seq}: the result of {call} after `{decision}` is isError={got[0]}, "
                f"code {got[1]!r}, content {got[2]!r}; expected isError={want[0]}, code "
                f"{want[1]!r}, content {want[2]!r} "
                "(K16, K18; spec/harness.md §The scripted world)"
            )

    def _in_request_order(self, record: TurnRecord, call: str, seq: int) -> None:
        """K16: a step's results are committed in request order, each call's only once every
        earlier call has its own, however the bodies finish (a later parallel call that
        finishes first waits). Counted where the order is at stake: a call in the same
        parallel group as the call before it, so its body may finish first."""
        ids = [c.get("id") for c in record.calls]
        if call not in ids:
            return
        index = ids.index(call)
        waiting = [c for c in ids[:index] if c not in record.answered]
        if index and all(
            c.get("name") in PARALLEL_TOOLS for c in record.calls[index - 1 : index + 1]
        ):
            self._saw("K16 results are committed in request order")
        if waiting:
            self.fail(
                f"seq {seq}: the tool/result of {call} is committed before the results of "
                f"{waiting}, requested before it (K16: results are committed in request order; "
                "a later call that finishes first waits for the earlier ones)"
            )

    def _on_step_end(self, data: Mapping[str, Any], seq: int) -> None:
        record = self.turns[data["turn"]]
        if record.entering and not self.repairing:
            self.fail(f"seq {seq}: step ended without entering {record.entering}")
        record.open_step = None
        if not self.repairing:
            self._missing_message(record, data["step"], seq)
        if record.hit or self.repairing:
            return
        entry = plan_entry(self.plan, record.number, data["step"])
        expected = expected_chunks(entry, record.number, data["step"])
        self._saw("K14 the chunks of a finished step")
        if record.chunks != len(expected):
            self.fail(
                f"seq {seq}: turn {record.number} step {data['step']} ended after logging "
                f"{record.chunks} of the {len(expected)} chunks its model streamed, although "
                f"no cancel reached it (K14: every chunk is logged, the finish included; "
                f"missing {expected[record.chunks :]})"
            )
        kind = entry_kind(entry)
        if kind == "error":
            record.error = True
            return
        record.ends = kind
        record.cut_off = record.cut_off or kind == "max-tokens"
        record.more_steps = not (record.ends is not None and not self.queues["next-step"])
        if record.ends is not None and self.queues["next-step"]:
            self._saw("K12 next-step input owes a step")

    def _on_turn_end(self, data: Mapping[str, Any], seq: int) -> None:
        turn = data["turn"]
        kind = data["reason"]["kind"]
        record = self.turns[turn]
        if kind == "interrupted":
            if not self.repairing:
                self.fail(f"seq {seq}: turn {turn} ended interrupted outside crash repair")
        elif self.repairing:
            self.fail(f"seq {seq}: repair closed turn {turn} as {kind}, not interrupted")
        elif record.hit:
            self._saw("K19 a cancelled turn ends aborted")
            if kind != "aborted":
                self.fail(f"seq {seq}: turn {turn} was cancelled but ended {kind} (K19)")
        elif kind == "aborted":
            self.fail(f"seq {seq}: turn {turn} ended aborted but no cancel reached it")
        else:
            if kind in ("completed", "max-tokens") and record.steps:
                self._saw("K10 the stopping hook runs when a step ended the turn")
                if record.stopping != record.steps:
                    self.fail(
                        f"seq {seq}: turn {turn} ended {kind} after step {record.steps} without "
                        "the turn_stopping hook (K10: it runs when a step ended the turn)"
                    )
            elif record.error:
                self._saw("K10 no stopping hook after a model error")
            want = "error" if record.error else "max-tokens" if record.cut_off else record.ends
            if record.steps == 0 or (not record.error and record.more_steps):
                self.fail(f"seq {seq}: turn {turn} ended {kind} while a step was still owed")
            elif kind != want:
                self.fail(f"seq {seq}: turn {turn} ended {kind}, the plan says {want}")
            if want == "max-tokens":
                self._saw(
                    "K12 max-tokens sticks across a later step"
                    if record.steps > 1 and record.ends != "max-tokens"
                    else "K12 max-tokens ends the turn"
                )
        record.ended = kind
        if record.steps or (record.claimed and kind != "completed"):
            self.dropped_unrun = False  # C4: the turn accounts for what it consumed
        self.ends.append((turn, kind))
        self.open_turn = None
        self._last_end = (turn, kind)
        if self.repairing:
            return
        # K7: the hand-off; an aborted turn ends the run, otherwise the next controller waits.
        if kind == "aborted":
            self.controller = Controller.NONE
        else:
            self._handed_off = True
            self.controller = Controller.UNBOUND
            self.controller_cancelled = False
            self.after_abort = False
            self.abort_cause = None
        self.controller_turn = None

    # -- repair --------------------------------------------------------------------------------

    def apply_closers(self, closers: Iterable[Mapping[str, Any]]) -> None:
        """Check the events a cold open appended: they only close the open turn."""
        self.report_chunks()
        if self.open_turn is not None:
            self._saw("R3 repair closes the open turn")
        self.repairing = True
        try:
            for event in closers:
                if event["type"] not in ("tool/result", "step/end", "turn/end"):
                    self.fail(f"repair appended {event['type']}")
                self._event(event)
            if self.open_turn is not None:
                self.fail(f"turn {self.open_turn} is still open after repair")
        finally:
            self.repairing = False
        self._last_end = None
        self.reopened()

    # -- quiescent checks ----------------------------------------------------------------------

    def check_quiescent(self, state: Mapping[str, Any], *, held: bool = False) -> None:
        """The world settled (or, ``held``, replied right after a cancel without settling,
        spec/harness.md §Requests): compare what it reports with what must hold now."""
        self.report_chunks()
        if self.expect_running:
            self.fail("a latched wake with pending work did not start a new run (K8)")
        if self._send is not None or self._cancel is not None:
            self.fail("an action did not complete")
        status = state["status"]
        if status != "closed" and status != self.status:
            self.fail(f"the agent is {status}, the model says {self.status}")
        inbox = state["inbox"]
        for queue in QUEUES:
            if status != "closed" and list(inbox[queue]) != self.queues[queue]:
                self.fail(f"{queue} holds {inbox[queue]}, the model says {self.queues[queue]}")
        controller = state["controller"]
        if status == Status.RUNNING:
            if self.controller is not Controller.BOUND:
                self.fail(
                    "the agent is running but no turn is: a woken controller never "
                    "started its turn and was not prevented (K2)"
                )
            elif self.turns[self.controller_turn or 0].hit and not held:
                self.fail(f"turn {self.controller_turn} was cancelled but has not ended")
            if controller is None or controller["turn"] != self.controller_turn:
                self.fail(
                    f"the live controller is {controller}, the model says turn "
                    f"{self.controller_turn}"
                )
            elif controller["cancelled"] is not self.controller_cancelled:
                self.fail(
                    f"the live controller says cancelled={controller['cancelled']}, the model "
                    f"says {self.controller_cancelled} (K3)"
                )
        elif status == Status.IDLE:
            if controller is not None:
                self.fail(f"an idle agent holds a live controller {controller} (K7)")
            waiting = [m for q in QUEUES for m in self.queues[q] if m not in self.parked]
            if waiting:
                self.fail(f"the agent is idle with {waiting} queued: nothing parked them (K21)")


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
