"""The runtime view (the right pane): a pure reducer over the workers' reports.

A :class:`RuntimeView` is folded from three kinds of input, in the order the engine saw them:
a worker started (:meth:`RuntimeView.start_worker`), a worker reported something
(:meth:`RuntimeView.apply`, one :mod:`~trio_agent.demo.reports` report), a worker exited
(:meth:`RuntimeView.worker_exited`, with its return code). It holds the agent's status, its
controllers and what became of them, the inbox, the turn outcomes and dropped messages, and
what the store's recovery appended on a cold open.

No trio, no I/O: the same inputs always give the same view, so it is tested by replaying
reports recorded from real runs (``tests/demo/test_runtime_view.py``). The tool's process
groups and the session file are not part of it; the engine adds them to the snapshot.
A :class:`RecordedView` is the view together with every input it was given, so a run can be
saved and replayed.
"""

from __future__ import annotations

import signal
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import orjson

from .reports import (
    AgentErrorReport,
    BadCommand,
    Cancelled,
    ControllerSeen,
    Current,
    InboxChanged,
    InboxDropped,
    Prevented,
    Ready,
    Recovered,
    Report,
    StatusReport,
    TurnEndedReport,
    parse,
)

__all__ = ["Controller", "RecordedView", "RuntimeView", "Worker"]


@attrs.define
class Controller:
    """One turn controller, numbered across workers (each worker counts its own from 1)."""

    n: int
    turn: int | None = None
    states: list[str] = attrs.Factory(list)
    cause: str | None = None
    released_before_seq: int | None = None
    prevented: bool = False
    worker: int = 1
    lost: bool = False


@attrs.define
class Worker:
    """One worker process: ``generation`` counts starts and restarts from 1."""

    generation: int
    mode: str
    pid: int
    state: str = "starting"  # starting, running, killed, exited
    ready: bool = False
    exit: str | None = None


