"""The scenario engine shared by the terminal and the web front ends: the driver of a run.

One :class:`Run` is one scenario run: its own temporary directory holding a JSONL session
store and a work directory, the worker processes that run the real agent on that session, and
two views. The run drives pure pieces and I/O shells, one module each:

* :mod:`~trio_agent.demo.log_tail`: the **log**, read back from the session file itself,
  complete lines only, so the left pane shows exactly what is durable;
* :mod:`~trio_agent.demo.worker_process`: the **worker process** (``python -m
  trio_agent.demo.worker``) and the ``/proc`` probes for the tool's process group (alive or
  gone, even after the worker that started it was killed), which teardown uses to stop
  whatever the run left behind;
* :mod:`~trio_agent.demo.runtime_view`: the **runtime** (the right pane), a pure reducer over
  what the worker reports on stdout (:mod:`~trio_agent.demo.reports`: agent status,
  controllers and their causes, inbox, turn outcomes), kept with every input it was given;
* :mod:`~trio_agent.demo.snapshot` (pure): what the steps measured and marked (the
  :class:`~trio_agent.demo.snapshot.Findings`) and the snapshot built from all of the above;
  :mod:`~trio_agent.demo.contrast` (pure): the truncate scenario's read-only contrast;
* :mod:`~trio_agent.demo.playback` (pure): a scenario's steps and where playing them stands;
* :mod:`~trio_agent.demo.workdir`: the work directory and the stand-in test suite in it,
  which advances only as far as the steps allow (:meth:`Run.allow_more_tests`): a reader may
  stay on a step as long as they like and the story still holds when they go on;
* this module: the run itself (the tail polled, the worker's reports folded into the view,
  bounded waits for what a step causes) and the :class:`Driver` that plays a scenario's steps
  on it: ``step`` runs one action, ``play`` runs the rest with a pause (``dwell``) between
  them; the runtime keeps running in real time between steps. Front ends read
  :meth:`Driver.snapshot`, a JSON-able dict, whenever :attr:`Run.version` changes.

Teardown is bounded and shielded: the worker is asked to shut down, killed if it does not,
and every process group the log names, or any process still working in the run's directory,
is stopped, so a run leaves no process behind however it ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import trio

from ..log import Event
from ..store import LOG_NAME, escape_id
from .contrast import ClosersDisagree, truncation_contrast
from .log_tail import LogTail, ShrunkError
from .playback import Playback, Scenario
from .reports import BadReport
from .runtime_view import RecordedView, RuntimeView, Worker
from .snapshot import Findings, run_snapshot
from .workdir import TEST_PACE, allow_tests, allowance, prepare_workdir, progress_lines
from .worker_process import Group, WorkerProcess, stop_leftovers

__all__ = [
    "PACE_VAR",
    "SESSION_ID",
    "WAIT",
    "DemoError",
    "Driver",
    "Run",
    "open_run",
    "pace_from_env",
]

SESSION_ID: Final = "demo"

#: Bounded waits (seconds): hang guards, never expectations about speed. A step's wait is
#: for about 3 s of work on a quiet machine; 30 s once ran out under a full ``make test`` on
#: two shared cores, so the guard is as long as the tests' own (two minutes).
WAIT: Final = 120.0
TEARDOWN_BOUND: Final = 15.0
POLL: Final = 0.05
#: The environment variable that sets the stand-in test suite's seconds per test.
PACE_VAR: Final = "TRIO_AGENT_DEMO_PACE"


class DemoError(Exception):
    """A scenario could not go on (a worker died unexpectedly, a wait ran out)."""


def pace_from_env() -> float:
    """Seconds per test of the stand-in suite: ``$TRIO_AGENT_DEMO_PACE`` (a number from 0.001
    to 10) if set, else :data:`~trio_agent.demo.workdir.TEST_PACE`. Tests set a fast pace to
    let many of the suite's ticks go by while a step waits (a fake clock)."""
    text = os.environ.get(PACE_VAR, "").strip()
    if not text:
        return TEST_PACE
    try:
        pace = float(text)
    except ValueError:
        pace = -1.0
    if not 0.001 <= pace <= 10:
        raise DemoError(f"{PACE_VAR}={text!r}: not a number of seconds from 0.001 to 10")
    return pace


