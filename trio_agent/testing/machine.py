"""The Hypothesis state machine that drives an implementation through an adapter.

:class:`HarnessMachine` sends protocol requests (spec/harness.md) through an
:class:`~trio_agent.testing.protocol.Adapter` and checks, after every rule:

* the world's own monitors found nothing (no tool body or model stream alive at its step's or
  turn's end, no result while its body runs) and the agent did not fail;
* the :class:`~trio_agent.testing.refmodel.ReferenceModel` accepts every journal entry and the
  settled state (queues, status, live controller);
* the durable bytes are a valid prefix of the in-memory log, without a torn line, holding every
  event a flush acknowledged and exactly the events the journal's ``write`` entries account
  for; and, entry by entry, what happened had the durability it needed
  (:class:`~trio_agent.testing.durability.DerivedDurability`: a body ran only once its
  ``tool/call`` was written, K17; the run went on after a ``turn/end`` only once it was
  written, or after an ``AgentError``, K13; at the end of a settle every event stamped before
  the clock's reading is written, its batching window having expired, persistence.md §2); the
  consumed-work fold agrees with the model's drop record;

and after every crash (now, or at an armed point, optionally tearing the last line):

* the frozen bytes are a valid prefix, unchanged, with every acknowledged event and every
  event a reported batch wrote; a cold open
  of a *copy* of them in a fresh directory keeps that prefix and appends exactly the repair
  closers (placeholders saying ``TOOL_OUTCOME_UNKNOWN`` exactly for durable ``tool/call``\\s),
  giving a balanced log; ``interrupted`` only ever comes from there.

One rule cancels with ``settle: false``: the reply comes before the cancelled run unwinds,
so the next rule acts on a live, cancelled controller (K3's second cancel, K8's steer after
an abort and its latched wake); the driver checks that such a reply really did not settle.

Use :func:`machine_for` to bind the machine to an adapter factory. Coverage figures (examples
run, crash and cancel points hit) accumulate in :data:`COVERAGE` and :data:`EXAMPLES`.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import tempfile
from collections import Counter, deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar, Final

import hypothesis.internal.conjecture.engine as hypothesis_engine
import hypothesis.internal.conjecture.providers as hypothesis_providers
import orjson
from hypothesis import HealthCheck, Phase, seed as hypothesis_seed, settings, strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from .checks import (
    DurableLog,
    HarnessViolation,
    balanced_ends,
    check_crash_bytes,
    check_live_bytes,
    check_reopened,
    dropped_unrun,
    tear_last_line,
)
from .durability import DURABILITY_RULES, DerivedDurability
from .plan import MENU_NAMES
from .protocol import (
    CANCEL_ONLY_POINTS,
    CRASH_POINTS,
    POINTS,
    Adapter,
    AdapterError,
    NoReply,
    Reply,
    RunStopped,
    shown_line,
)
from .refmodel import MODEL_RULES, ModelViolation, ReferenceModel
from .wire import check_request

__all__ = [
    "COVERAGE",
    "EXAMPLES",
    "RULES",
    "RULE_NAMES",
    "RULE_SCENARIOS",
    "SCENARIO_FAILED",
    "TRAP_KINDS",
    "HarnessMachine",
    "machine_for",
    "machine_settings",
    "run_machine",
    "run_scenarios",
    "shrinking_bounded_by_work",
    "without_local_constants",
]

#: What a trap does at its point (spec/harness.md §Named points and traps).
TRAP_KINDS: Final = ("crash", "cancel", "disk")
#: ``(profile, "<kind>@<point>")`` -> how many times it happened (``kind`` of
#: :data:`TRAP_KINDS`; a requested crash or cancel counts at the ``where`` it found).
COVERAGE: Counter[tuple[str, str]] = Counter()
#: Every rule whose checks the machine counts (the reference model's, then the durability
#: derived from the journal): a rule no example of a run exercised was not tested by it.
RULE_NAMES: Final = (*MODEL_RULES, *DURABILITY_RULES)
#: ``(profile, rule)`` -> how many times a check of that rule had something to decide.
RULES: Counter[tuple[str, str]] = Counter()
#: profile name -> examples (machine instances) run.
EXAMPLES: Counter[str] = Counter()

#: Lines of wire traffic kept for a failure report.
TRANSCRIPT_LINES: Final = 40


def _compact(value: Any) -> str:
    # orjson: the values came off the wire through it (or go onto it), and the transcript
    # takes every request, entry and reply of every example, though a report shows its tail
    text = orjson.dumps(value).decode()
    return text if len(text) <= 400 else text[:400] + "..."


causes = st.sampled_from(["user", "parent"])
tears = st.none() | st.integers(min_value=0, max_value=1 << 16)
actions = st.one_of(
    st.builds(lambda w: {"kind": "crash", "after_write": w}, st.booleans()),
    st.builds(lambda c, k: {"kind": "cancel", "cause": c, "keep_inbox": k}, causes, st.booleans()),
    st.builds(lambda n: {"kind": "disk", "fail": n}, st.integers(min_value=1, max_value=2)),
)


class HarnessMachine(RuleBasedStateMachine):
    """See the module docstring. Subclass it through :func:`machine_for`."""

    adapter_factory: ClassVar[Callable[[], Adapter]]
    profile: ClassVar[str] = "default"
    #: The rules of the most recent run (after a failure: the shrunk counterexample).
    last_trace: ClassVar[list[str]] = []
    #: The last :data:`TRANSCRIPT_LINES` lines of the most recent run's wire traffic:
    #: ``> request``, ``  journal entry``, ``< reply`` (the journal tail of a failure); a
    #: request the adapter gave up on (:class:`AdapterError`) ends with the entries it did
    #: receive and ``!! offending line: '...'`` (the raw line that broke the protocol) or
    #: ``!! no reply: ...`` (the implementation exited or went silent).
    last_transcript: ClassVar[deque[str]] = deque(maxlen=1)

    def __init__(self) -> None:
        super().__init__()
        self.adapter = type(self).adapter_factory()
        self.tmp = Path(tempfile.mkdtemp(prefix="trio-agent-harness-"))
        self.trace: list[str] = []
        type(self).last_trace = self.trace
        self.transcript: deque[str] = deque(maxlen=TRANSCRIPT_LINES)
        type(self).last_transcript = self.transcript
        self.plan: list[str] = []
        self.incarnation = 0
        self.log_path = self.tmp
        self.model = ReferenceModel([])
        self.memory: list[dict[str, Any]] = []
        self.state: dict[str, Any] | None = None
        self.acked = 0
        self.durable = DurableLog()
        self.derived = DerivedDurability()
        #: The world's virtual clock, in ms since its start, as the requests moved it.
        self.clock_ms = 0
        self.armed: dict[str, Any] | None = None
        #: ``"<kind>@<point>"`` of every trap that fired, in order.
        self.fired: list[str] = []
        self.sent = 0
        EXAMPLES[type(self).profile] += 1

    def teardown(self) -> None:
        self._tally()
        try:
            self.adapter.close()  # raises when the implementation does not exit cleanly
        except NoReply as exc:
            raise RunStopped(exc) from None  # not shrunk: each attempt would hang again
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # -- plumbing ------------------------------------------------------------------------------

    def _cover(self, label: str) -> None:
        COVERAGE[(type(self).profile, label)] += 1

    def _tally(self) -> None:
        """Add what the current model and durability check exercised to :data:`RULES` (before
        they are replaced, and at the end)."""
        profile = type(self).profile
        for counts in (self.model.exercised, self.derived.exercised):
            for name, n in counts.items():
                RULES[(profile, name)] += n
            counts.clear()

    def _note(self, text: str) -> None:
        self.trace.append(text)

    def _fresh_log(self) -> Path:
        self.incarnation += 1
        path = self.tmp / f"w{self.incarnation}" / "s" / "session.jsonl"
        path.parent.mkdir(parents=True)
        return path

    def _send(self, message: dict[str, Any]) -> Reply:
        check_request(message)
        self.transcript.append("> " + _compact(message))
        try:
            reply = self.adapter.request(message)
        except AdapterError as exc:
            # The request never got its reply: keep what it did receive, so the report ends
            # with the entries before the break and the line that broke the protocol.
            for entry in exc.journal:
                self.transcript.append("  " + _compact(entry))
            if exc.line is not None:
                self.transcript.append("!! offending line: " + shown_line(exc.line))
            else:
                why = (str(exc).splitlines() or [""])[0].rstrip(":")
                self.transcript.append("!! no reply: " + why)
            if isinstance(exc, NoReply):
                raise RunStopped(exc) from None  # not shrunk: each attempt would hang again
            raise
        for entry in reply.get("journal", ()):
            self.transcript.append("  " + _compact(entry))
        # The reply in full, its state included: the report shows what the checks compared.
        self.transcript.append(
            "< " + orjson.dumps({k: v for k, v in reply.items() if k != "journal"}).decode()
        )
        if not reply.get("ok") and not reply.get("crashed"):
            # Every request the machine sends is valid in the state the world reported.
            raise HarnessViolation(f"{message['op']} refused: {reply.get('error')}")
        return reply

    def _journal(self, reply: Reply) -> list[dict[str, Any]] | None:
        """Feed the journal to the model; return the events of an ``opened`` entry."""
        opened = None
        for entry in reply.get("journal", ()):
            k = entry["k"]
            if k == "violation" or k == "failure":
                raise HarnessViolation(f"the world reports: {entry['text']}")
            if k == "opened":
                opened = list(entry["events"])
                continue
            if k == "fire":
                label = f"{entry['action']['kind']}@{entry['point']}"
                self.fired.append(label)
                self._cover(label)
                self.armed = None
            if k == "act" and entry["op"] == "cancel" and entry["phase"] == "begin":
                where = entry["where"]
                if where.startswith("now:"):  # a trap's cancel is counted by its fire
                    self._cover(f"cancel@{where[4:]}")
            if k == "event":
                self.memory.append(entry["event"])
            self.derived.feed(entry)
            try:
                self.model.apply(entry)
            except ModelViolation as exc:
                raise HarnessViolation(f"reference model: {exc}") from None
        return opened

    def _request(self, message: dict[str, Any]) -> Reply:
        tear = self.armed.get("tear") if self.armed else None
        armed = self.armed
        reply = self._send(message)
        self._as_sent(message, armed, reply)
        self._times(message, reply)
        self._journal(reply)
        held = message["op"] == "cancel" and message.get("settle") is False
        if reply.get("crashed"):
            if held:
                raise HarnessViolation("the implementation died in a cancel that must not settle")
            self._recover(tear)
        else:
            if held:
                self._check_held(reply)
            self._settled(reply["state"], held=held)
        return reply

    def _as_sent(self, message: dict[str, Any], armed: dict[str, Any] | None, reply: Reply) -> None:
        """The journal is the port's word; what it says was asked must be what the driver
        sent. A requested cancel's ``act cancel begin`` carries the request's ``cause`` and
        ``keep_inbox`` (K4, K5); a trap's ``fire`` carries the armed point and action, and
        its cancel the armed ``cause`` and ``keep_inbox``. Otherwise a port that misreads a
        request and journals what it understood would be checked against its own reading."""
        for entry in reply.get("journal", ()):
            sent = None if armed is None else (armed["point"], armed["action"])
            if entry["k"] == "fire" and (entry["point"], entry["action"]) != sent:
                raise HarnessViolation(
                    f"a trap fired at {entry['point']!r} with {entry['action']}, but the "
                    f"driver armed {sent}"
                )
            if entry["k"] != "act" or entry["op"] != "cancel" or entry["phase"] != "begin":
                continue
            where = entry["where"]
            asked: dict[str, Any] | None = None
            if where.startswith("now:"):
                asked = message if message["op"] == "cancel" else None
            elif armed is not None and armed["point"] == where:
                asked = armed["action"]
            if asked is None or asked.get("kind", "cancel") != "cancel":
                raise HarnessViolation(
                    f"a cancel at {where!r} that no request and no armed trap asked for"
                )
            got = (entry["cause"], entry["keep_inbox"])
            if got != (asked["cause"], asked["keep_inbox"]):
                raise HarnessViolation(
                    f"K5: the driver asked to cancel with cause {asked['cause']!r}, keep_inbox "
                    f"{asked['keep_inbox']}; the journal says cause {got[0]!r}, keep_inbox "
                    f"{got[1]} (the request was read wrongly)"
                )

    def _times(self, message: dict[str, Any], reply: Reply) -> None:
        """Every event is stamped with the virtual clock when it was appended, or with the
        previous event's time if that is later (the session's clamp, persistence.md §2; a
        reopened log keeps its old times): spec/harness.md §The world, precisely, the event
        clock. The clock stands still but for ``advance``, which moves it ``ticks`` times and
        settles after each move: so an event of an ``advance`` has the time of one of its
        ticks, in order, and never the time the world was already settled at; an event of any
        other request has the current time."""
        if message["op"] == "advance":
            step = round(float(message["seconds"]) * 1000)
            allowed = [self.clock_ms + k * step for k in range(1, int(message["ticks"]) + 1)]
        else:
            allowed = [self.clock_ms]
        previous = self.memory[-1]["time"] if self.memory else 0
        tick = 0  # the earliest tick the next event may be stamped with
        for entry in reply.get("journal", ()):
            if entry["k"] != "event":
                continue
            event = entry["event"]
            stamps = [max(t, previous) for t in allowed[tick:]]
            if event["time"] not in stamps:
                raise HarnessViolation(
                    f"seq {event['seq']}: time {event['time']}, but the world's virtual clock "
                    f"read {', '.join(map(str, allowed[tick:]))} ms when the {message['op']} "
                    f"appended it, and the previous event's time is {previous} (spec/harness.md "
                    "§The world, precisely: the event clock)"
                )
            tick += stamps.index(event["time"])
            previous = event["time"]
        if message["op"] == "advance" and not reply.get("crashed"):
            self.clock_ms = allowed[-1]

    def _check_held(self, reply: Reply) -> None:
        """A cancel with ``settle: false`` replies right after ``agent.cancel`` returned: its
        journal ends with the cancel's ``end`` entry, and a hit controller is still live,
        cancelled, its run not yet unwound."""
        journal = reply.get("journal", ())
        if not journal or journal[-1]["k"] != "act" or journal[-1]["op"] != "cancel":
            last = journal[-1] if journal else None
            raise HarnessViolation(
                f"a cancel with settle: false went on after the cancel returned (last entry "
                f"{_compact(last)}): it must reply before the cancelled run unwinds"
            )
        state = reply["state"]
        controller = state["controller"]
        if reply["result"]["hit"] and (
            state["status"] != "running" or controller is None or not controller["cancelled"]
        ):
            raise HarnessViolation(
                f"a cancel with settle: false hit, but the state says status "
                f"{state['status']}, controller {controller}: it must reply before the "
                "cancelled run unwinds"
            )

    def _settled(self, state: dict[str, Any], *, held: bool = False) -> None:
        self.state = state
        if state["violations"] or state["failure"]:
            raise HarnessViolation(f"the world reports: {state['violations'] or state['failure']}")
        if state["events"] != len(self.memory):
            raise HarnessViolation(
                f"the world has {state['events']} events, its journal reported {len(self.memory)}"
            )
        try:
            self.model.check_quiescent(state, held=held)
        except ModelViolation as exc:
            raise HarnessViolation(f"reference model: {exc}") from None
        if state["acked"] < self.acked:
            raise HarnessViolation(
                f"acknowledged events went from {self.acked} to {state['acked']}"
            )
        self.acked = state["acked"]
        on_disk = self.durable.check(self.log_path.read_bytes(), self.memory, self.acked)
        self.derived.check_live(on_disk)
        if not held:  # a held reply did not settle: its due writes come with the next request
            self.derived.check_window(self.clock_ms)
        if dropped_unrun(self.memory) is not self.model.dropped_unrun:
            raise HarnessViolation(
                f"fold_consumed_work says dropped_unrun={not self.model.dropped_unrun}, "
                f"the model's drop record says {self.model.dropped_unrun}"
            )

    def _journal_opening(self, reply: Reply) -> list[dict[str, Any]]:
        journal = list(reply.get("journal", ()))
        if not journal or journal[0]["k"] != "opened":
            raise HarnessViolation("start did not report the opened log first")
        return list(journal[0]["events"])

    def _recover(self, tear: int | None) -> None:
        """A crash happened: freeze, tear, copy, cold-open, check the repair."""
        try:
            self.model.report_chunks()  # the stream the crash cut, before the model is replayed
        except ModelViolation as exc:
            raise HarnessViolation(f"reference model: {exc}") from None
        data = self.adapter.durable_bytes(str(self.log_path))
        data = tear_last_line(data, max(self.acked, self.derived.written), tear)
        prefix = check_crash_bytes(data, self.memory, self.acked)
        self.derived.check_crash(len(prefix))
        self.clock_ms = 0  # a new world: its clock starts at 0
        path = self._fresh_log()
        path.write_bytes(data)
        reply = self._send({"op": "start", "log": str(path), "create": False, "plan": self.plan})
        if reply.get("crashed"):
            raise HarnessViolation("the implementation died while reopening the session")
        opened = self._journal_opening(reply)
        closers = check_reopened(prefix, opened)
        balanced_ends(opened)
        self._tally()
        self.model = ReferenceModel.replay(self.plan, prefix)
        try:
            self.model.apply_closers(closers)
        except ModelViolation as exc:
            raise HarnessViolation(f"reference model: {exc}") from None
        self.log_path = path
        self.durable = DurableLog()
        self.derived = DerivedDurability(len(opened))
        self.memory = list(opened)
        self.acked = len(opened)
        self.armed = None
        rest = dict(reply)
        rest["journal"] = reply["journal"][1:]
        self._journal(rest)
        self._settled(reply["state"])

    def _alive(self) -> bool:
        return self.state is not None and self.state["status"] in ("idle", "running")

    def _running(self) -> bool:
        return self.state is not None and self.state["status"] == "running"

    def _queued(self) -> bool:
        return self.state is not None and any(self.state["inbox"].values())

    # -- rules ---------------------------------------------------------------------------------

    @initialize(plan=st.lists(st.sampled_from(MENU_NAMES), min_size=1, max_size=3))
    def begin(self, plan: list[str]) -> None:
        self.plan = plan
        self.model = ReferenceModel(plan)
        self._note(f"begin(plan={plan})")
        path = self._fresh_log()
        self.log_path = path
        reply = self._send({"op": "start", "log": str(path), "create": True, "plan": plan})
        opened = self._journal_opening(reply)
        if opened:
            raise HarnessViolation("a new session is not empty")
        self.memory = []
        rest = dict(reply)
        rest["journal"] = reply["journal"][1:]
        self._journal(rest)
        self._settled(reply["state"])

    def _send_message(self, op: str) -> None:
        self.sent += 1
        self._note(f"{op}()")
        self._request({"op": op, "text": f"{op} {self.sent}"})

    @precondition(lambda self: self._alive())
    @rule()
    def followup(self) -> None:
        self._send_message("followup")

    @precondition(lambda self: self._alive())
    @rule()
    def steer(self) -> None:
        self._send_message("steer")

    @precondition(lambda self: self._alive())
    @rule()
    def inject(self) -> None:
        self._send_message("inject")

    @precondition(lambda self: self._alive())
    @rule(cause=causes, keep_inbox=st.booleans())
    def cancel(self, cause: str, keep_inbox: bool) -> None:
        self._note(f"cancel({cause}, keep_inbox={keep_inbox})")
        self._request({"op": "cancel", "cause": cause, "keep_inbox": keep_inbox})

    @precondition(lambda self: self._running())
    @rule(cause=causes, keep_inbox=st.booleans())
    def cancel_unsettled(self, cause: str, keep_inbox: bool) -> None:
        """Cancel and take the reply before the cancelled run unwinds (``settle: false``): the
        next rule acts on a live, cancelled controller (a steer after an abort, a second
        cancel, a latched wake)."""
        self._note(f"cancel({cause}, keep_inbox={keep_inbox}, settle=False)")
        self._request({"op": "cancel", "cause": cause, "keep_inbox": keep_inbox, "settle": False})

    @precondition(lambda self: self._alive() and self.armed is None)
    @rule(point=st.sampled_from(POINTS), action=actions, tear=tears)
    def arm(self, point: str, action: dict[str, Any], tear: int | None) -> None:
        self._arm(point, action, tear)

    def _arm(self, point: str, action: dict[str, Any], tear: int | None) -> None:
        if action["kind"] != "crash" or point != "flush":
            action = {k: v for k, v in action.items() if k != "after_write"} | (
                {"after_write": False} if action["kind"] == "crash" else {}
            )
        if point in CANCEL_ONLY_POINTS and action["kind"] != "cancel":
            action = {"kind": "cancel", "cause": "user", "keep_inbox": False}
        self._note(f"arm({point}, {action}" + (f", tear={tear})" if tear is not None else ")"))
        # Armed before the request: after a held cancel the trap can fire while the world
        # settles in the arm's own reply (its fire entry then disarms it, as any other).
        self.armed = {"point": point, "action": action, "tear": tear}
        self._request({"op": "arm", "point": point, "action": action})

    @precondition(lambda self: self._alive())
    @rule(ticks=st.integers(min_value=1, max_value=6))
    def advance(self, ticks: int) -> None:
        self._note(f"advance({ticks})")
        self._request({"op": "advance", "ticks": ticks, "seconds": 1.0})

    @precondition(lambda self: self._alive() and self.armed is None)
    @rule(point=st.sampled_from(CRASH_POINTS), action=actions, tear=tears)
    def provoke(self, point: str, action: dict[str, Any], tear: int | None) -> None:
        """Arm a trap, wake the agent if it is idle, and drive until the trap fires (or the
        agent is idle again, or a new approval waits, as :meth:`drive` stops): one rule that
        reaches a named point."""
        self._provoke(point, action, tear)

    def _provoke(
        self, point: str, action: dict[str, Any], tear: int | None, *, queue: bool = False
    ) -> None:
        """:meth:`provoke`; with ``queue``, a second ``followup`` after the wake, so that the
        running turn has work queued when the trap fires (shown as ``queued`` in the trace)."""
        before = len(self.trace)
        try:
            self._arm(point, action, tear)
            if self.state is not None and self.state["status"] == "idle" and self.armed:
                self._send_message("followup")
                if queue and self._alive():
                    self._send_message("followup")
                    self.trace[before] = self.trace[before][:-1] + ", queued)"
            self._drive(40, True, until_fired=True)
        finally:
            self.trace[before:] = [f"provoke{self.trace[before][3:]}"]

    @precondition(lambda self: self._alive() and self.armed is None)
    @rule(point=st.sampled_from(CANCEL_ONLY_POINTS), cause=causes, keep_inbox=st.booleans())
    def provoke_between(self, point: str, cause: str, keep_inbox: bool) -> None:
        """:meth:`provoke` at a point between seams, which takes only a cancel. A rule of its
        own, so the other points are drawn as often as before these existed. A cancel that
        clears (``keep_inbox`` false) that wakes the agent queues one more ``followup``
        first, so the clear has work to drop -- and, inside a session observer, a splice to
        be refused (K5)."""
        action = {"kind": "cancel", "cause": cause, "keep_inbox": keep_inbox}
        self._provoke(point, action, None, queue=not keep_inbox)

    @precondition(lambda self: self._alive() and self._running())
    @rule(ticks=st.integers(min_value=1, max_value=12), finish=st.booleans())
    def drive(self, ticks: int, finish: bool) -> None:
        """Move the running turn on: each tick answers a waiting approval (allow, or with
        ``finish`` false deny) or job (finish, or fail), else advances time by a second; stops
        early at a crash, at idle, or when an approval waits that was not waiting when it
        began."""
        self._note(f"drive({ticks}, {'finish' if finish else 'fail'})")
        self._drive(ticks, finish)

    def _drive(self, ticks: int, finish: bool, *, until_fired: bool = False) -> None:
        """:meth:`drive`; with ``until_fired``, also stop once the armed trap has fired.

        It answers only the approvals that were waiting when it began: one asked while it
        drives is left for the next rule, so that a cancel, a crash, a restart or a decision
        meets a waiting approval (K11) as often as anything else the rules draw. Answered in
        the tick it was asked, an approval was almost never still waiting when a rule began."""
        answerable = self.state["approvals"] if self.state is not None else 0
        for _ in range(ticks):
            state = self.state
            if state is None or state["status"] != "running" or state["approvals"] > answerable:
                return
            if until_fired and self.armed is None:
                return
            before = self.incarnation
            if state["approvals"]:
                answerable -= 1
                self._request({"op": "approval", "decision": "allow" if finish else "deny"})
            elif state["jobs"]:
                self._request({"op": "tool", "decision": "finish" if finish else "fail"})
            else:
                self._request({"op": "advance", "ticks": 1, "seconds": 1.0})
            if self.incarnation != before:
                return

    @precondition(lambda self: self._alive() and self.state is not None and self.state["jobs"])
    @rule(decision=st.sampled_from(["finish", "fail"]))
    def tool(self, decision: str) -> None:
        self._note(f"tool({decision})")
        self._request({"op": "tool", "decision": decision})

    @precondition(lambda self: self._alive() and self.state is not None and self.state["approvals"])
    @rule(decision=st.sampled_from(["allow", "deny"]))
    def approval(self, decision: str) -> None:
        self._note(f"approval({decision})")
        self._request({"op": "approval", "decision": decision})

    @precondition(lambda self: self._alive())
    @rule()
    def flush(self) -> None:
        self._note("flush()")
        self._request({"op": "flush"})

    @precondition(
        lambda self: self._alive() and self.state is not None and not self.state["disk_failures"]
    )
    @rule(fail=st.integers(min_value=1, max_value=2))
    def disk_full(self, fail: int) -> None:
        self._note(f"disk_full({fail})")
        self._request({"op": "disk", "fail": fail})

    @precondition(lambda self: self._alive() and (self._running() or self._queued()))
    @rule(tear=tears)
    def crash(self, tear: int | None) -> None:
        assert self.state is not None
        self._cover(f"crash@{self.state['where']}")
        self._note("crash(" + (f"tear={tear})" if tear is not None else ")"))
        self.transcript.append("(the driver kills the implementation: SIGKILL)")
        self.adapter.crash()
        self._recover(tear)

    def _may_leave_agent(self) -> bool:
        """The running agent may be left for another (``restart``, ``new_agent``): the world
        is alive, and no disk failure is pending or armed (leaving flushes)."""
        return (
            self._alive()
            and self.state is not None
            and not self.state["disk_failures"]
            and not (self.armed is not None and self.armed["action"]["kind"] == "disk")
        )

    @precondition(lambda self: self._may_leave_agent())
    @rule()
    def restart(self) -> None:
        """Graceful shutdown (K22), then a new agent on the same file."""
        self._note("restart()")
        tear = self.armed.get("tear") if self.armed else None
        reply = self._send({"op": "shutdown"})
        self._journal(reply)
        if reply.get("crashed"):  # an armed crash fired during the shutdown
            self._recover(tear)
            return
        state = reply["state"]
        if state["violations"] or state["failure"] or not reply["result"]["closed_ok"]:
            raise HarnessViolation(f"shutdown failed: {state['failure'] or state['violations']}")
        data = self.log_path.read_bytes()
        self.derived.check_live(check_live_bytes(data, self.memory, len(self.memory)))
        balanced_ends(self.memory)
        self.armed = None
        self.clock_ms = 0  # a new world on the same file
        reply = self._send(
            {"op": "start", "log": str(self.log_path), "create": False, "plan": self.plan}
        )
        opened = self._journal_opening(reply)
        if opened != self.memory:
            raise HarnessViolation("reopening a cleanly closed session changed its log")
        self._tally()
        self.derived = DerivedDurability(len(opened))
        self.model.reopened()
        rest = dict(reply)
        rest["journal"] = reply["journal"][1:]
        self._journal(rest)
        self._settled(reply["state"])

    @precondition(lambda self: self._may_leave_agent())
    @rule()
    def new_agent(self) -> None:
        """Leave the running agent and open a new one on the same, still open session (K24):
        a second concurrent agent is refused, the session is flushed on exit and not closed."""
        self._note("new_agent()")
        before = self.incarnation
        reply = self._request({"op": "new_agent"})
        if reply.get("crashed") or self.incarnation != before:
            return  # an armed crash fired while the agent was left: recovered as any crash
        if reply["result"]["second"] is None:
            raise HarnessViolation(
                "K24: a second agent was opened on the session while its agent still ran"
            )
        on_disk = check_live_bytes(self.log_path.read_bytes(), self.memory, 0)
        total = len(self.memory)
        if on_disk < total:
            raise HarnessViolation(
                f"K24: the agent was left (new_agent) with events {on_disk}..{total - 1} of the "
                f"session's {total} not on disk: leaving open_agent flushes the session"
            )
        balanced_ends(self.memory)


def machine_for(
    adapter_factory: Callable[[], Adapter], *, profile: str, name: str | None = None
) -> type[HarnessMachine]:
    """A :class:`HarnessMachine` subclass bound to ``adapter_factory``; run it with
    ``hypothesis.stateful.run_state_machine_as_test`` or through its ``TestCase``."""
    return type(
        name or f"HarnessMachine_{profile}",
        (HarnessMachine,),
        {
            "adapter_factory": staticmethod(adapter_factory),
            "profile": profile,
            "last_trace": [],
            "last_transcript": deque(maxlen=1),
        },
    )


def machine_settings(*, examples: int, steps: int) -> settings:
    """The settings of every machine run, the tests' and ``trio-agent harness``'s: a fixed
    budget of examples and steps, no deadline, no example database (a run is reproduced from
    its seed alone), the first bug only, no health checks (the data is the plan itself), and
    no ``explain`` phase: after shrinking, Hypothesis would replay the shrunk example many
    times more only to annotate the exception with which of its parts could vary, which no
    report here prints (the shrunk rules and the wire traffic are the report)."""
    return settings(
        phases=[phase for phase in Phase if phase is not Phase.explain],
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        report_multiple_bugs=False,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
    )


@contextlib.contextmanager
def shrinking_bounded_by_work(seconds: float | None = None) -> Iterator[None]:
    """Lift Hypothesis's wall-clock shrink limit (``MAX_SHRINKING_SECONDS``, default 300 s)
    for the block, around every machine run (the tests' and ``trio-agent harness``'s).

    On a slow or loaded machine that limit stops the shrinker early and leaves redundant
    rules, so the minimal example printed would depend on the machine's speed. Without it
    every shrink phase runs to its end, which Hypothesis bounds by work (its cap on
    successful shrinks). ``seconds`` puts a total of the porter's choosing back
    (``trio-agent harness --shrink-limit``: a slow port's shrink can take long); the tests
    never set one. The previous value is restored on the way out. If an upgrade renames the
    limit this raises instead of silently shrinking under a clock again.
    """
    previous = hypothesis_engine.MAX_SHRINKING_SECONDS  # AttributeError if renamed
    limit = math.inf if seconds is None else seconds
    hypothesis_engine.MAX_SHRINKING_SECONDS = limit  # type: ignore[assignment]
    try:
        yield
    finally:
        hypothesis_engine.MAX_SHRINKING_SECONDS = previous


@contextlib.contextmanager
def without_local_constants() -> Iterator[None]:
    """Keep the literals of the loaded modules out of the values Hypothesis draws, for the
    block, around every machine run (the tests' and ``trio-agent harness``'s), so that a seed
    gives the same examples in any process.

    Hypothesis now and then draws a "local constant" instead of a random value: a literal of
    any loaded module outside the standard library and site-packages, test files aside
    (``providers._get_local_constants``, read again whenever ``sys.modules`` grows). The
    examples of a seed would then depend on which modules the process had imported, on every
    literal edited in them, and on whether the package is installed editable or from a
    wheel. Inside the block that pool is empty (Hypothesis's own fixed constants stay); the
    cache of permitted constants, which holds the pool's values, is cleared on the way in and
    out. If an upgrade renames what this replaces it raises instead of silently letting the
    pool back in.
    """
    try:
        previous = hypothesis_providers._get_local_constants
        cache = hypothesis_providers.CONSTANTS_CACHE.cache
        from hypothesis.internal.constants_ast import Constants
    except (AttributeError, ImportError) as exc:
        raise RuntimeError(
            f"the harness cannot keep the literals of loaded modules out of its examples: {exc}"
            " (Hypothesis renamed what it replaces; install the version constraints.txt pins)"
        ) from exc
    empty = Constants()
    hypothesis_providers._get_local_constants = lambda: empty
    cache.clear()
    try:
        yield
    finally:
        hypothesis_providers._get_local_constants = previous
        cache.clear()


Step = tuple[str, dict[str, Any]]
_HIT: Final = {"cause": "user", "keep_inbox": False}
_KEEP: Final = {"cause": "parent", "keep_inbox": True}
_CANCEL_TRAP: Final = {"kind": "cancel", **_HIT}

#: Short fixed examples, one or more per rule, that every run plays before its random ones
#: (:func:`run_machine`): each gives the checks of the rules it names something to decide,
#: so every rule of :data:`RULE_NAMES` is exercised in every run, whatever the seed and the
#: budget. The random examples then vary the interleavings around them. Each step is a rule
#: of :class:`HarnessMachine` and its arguments, so a failing scenario reports like a shrunk
#: example.
RULE_SCENARIOS: Final[tuple[tuple[str, tuple[Step, ...]], ...]] = (
    (
        "K1, K9, K14, K15, K16, K17, K21: a sleep, then a job (a group of its own), finish; "
        "two parallel sleeps, the later one done first, answered in request order; the next "
        "turn follows",
        (
            ("begin", {"plan": ["pair", "race"]}),
            ("followup", {}),
            ("followup", {}),
            ("drive", {"ticks": 40, "finish": True}),
        ),
    ),
    (
        "K18: a failed job, a denied call",
        (
            ("begin", {"plan": ["job", "ask"]}),
            ("followup", {}),
            ("drive", {"ticks": 20, "finish": False}),  # fails the job; stops at the approval
            ("drive", {"ticks": 20, "finish": False}),  # denies it
        ),
    ),
    (
        "K3, K5, K19: a second cancel of a cancelled controller misses; an idle cancel",
        (
            ("begin", {"plan": ["talk"]}),
            ("followup", {}),
            ("inject", {}),
            ("cancel_unsettled", _HIT),
            ("cancel", _HIT),
            ("cancel", _HIT),
        ),
    ),
    (
        "K4, K5, K8: keep_inbox keeps the queue; a steer after the abort goes next-turn; the "
        "aborted turn names the cancel's cause",
        (
            ("begin", {"plan": ["talk"]}),
            ("followup", {}),
            ("inject", {}),
            ("cancel_unsettled", _KEEP),
            ("steer", {}),
        ),
    ),
    (
        "K8: a wake latched while the cancelled turn unwinds replays",
        (
            ("begin", {"plan": ["talk"]}),
            ("followup", {}),
            ("cancel_unsettled", _HIT),
            ("followup", {}),
            ("drive", {"ticks": 10, "finish": True}),
        ),
    ),
    (
        "K2: a cancel of the woken controller prevents its turn",
        (
            ("begin", {"plan": ["talk"]}),
            ("provoke", {"point": "turn/start:before", "action": _CANCEL_TRAP, "tear": None}),
        ),
    ),
    (
        "K11, K14: a cancel while an approval waits; the cut stream's message",
        (
            ("begin", {"plan": ["ask", "talk"]}),
            ("followup", {}),
            ("provoke", {"point": "approval:waiting", "action": _CANCEL_TRAP, "tear": None}),
            ("followup", {}),
            ("advance", {"ticks": 1}),
            ("cancel", _HIT),
        ),
    ),
    (
        "K12: next-step input owes a step, and max-tokens sticks across it; max-tokens ends "
        "the turn",
        (
            ("begin", {"plan": ["cut", "talk"]}),
            ("followup", {}),
            ("advance", {"ticks": 1}),
            ("inject", {}),
            ("drive", {"ticks": 20, "finish": True}),
            ("followup", {}),  # turn 2 talks, turn 3 is cut off
            ("followup", {}),
            ("drive", {"ticks": 40, "finish": True}),
        ),
    ),
    (
        "K10, K14: a model error ends the turn without the stopping hook, its text kept",
        (
            ("begin", {"plan": ["fail"]}),
            ("followup", {}),
            ("drive", {"ticks": 10, "finish": True}),
        ),
    ),
    (
        "K13: a failed checkpoint stops the run",
        (
            ("begin", {"plan": ["talk"]}),
            ("followup", {}),
            ("followup", {}),
            (
                "provoke",
                {"point": "turn/end:after", "action": {"kind": "disk", "fail": 2}, "tear": None},
            ),
            ("drive", {"ticks": 10, "finish": True}),
        ),
    ),
    (
        "K17: a failed dispatch flush runs no body",
        (
            ("begin", {"plan": ["job"]}),
            (
                "provoke",
                {"point": "tool/call:after", "action": {"kind": "disk", "fail": 2}, "tear": None},
            ),
            ("drive", {"ticks": 10, "finish": True}),
        ),
    ),
    (
        "K6, K17: a cancel after the assistant message prepares no call; a cancel in the "
        "dispatch flush, after its write, starts no body",
        (
            ("begin", {"plan": ["job"]}),
            (
                "provoke",
                {"point": "assistant/message:observer", "action": _CANCEL_TRAP, "tear": None},
            ),
            ("provoke", {"point": "tool/call:flushed", "action": _CANCEL_TRAP, "tear": None}),
        ),
    ),
    (
        "K5, K7, K14: a cancel after the finish chunk still cuts the stream; a cancel from a "
        "turn/end observer reaches the next turn's controller, its clear of the queued "
        "followup refused",
        (
            ("begin", {"plan": ["talk"]}),
            ("provoke", {"point": "finish:observer", "action": _CANCEL_TRAP, "tear": None}),
            (
                "provoke_between",
                {"point": "turn/end:observer", "cause": "user", "keep_inbox": False},
            ),
        ),
    ),
    (
        "K22, K24, R3, persistence.md §2: a new agent on the session the running one left, "
        "flushed and open, a second one refused; a shutdown parks the queue; repair closes the "
        "turn a crash left open; the next world's clock, and its batching window",
        (
            ("begin", {"plan": ["job"]}),
            ("followup", {}),
            ("followup", {}),
            ("new_agent", {}),
            ("restart", {}),
            (
                "provoke",
                {
                    "point": "tool:running",
                    "action": {"kind": "crash", "after_write": False},
                    "tear": None,
                },
            ),
            ("followup", {}),  # the next world's clock starts at 0 again
            ("advance", {"ticks": 2}),
        ),
    ),
)


#: How a failure of a rule scenario begins (its text follows), so a report can tell it from
#: a shrunk random example.
SCENARIO_FAILED: Final = "rule scenario"


def run_scenarios(machine: type[HarnessMachine]) -> None:
    """Play :data:`RULE_SCENARIOS` on ``machine``; the first that fails raises, its text
    prefixed with ``rule scenario '<title>': `` (the machine's ``last_trace`` holds its rules)."""
    for title, steps in RULE_SCENARIOS:
        instance = machine()
        try:
            for method, kwargs in steps:
                getattr(instance, method)(**kwargs)
        except AssertionError as exc:
            exc.args = (f"{SCENARIO_FAILED} {title!r}: {exc}",)
            raise
        finally:
            instance.teardown()


def run_machine(
    machine: type[RuleBasedStateMachine],
    *,
    examples: int,
    steps: int,
    seed: int,
    scenarios: bool = True,
    shrink_seconds: float | None = None,
) -> None:
    """Run ``machine`` as every machine run goes, the tests' and ``trio-agent harness``'s:
    first :data:`RULE_SCENARIOS` (a :class:`HarnessMachine`, unless ``scenarios`` is false),
    then ``examples`` random examples seeded with ``seed``, under :func:`machine_settings`,
    shrinking with no wall-clock limit unless ``shrink_seconds`` gives one
    (:func:`shrinking_bounded_by_work`), and with no literal of a loaded module among the
    values drawn (:func:`without_local_constants`: a seed gives the same examples in any
    process). Every bound is on work, none on time, unless asked. A failure propagates: the
    scenario's, or the shrunk example's."""
    if scenarios and issubclass(machine, HarnessMachine):
        run_scenarios(machine)
    hypothesis_seed(seed)(machine)
    with shrinking_bounded_by_work(shrink_seconds), without_local_constants():
        run_state_machine_as_test(
            machine, settings=machine_settings(examples=examples, steps=steps)
        )