@attrs.define
class RuntimeView:
    """What the workers reported, folded (see the module docstring)."""

    workers: list[Worker] = attrs.Factory(list)
    status: str = "idle"
    current: int | None = None
    controllers: dict[int, Controller] = attrs.Factory(dict)
    inbox: dict[str, list[str]] = attrs.Factory(lambda: {"next_turn": [], "next_step": []})
    outcomes: list[dict[str, Any]] = attrs.Factory(list)
    dropped: list[dict[str, Any]] = attrs.Factory(list)
    recovery: list[dict[str, Any]] | None = None
    notes: list[str] = attrs.Factory(list)
    #: Seqs of the events the store's crash recovery appended (the last ``recovered`` report).
    recovery_seqs: frozenset[int] = frozenset()
    #: ``(worker generation, the worker's own number)`` -> the view's controller number.
    _numbers: dict[tuple[int, int], int] = attrs.Factory(dict)

    @property
    def worker(self) -> Worker | None:
        """The latest worker (running or not)."""
        return self.workers[-1] if self.workers else None

    def controller(self, n: int) -> Controller:
        if n not in self.controllers:
            self.controllers[n] = Controller(n)
        return self.controllers[n]

    # -- inputs ----------------------------------------------------------------------------------

    def start_worker(self, mode: str, pid: int) -> Worker:
        """A worker process was started (it is ``starting`` until it reports ``ready``)."""
        worker = Worker(len(self.workers) + 1, mode, pid)
        self.workers.append(worker)
        return worker

    def apply(self, worker: Worker, report: Report) -> None:
        """Fold one report of ``worker`` into the view."""
        if isinstance(report, Ready):
            worker.state, worker.ready = "running", True
            self.status, self.current = "idle", None
        elif isinstance(report, Recovered):
            self.recovery = [attrs.asdict(c) for c in report.closers]
            self.recovery_seqs = frozenset(c.seq for c in report.closers)
        elif isinstance(report, StatusReport):
            self.status = report.status
        elif isinstance(report, Current):
            n = self._global(worker, report.controller)
            self.current = n
            if n is not None:
                self.controller(n)
        elif isinstance(report, ControllerSeen):
            self._controller_seen(worker, report)
        elif isinstance(report, Cancelled):
            n = self._global(worker, report.controller)
            if n is not None and report.hit:
                c = self.controller(n)
                c.cause = report.cause
                c.states.append(f"cancelled, cause {report.cause}")
            elif n is None:
                self.notes.append("cancel while idle: nothing to cancel, nothing armed")
        elif isinstance(report, Prevented):
            # The controller it closed is the last one a cancel hit.
            n = next((c.n for c in reversed(self.controllers.values()) if c.cause), None)
            if n is not None:
                c = self.controller(n)
                c.prevented = True
                c.states.append("closed: its turn never started (no turn/start)")
        elif isinstance(report, InboxChanged):
            self.inbox = {"next_turn": report.next_turn, "next_step": report.next_step}
        elif isinstance(report, TurnEndedReport):
            self.outcomes.append(
                {"turn": report.turn, "reason": report.reason, "cause": report.cause}
            )
        elif isinstance(report, InboxDropped):
            for text in report.texts:
                self.dropped.append({"text": text, "target": report.target, "cause": report.cause})
        elif isinstance(report, AgentErrorReport):
            self.notes.append(f"agent_error: {report.message}")
        elif isinstance(report, BadCommand):
            self.notes.append(f"bad_command: {report.message}")
        # hello and bye change nothing shown.

    def worker_exited(self, worker: Worker, returncode: int | None) -> None:
        """``worker`` exited (``returncode`` as ``Popen`` gives it: negative for a signal).

        A controller of a killed worker whose turn was live and not released died with it:
        no cancel, no ``finally``, no ``turn/end``.
        """
        if returncode is not None and returncode < 0 and -returncode == signal.SIGKILL:
            worker.state, worker.exit = "killed", "killed by SIGKILL"
        else:
            worker.state, worker.exit = "exited", f"exited with code {returncode}"
        worker.ready = False
        self.status = "gone"
        self.current = None
        for c in self.controllers.values():
            mine = c.worker == worker.generation and c.turn is not None
            if mine and c.released_before_seq is None and worker.state == "killed" and not c.lost:
                c.lost = True
                c.states.append("died with the worker: no cancel, no finally, no turn/end")

    def _controller_seen(self, worker: Worker, report: ControllerSeen) -> None:
        c = self.controller(self._number(worker, report.controller))
        c.turn = report.turn
        if report.state == "live":
            c.states.append(f"live from turn/start (seq {report.seq})")
        elif report.state == "released":
            c.released_before_seq = report.seq
            c.states.append(f"released before turn/end (seq {report.seq})")
        else:
            c.states.append(f"STILL HELD at turn/end (seq {report.seq})")

    def _global(self, worker: Worker, n: int | None) -> int | None:
        return None if n is None else self._number(worker, n)

    def _number(self, worker: Worker, n: int) -> int:
        """Number controllers across workers: each worker counts its own from 1."""
        key = (worker.generation, n)
        if key not in self._numbers:
            self._numbers[key] = len(self._numbers) + 1
            self.controller(self._numbers[key]).worker = worker.generation
        return self._numbers[key]

    # -- output ----------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The view as the snapshot shows it (controllers no turn or cancel touched are left
        out: a controller made and closed with nothing to say)."""
        return {
            "workers": [attrs.asdict(w) for w in self.workers],
            "status": self.status,
            "current": self.current,
            "controllers": [
                attrs.asdict(c)
                for c in self.controllers.values()
                if c.turn is not None or c.cause is not None
            ],
            "inbox": self.inbox,
            "outcomes": self.outcomes,
            "dropped": self.dropped,
            "recovery": self.recovery,
            "notes": self.notes,
        }


@attrs.define
class RecordedView:
    """A :class:`RuntimeView` and every input it was given, in order, as JSON.

    The inputs are ``{"start": {"mode", "pid"}}``, ``{"worker": generation, "report": {...}}``
    (the report line as the worker wrote it) and ``{"worker": generation, "exit": returncode}``;
    ``tests/demo/record_reports.py`` saves them, :meth:`replay` folds them again.
    """

    view: RuntimeView = attrs.Factory(RuntimeView)
    inputs: list[dict[str, Any]] = attrs.Factory(list)

    def start_worker(self, mode: str, pid: int) -> Worker:
        worker = self.view.start_worker(mode, pid)
        self.inputs.append({"start": {"mode": mode, "pid": pid}})
        return worker

    def report(self, worker: Worker, line: bytes) -> None:
        """Fold one report line of ``worker``. A line that does not parse raises
        :class:`~trio_agent.demo.reports.BadReport` and is neither folded nor recorded."""
        self.view.apply(worker, parse(line))
        self.inputs.append({"worker": worker.generation, "report": orjson.loads(line)})

    def worker_exited(self, worker: Worker, returncode: int | None) -> None:
        self.view.worker_exited(worker, returncode)
        self.inputs.append({"worker": worker.generation, "exit": returncode})

    def feed(self, item: Mapping[str, Any]) -> None:
        """Fold one recorded input again (the pids are the recorded ones)."""
        if "start" in item:
            self.start_worker(item["start"]["mode"], item["start"]["pid"])
            return
        worker = self.view.workers[item["worker"] - 1]  # generations count from 1
        if "report" in item:
            self.report(worker, orjson.dumps(item["report"]))
        else:
            self.worker_exited(worker, item["exit"])

    @classmethod
    def replay(cls, inputs: Iterable[Mapping[str, Any]]) -> RecordedView:
        """Fold recorded inputs into a fresh view."""
        recorded = cls()
        for item in inputs:
            recorded.feed(item)
        return recorded
