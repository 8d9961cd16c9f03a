"""What the journal proves was durable, and when (pure, no trio, no I/O).

A port reports ``acked``, the events a flush acknowledged (spec/harness.md §Replies), and the
driver checks that those survive. That alone takes the port's word: a port that skips a flush
and does not count it would pass. :class:`DerivedDurability` reads the journal instead
(spec/harness.md §What the driver checks, *durability from the journal*):

* the ``write`` entries say which events reached the disk, batch by batch, in the order
  things happened: a batch that finished ``ok`` made the events after those already written
  durable; a refused one made nothing durable (its events stay queued). The file is checked
  against that account: a settled world's file holds exactly the events written, a crash's
  bytes at least those.
* **K17** — a tool body starts only after the flush that follows its ``tool/call`` returned.
  So when a body is seen to have run (its ``tool/output``, or a result only a body that ran
  gives), its ``tool/call`` must already have been written by then. A body that ran without
  that flush, or after it failed, is caught at that entry.
* **K13** — after ``turn/end`` the run awaits a flush before it claims the next turn or
  reports idle, and a failed flush stops the run with ``AgentError``. So when the run went
  on after a ``turn/end`` (the next ``turn/start``, ``TurnPrevented`` or
  ``StatusChanged("idle")``) with no ``AgentError`` in between, that ``turn/end`` must already
  have been written. A skipped checkpoint, or one whose failure was ignored, is caught there.
* **persistence.md §2, the batching window** — a queued line is written once its window
  expired, flush or no flush. The world's window (20 ms) is shorter than the clock's tick
  (1 s), and a settle runs every due write, so at the end of each settle every event stamped
  before the current clock reading is on disk (:meth:`DerivedDurability.check_window`), unless
  a batch was refused less than one back-off ago (the retry waits at most 1 s). A writer that
  writes only when a flush asks for it is caught there.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

from .checks import HarnessViolation
from .plan import job_done_text, job_failed_text

__all__ = ["DURABILITY_RULES", "DerivedDurability"]

#: The rules :attr:`DerivedDurability.exercised` counts, each when a journal gave it something
#: to decide.
DURABILITY_RULES: Final = (
    "K13 the checkpoint before the run goes on",
    "K13 a failed checkpoint stops the run",
    "K17 the dispatch flush before a body",
    "K17 a failed dispatch flush runs no body",
    "persistence.md §2 a line is written once its batching window expired",
)
#: The runtime's words for a call whose dispatch flush failed (spec/cancel.md K17).
_NOT_DURABLE: Final = "its dispatch could not be made durable"
#: The longest a refused batch waits for its retry (persistence.md §2: the back-off doubles up
#: to 1 s), in virtual ms: one tick of the driver's clock.
_RETRY_MAX_MS: Final = 1000


class DerivedDurability:
    """Feed it every journal entry of a world in order (:meth:`feed`, which raises
    :class:`HarnessViolation` at the entry that breaks K13 or K17); :attr:`written` is then
    how many events, from the first, the journal says are on disk."""

    def __init__(self, durable: int = 0) -> None:
        #: Events on disk by the journal's account (``durable``: what the opening left there).
        self.written = durable
        self._calls: dict[str, int] = {}
        self._checkpoint: tuple[int, int] | None = None  # (events up to turn/end, turn)
        self._opened = durable  # events the opening left on disk (their times are not fed)
        self._times: list[int] = []  # the time of every event fed since, in order
        self._refused = False  # a batch was refused since the last check_window
        self._refused_at: int | None = None  # the clock reading of the last refusal seen
        self._windowed = 0  # events check_window already required on disk
        #: How often each of :data:`DURABILITY_RULES` had something to decide.
        self.exercised: Counter[str] = Counter()

    def feed(self, entry: Mapping[str, Any]) -> None:
        k = entry["k"]
        if k == "write":
            if entry["ok"]:
                self.written += entry["events"]
            else:
                self._refused = True
        elif k == "event":
            self._event(entry["event"])
        elif k == "rt":
            kind = entry["type"]
            if kind == "agent-error":
                if self._checkpoint is not None:
                    self.exercised["K13 a failed checkpoint stops the run"] += 1
                self._checkpoint = None  # the checkpoint failed: nothing more is owed (K13)
            elif kind == "prevented":
                self._went_on("a turn was prevented (TurnPrevented)")
            elif kind == "status" and entry["status"] == "idle":
                self._went_on("the agent reported idle")

    def _event(self, event: Mapping[str, Any]) -> None:
        kind, data, seq = event["type"], event["data"], event["seq"]
        self._times.append(event["time"])
        if kind == "tool/call":
            self._calls[data["callId"]] = seq
        elif kind == "tool/output":
            self._body_ran(data["callId"], f"its tool/output is seq {seq}")
        elif kind == "tool/result":
            call, content = data["callId"], data["content"]
            if _NOT_DURABLE in content:
                self.exercised["K17 a failed dispatch flush runs no body"] += 1
            # Results only a body that ran gives (spec/harness.md §The scripted world).
            ran = content in (job_done_text(call), job_failed_text(call))
            if ran or content.startswith("slept "):
                self._body_ran(call, f"its result, seq {seq}, is one only a body that ran gives")
        elif kind == "turn/start":
            self._went_on(f"turn {data['turn']} started (seq {seq})")
        elif kind == "turn/end":
            self._checkpoint = (seq + 1, data["turn"])

    def _owed(self, count: int, why: str) -> None:
        if self.written < count:
            raise HarnessViolation(
                f"{why}; but by then the journal's writes had put only {self.written} events "
                "on disk"
            )

    def _body_ran(self, call: str, evidence: str) -> None:
        seq = self._calls.get(call)
        if seq is not None:
            self.exercised["K17 the dispatch flush before a body"] += 1
            self._owed(
                seq + 1,
                f"K17: the body of {call} ran ({evidence}), so the flush after its tool/call "
                f"(seq {seq}) had returned and every event up to seq {seq} was durable",
            )

    def _went_on(self, how: str) -> None:
        if self._checkpoint is None:
            return
        count, turn = self._checkpoint
        self._checkpoint = None
        self.exercised["K13 the checkpoint before the run goes on"] += 1
        self._owed(
            count,
            f"K13: {how} after turn {turn}'s turn/end (seq {count - 1}) with no AgentError, so "
            f"the flush after that turn/end had returned and every event up to seq {count - 1} "
            "was durable",
        )

    def check_window(self, clock_ms: int) -> None:
        """At the end of a settle, the clock reading ``clock_ms``: every event stamped before it
        was queued a tick ago or more, its window expired at the latest at this tick, and the
        settle ran that write (persistence.md §2). An event's stamp is never earlier than the
        clock when it was appended (a reopened log's later stamps only make this lenient).
        Skipped while a refused batch may still wait for its retry."""
        if self._refused:
            self._refused = False
            self._refused_at = clock_ms  # no earlier than the refusal: the check waits longer
        if self._refused_at is not None and clock_ms < self._refused_at + _RETRY_MAX_MS:
            return
        due = bisect.bisect_left(self._times, clock_ms)
        if due > self._windowed:
            self._windowed = due
            self.exercised[
                "persistence.md §2 a line is written once its batching window expired"
            ] += 1
        if self.written < self._opened + due:
            first = self.written - self._opened
            raise HarnessViolation(
                f"persistence.md §2: {self._opened + due - self.written} events stamped before "
                f"{clock_ms} ms (the first, seq {self.written}, at {self._times[first]} ms) "
                "were queued a tick ago or more, so their batching window expired, but by the "
                f"end of the settle the journal's writes had put only {self.written} events "
                "on disk (a queued line is written one window after it was queued, with or "
                "without a flush)"
            )

    def check_live(self, on_disk: int) -> None:
        """A settled world's file holds ``on_disk`` events: exactly the journal's account."""
        if on_disk != self.written:
            raise HarnessViolation(
                f"live log: the file holds {on_disk} events, the journal's write entries account "
                f"for {self.written} (every batch of the live session's writer is reported, once "
                "it is synced or refused)"
            )

    def check_crash(self, survived: int) -> None:
        """A crash left ``survived`` events: at least every event a batch wrote and synced."""
        if survived < self.written:
            raise HarnessViolation(
                f"crash: {self.written} events were written and synced by the journal's "
                f"account, only {survived} survived"
            )