# -- the run ----------------------------------------------------------------------------------


class Run:
    """One scenario run (see the module docstring). Make it with :func:`open_run`."""

    def __init__(
        self,
        nursery: trio.Nursery,
        directory: Path,
        *,
        root: Path | None = None,
        session_id: str = SESSION_ID,
        pace: float = TEST_PACE,
    ) -> None:
        self._nursery = nursery
        #: Seconds per test of the stand-in suite.
        self.pace = pace
        self.dir = directory
        #: The store root: inside ``directory`` (removed at teardown) unless the caller keeps
        #: the session in a root of its own (``trio-agent demo --keep DIR``).
        self.root = directory / "sessions" if root is None else root
        self.session_id = session_id
        self.workdir = directory / "work"
        self.log_path = self.root / escape_id(session_id) / LOG_NAME
        self.tail = LogTail(self.log_path)
        #: The runtime view and every input it was given (saved to replay the view).
        self.recorded = RecordedView()
        self.groups: dict[int, Group] = {}
        #: What the steps measured and marked (the driver keeps its ``step`` current).
        self.findings = Findings()
        self.failure: str | None = None
        self._process: WorkerProcess | None = None
        self.version = 0
        self._changed = trio.Event()

    @property
    def runtime(self) -> RuntimeView:
        return self.recorded.view

    @property
    def events(self) -> list[Event]:
        """The events of the session file's complete lines, as last polled."""
        return self.tail.events

    # -- change notification ----------------------------------------------------------------------

    def notify(self) -> None:
        self.version += 1
        self._changed.set()
        self._changed = trio.Event()

    async def wait_changed(self, since: int) -> int:
        """Wait until :attr:`version` differs from ``since``; return the new version."""
        while self.version == since:
            await self._changed.wait()
        return self.version

    async def wait_until(
        self, predicate: Callable[[], bool], what: str, timeout: float = WAIT
    ) -> None:
        """Wait (bounded) until ``predicate()`` holds; the worker dying first is an error.

        Giving up names the last event read from the log, so the error says how far the
        story got."""
        with trio.move_on_after(timeout) as scope:
            while not predicate():
                if self.failure is not None:
                    raise DemoError(self.failure)
                with trio.move_on_after(POLL * 4):
                    await self.wait_changed(self.version)
        if scope.cancelled_caught:
            last = self.events[-1] if self.events else None
            got = "no event yet" if last is None else f"seq {last.seq} {last.type}"
            raise DemoError(
                f"gave up after {timeout:g}s waiting for {what} (the log's last event: {got})"
            )

    def fact(self, text: str, tone: str = "ok") -> None:
        """Record something a step measured, filed under the running step."""
        self.findings.fact(text, tone)
        self.notify()

    # -- setup / teardown ------------------------------------------------------------------------

    def _prepare(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        prepare_workdir(self.workdir, pace=self.pace)

    async def teardown(self) -> None:
        """Stop the worker and every process this run started. Bounded, shielded, idempotent."""
        with trio.move_on_after(TEARDOWN_BOUND, shield=True):
            if self._process is not None:
                await self._process.stop()
            self.poll_log()
            await stop_leftovers(self.groups.values(), self.dir)
        for group in self.groups.values():
            group.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- the worker ------------------------------------------------------------------------------

    @property
    def worker(self) -> Worker | None:
        return self.runtime.worker

    async def start_worker(self, mode: str, script: Sequence[Mapping[str, Any]]) -> Worker:
        """Start a worker (``create`` the session, or ``open`` it cold) and wait until ready."""
        if self._process is not None and self._process.returncode is None:
            raise DemoError("a worker is already running")
        generation = len(self.runtime.workers) + 1
        process = await WorkerProcess.start(
            root=self.root,
            session_id=self.session_id,
            mode=mode,
            workdir=self.workdir,
            script=script,
            stderr_path=self.dir / f"worker-{generation}.stderr",
        )
        self._process = process
        worker = self.recorded.start_worker(mode, process.pid)
        self.notify()
        self._nursery.start_soon(self._read_worker, process, worker)
        await self.wait_until(lambda: worker.ready, "the worker to open the session")
        return worker

    async def send(self, cmd: Mapping[str, Any]) -> None:
        """Send a command to the running worker."""
        worker = self.worker
        if worker is None or worker.state != "running":
            raise DemoError("the worker is not running")
        if self._process is None:
            raise DemoError("no worker")
        await self._process.send(cmd)

    async def kill_worker(self) -> int:
        """``kill -9`` the worker; return once it is dead and reaped (and the log re-read)."""
        process, worker = self._process, self.worker
        if process is None or worker is None or process.returncode is not None:
            raise DemoError("no running worker to kill")
        process.kill()
        await self.wait_until(lambda: worker.state == "killed", "the worker to die")
        self.poll_log()
        self.findings.cut_after = self.events[-1].seq if self.events else None
        self.notify()
        return worker.pid

    async def _read_worker(self, process: WorkerProcess, worker: Worker) -> None:
        code = await process.read_lines(lambda line: self._on_report(worker, line))
        self.recorded.worker_exited(worker, code)
        if not process.expect_exit:
            self.failure = f"worker {worker.pid} {worker.exit} unexpectedly" + process.stderr_tail()
        self.notify()

    def _on_report(self, worker: Worker, line: bytes) -> None:
        try:
            self.recorded.report(worker, line)
        except BadReport as exc:
            # The worker and the engine are one program: a report that does not parse is a
            # bug, shown as the run's failure (one line naming the field), never a traceback.
            self.failure = f"worker {worker.pid}: {exc}"
        self.notify()

    # -- tailing the session file ---------------------------------------------------------------

    def poll_log(self) -> bool:
        """Read complete lines appended since the last poll. True if anything new arrived."""
        try:
            new, bad = self.tail.poll(halted=self.failure is not None)
        except ShrunkError as exc:
            raise DemoError(str(exc)) from None
        for event in new:
            if event.type == "tool/spawned":
                group = Group.from_spawned(event)
                replaced = self.groups.get(group.pgid)
                if replaced is not None:  # the pid was reused by a later call's group
                    replaced.close()
                self.groups[group.pgid] = group
        if bad is not None:
            self.failure = f"the session file has a bad line: {bad}"
        if new or self.failure is not None:
            self.notify()
        return bool(new)

    def poll_groups(self) -> bool:
        """Look the tool groups up in ``/proc`` again. True if any changed."""
        worker_alive = self.worker is not None and self.worker.state in ("starting", "running")
        changed = False
        for group in self.groups.values():
            changed = group.refresh(worker_alive=worker_alive) or changed
        if changed:
            self.notify()
        return changed

    async def _poller(self) -> None:
        while True:
            self.poll_log()
            if self.groups:
                self.poll_groups()
            await trio.sleep(POLL)

    # -- queries used by scenarios ---------------------------------------------------------------

    def find(self, type_: str, pred: Callable[[Event], bool] = lambda e: True) -> list[Event]:
        return [e for e in self.events if e.type == type_ and pred(e)]

    def turn_end(self, turn: int) -> Event | None:
        found = self.find("turn/end", lambda e: e.data["turn"] == turn)
        return found[0] if found else None

    def progress(self) -> list[str]:
        return progress_lines(self.workdir)

    def allow_more_tests(self, more: int) -> None:
        """Let the stand-in suite run ``more`` tests beyond those it has done (never less than
        it was already allowed): the story, not the clock, moves it on."""
        done = len(self.progress())
        allow_tests(self.workdir, max(allowance(self.workdir), done + more))

    # -- the truncate contrast (read-only) -----------------------------------------------------

    async def compute_contrast(self) -> dict[str, Any]:
        """What truncation would drop next to what completion appends; writes nothing."""
        from ..store import JsonlStore

        before = self.log_path.read_bytes()
        async with JsonlStore(self.root, reap_orphans=None) as store:
            inspected = await store.inspect(self.session_id)
        try:
            contrast = truncation_contrast(before, inspected, self.log_path.read_bytes())
        except ClosersDisagree as exc:
            raise DemoError(str(exc)) from None
        self.findings.before_recovery = before
        self.findings.contrast = contrast
        self.notify()
        return contrast

    # -- the snapshot ------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """The run's part of :meth:`Driver.snapshot`."""
        return run_snapshot(
            log_path=str(self.log_path),
            events=self.events,
            runtime=self.runtime,
            groups=self.groups.values(),
            progress=self.progress(),
            findings=self.findings,
        )


@contextlib.asynccontextmanager
async def open_run(
    *, root: Path | None = None, session_id: str = SESSION_ID, pace: float | None = None
) -> AsyncIterator[Run]:
    """A fresh run in its own temporary directory, torn down (bounded) on exit.

    With ``root`` the session lives in that store root instead and stays there after the
    run (the work directory and the worker's stderr are still removed). ``pace``: seconds per
    test of the stand-in suite (default: :func:`pace_from_env`).
    """
    pace = pace_from_env() if pace is None else pace
    directory = Path(tempfile.mkdtemp(prefix="trio-agent-demo-"))
    async with trio.open_nursery() as nursery:
        run = Run(nursery, directory, root=root, session_id=session_id, pace=pace)
        try:
            run._prepare()
            nursery.start_soon(run._poller)
            yield run
        finally:
            await run.teardown()
            nursery.cancel_scope.cancel()


# -- the driver -------------------------------------------------------------------------------


class Driver:
    """Plays one scenario on one run: ``step``, ``play``/``pause``, with a live snapshot."""

    def __init__(self, scenario: Scenario[Run], run: Run, *, dwell: float = 2.5) -> None:
        self.scenario = scenario
        self.run = run
        self.dwell = dwell
        self.playback = Playback(len(scenario.steps))
        self._wake = trio.Event()

    @property
    def completed(self) -> int:
        return self.playback.completed

    @property
    def ready(self) -> bool:
        return self.playback.ready

    @property
    def error(self) -> str | None:
        return self.playback.error

    # -- commands (synchronous: they only change intent; :meth:`main` acts on it) ---------------

    def _poke(self) -> None:
        self._wake.set()
        self.run.notify()

    def step(self) -> None:
        """Run the next step (ignored while one is running, when playing, or when done)."""
        if self.playback.step():
            self._poke()

    def play(self, dwell: float | None = None) -> None:
        if dwell is not None:
            self.dwell = dwell
        if self.playback.play():
            self._poke()

    def pause(self) -> None:
        self.playback.pause()
        self._poke()

    # -- the loop --------------------------------------------------------------------------------

    async def main(self, on_step: Callable[[int], Awaitable[None]] | None = None) -> None:
        """Set the scenario up, then run steps as commanded, forever (cancel to stop)."""
        playback = self.playback
        index: int | None = None
        try:
            await self.scenario.setup(self.run)
            playback.ready = True
            self.run.notify()
            while True:
                while not playback.wants_step:
                    self._wake = trio.Event()
                    await self._wake.wait()
                index = playback.begin()
                self.run.findings.step = index
                self.run.poll_log()
                self.run.findings.step_began.append(len(self.run.events))
                self.run.notify()
                await self.scenario.steps[index].action(self.run)
                playback.finish()
                self.run.notify()
                if on_step is not None:
                    await on_step(index)
                if playback.playing and not playback.done and self.dwell > 0:
                    with trio.move_on_after(self.dwell):
                        self._wake = trio.Event()
                        while playback.playing:
                            await self._wake.wait()
                            self._wake = trio.Event()
        except DemoError as exc:
            # Say where the story stopped; the front ends add how to go on.
            where = (
                "setup"
                if index is None
                else f"step {index + 1} ({self.scenario.steps[index].label})"
            )
            message = f"{where}: {exc}"
            playback.fail(message)
            self.run.notify()
            raise DemoError(message) from None

    def snapshot(self) -> dict[str, Any]:
        return {**self.playback.to_json(self.scenario), **self.run.state()}
