"""The harness adapter protocol: what a driven implementation must answer (spec/harness.md).

The state machine talks to an implementation through an :class:`Adapter`: one request (a
JSON object with an ``op``) in, one :data:`Reply` out. Our in-process adapter and the
JSON-lines pipe adapter move the very same objects, so a port only has to speak the wire
format of spec/harness.md to be driven by the same machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Protocol

__all__ = [
    "CANCEL_ONLY_POINTS",
    "CANCEL_POINTS",
    "CLOCK_START",
    "CRASH_POINTS",
    "MAX_LINE",
    "OBSERVER_POINTS",
    "OPS",
    "POINTS",
    "PROTOCOL",
    "Adapter",
    "AdapterError",
    "Reply",
    "shown_line",
    "trap_points",
]

#: Name and version of the wire protocol (the ``hello`` answer carries it).
PROTOCOL: Final = "trio-agent-harness/4"
#: Default bound on one line the implementation writes (an ``opened`` entry carries the log);
#: here, not in :mod:`.pipe`, so the CLI's parser names it without importing the pipe.
MAX_LINE: Final = 8 << 20
#: Where a host's virtual clock starts, in seconds (not 0, as trio's own clock starts at an
#: arbitrary offset): a time taken from the clock's epoch instead of the world's start is
#: then wrong in the first world too, not only in worlds after another one.
CLOCK_START: Final = 1_000_000.0

#: Named points where a trap (``arm``) can crash or cancel. Order is documentation order.
POINTS: Final = (
    "turn/start:before",  # the waking call created the controller; turn/start not written
    "turn/start:after",  # turn/start appended
    "claim:after",  # a claim splice appended (the turn took its input)
    "step/start:after",  # step/start appended
    "stream:mid",  # the first text chunk of a step appended (mid-stream)
    "tool/call:after",  # the dispatch marker appended, not yet flushed
    "tool/call:flushed",  # its dispatch flush wrote the marker; the runtime not yet resumed
    "tool:running",  # a tool body started (its tool/call flush returned)
    "approval:waiting",  # the approver is waiting for a decision
    "step/end:after",  # step/end appended
    "turn/end:after",  # turn/end appended, before the checkpoint flush
    "flush",  # a batch of the writer is about to be written (a flush is in flight)
    "finish:observer",  # inside the session observer of a step's finish chunk
    "assistant/message:observer",  # inside the session observer of assistant/message
    "turn/end:observer",  # inside the session observer of turn/end
)
#: Points inside a session observer: a cancel trap is issued right there, so clearing a
#: non-empty inbox is refused there (an observer may not append) and the cancel raises after
#: cancelling the controller (spec/cancel.md K5; spec/harness.md §Named points and traps).
OBSERVER_POINTS: Final = ("finish:observer", "assistant/message:observer", "turn/end:observer")
#: Points that take only a cancel trap: a crash or a disk failure there would be one at a
#: neighbouring point (the dispatch flush's write is done, an observer appends nothing).
CANCEL_ONLY_POINTS: Final = ("tool/call:flushed", *OBSERVER_POINTS)
CRASH_POINTS: Final = tuple(p for p in POINTS if p not in CANCEL_ONLY_POINTS)
CANCEL_POINTS: Final = POINTS


def trap_points(kind: str) -> tuple[str, ...]:
    """The named points a trap of ``kind`` (``crash``, ``cancel``, ``disk``) may be armed at."""
    return CANCEL_POINTS if kind == "cancel" else CRASH_POINTS


#: Requests a driven implementation answers (spec/harness.md §Requests).
OPS: Final = (
    "hello",
    "start",
    "followup",
    "steer",
    "inject",
    "cancel",
    "advance",
    "tool",
    "approval",
    "flush",
    "disk",
    "arm",
    "shutdown",
    "new_agent",
    "crash",
)

#: One reply: ``{"ok": bool, "result": ..., "journal": [...], "state": {...},
#: "crashed": bool, "error"?: str}`` (spec/harness.md §Replies).
Reply = dict[str, Any]


def shown_line(line: bytes, limit: int = 400) -> str:
    """A line the implementation wrote, for a message or a report: quoted, so that a stray
    space, ``\\r``, byte order mark or control character shows as itself and never reaches
    the terminal raw, undecodable bytes escaped, its newline dropped; at most ``limit``
    bytes of it (a line may be megabytes long)."""
    body = line.removesuffix(b"\n")
    text = repr(body[:limit].decode(errors="backslashreplace"))
    return text + "..." if len(body) > limit else text


class AdapterError(RuntimeError):
    """The driven implementation refused a request, broke the protocol, or hung.

    Raised in the middle of a request, it carries what that request received before it
    gave up: ``journal``, the entries already accepted, and ``line``, the raw line that broke
    the protocol (``None`` when none did: the implementation exited or went silent). The
    state machine puts both in its wire transcript, so a failure report shows the bad line.
    """

    def __init__(
        self,
        message: str,
        *,
        journal: Sequence[dict[str, Any]] = (),
        line: bytes | None = None,
    ) -> None:
        super().__init__(message)
        self.journal: list[dict[str, Any]] = list(journal)
        self.line = line


class NoReply(AdapterError):
    """The implementation gave no reply within the adapter's timeout (a hang, as far as the
    driver can tell). The state machine stops the run here instead of shrinking it: every
    shrink attempt that hangs again would wait the whole timeout (spec/harness.md §Driving
    a port)."""


class RunStopped(BaseException):
    """Raised by the state machine on :class:`NoReply`: a :class:`BaseException`, so that
    Hypothesis does not take it for a failure to shrink and lets it through at once (its
    teardown still runs). ``error`` is the :class:`NoReply`."""

    def __init__(self, error: NoReply) -> None:
        super().__init__(str(error))
        self.error = error


class Adapter(Protocol):
    """How the state machine reaches an implementation (in-process or over a pipe)."""

    def request(self, message: dict[str, Any]) -> Reply:
        """Send one request and return its reply. If the implementation died while
        handling it (a crash trap fired), the reply is ``{"crashed": true, ...}`` with the
        journal entries it managed to report first."""
        ...

    def crash(self) -> None:
        """Crash the implementation now, from outside (a SIGKILL for a process)."""
        ...

    def durable_bytes(self, log_path: str) -> bytes:
        """The durable bytes of the log after a crash: what a cold open will find."""
        ...

    def close(self) -> None:
        """Release everything (kill the process, stop the thread). Raises
        :class:`AdapterError` when the implementation does not end cleanly: a process that
        does not exit after ``bye``, or leaves processes in its group (:class:`NoReply` for
        the first); nothing of it is left running either way."""
        ...
