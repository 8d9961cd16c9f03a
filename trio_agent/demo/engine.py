"""The scenario engine shared by the terminal and the web front ends: the driver of a run.

One :class:`Run` is one scenario run: its own temporary directory holding a JSONL session
store and a work directory, the worker processes that run the real agent on that session, and
two views. The run composes four parts, one module each:

* :mod:`~trio_agent.demo.log_tail`: the **log**, read back from the session file itself,
  complete lines only, so the left pane shows exactly what is durable;
* :mod:`~trio_agent.demo.worker_process`: the **worker process** (``python -m
  trio_agent.demo.worker``) and the ``/proc`` probes for the tool's process group (alive or
  gone, even after the worker that started it was killed);
* :mod:`~trio_agent.demo.runtime_view`: the **runtime** (the right pane), a pure reducer over
  what the worker reports on stdout (:mod:`~trio_agent.demo.reports`: agent status,
  controllers and their causes, inbox, turn outcomes);
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
import hashlib
import os
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs
import orjson
import trio

from ..log import (
    Event,
    Header,
    fold_consumed_work,
    repair_closers,
    scan_log,
    truncate_open_turn,
)
from ..store import LOG_NAME, escape_id
from ..tools.procgroup import reap_orphan_group
from .log_tail import LogTail, ShrunkError, log_item, log_items, open_turn
from .reports import BadReport, parse
from .runtime_view import RuntimeView, Worker
from .worker_process import Group, WorkerProcess, processes_under

SESSION_ID: Final = "demo"

#: Bounded waits (seconds): hang guards, never expectations about speed.
WAIT: Final = 30.0
TEARDOWN_BOUND: Final = 15.0
POLL: Final = 0.05

TESTS: Final = 200
TEST_PACE: Final = 0.4
#: The long-running tool: a stand-in test suite, one line per test. ``trap '' PIPE`` keeps it
#: going when its reader disappears (after kill -9 of the worker), as real work would.
RUN_TESTS_SH: Final = f"""#!/usr/bin/env bash
# A stand-in for a slow test suite: one line per test, one test every {TEST_PACE}s.
# It also appends to progress.log, so its work stays visible after its reader is gone.
trap '' PIPE
for i in $(seq 1 {TESTS}); do
  sleep {TEST_PACE}
  echo "test $i/{TESTS} ok"
  echo "test $i/{TESTS} ok" >> progress.log
done
echo "{TESTS} passed"
"""


class DemoError(Exception):
    """A scenario could not go on (a worker died unexpectedly, a wait ran out)."""


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
    ) -> None:
        self._nursery = nursery
        self.dir = directory
        #: The store root: inside ``directory`` (removed at teardown) unless the caller keeps
        #: the session in a root of its own (``trio-agent demo --keep DIR``).
        self.root = directory / "sessions" if root is None else root
        self.session_id = session_id
        self.workdir = directory / "work"
        self.log_path = self.root / escape_id(session_id) / LOG_NAME
        self.tail = LogTail(self.log_path)
        self.runtime = RuntimeView()
        #: Every input the runtime view was given, in order, as JSON: ``{"start": {"mode",
        #: "pid"}}``, ``{"worker": generation, "report": {...}}``, ``{"worker": generation,
        #: "exit": returncode}``. ``tests/demo/record_reports.py`` saves it to replay the view.
        self.inputs: list[dict[str, Any]] = []
        self.groups: dict[int, Group] = {}
        self.cut_after: int | None = None
        self.recovered_from: int | None = None
        #: The step the driver is running (facts are filed under it).
        self.step_index: int | None = None
        self.contrast: dict[str, Any] | None = None
        #: The file's bytes when the truncate report was made (to prove completion kept them).
        self.before_recovery: bytes | None = None
        self.facts: list[dict[str, Any]] = []
        self.failure: str | None = None
        self._process: WorkerProcess | None = None
        self.version = 0
        self._changed = trio.Event()

    @property
    def events(self) -> list[Event]:
        """The events of the session file's complete lines, as last polled."""
        return self.tail.events

    @property
    def header(self) -> Header | None:
        return self.tail.header

    @property
    def recovery_seqs(self) -> frozenset[int]:
        """Seqs of the events the store's crash recovery appended (reported by the worker)."""
        return self.runtime.recovery_seqs

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
        """Wait (bounded) until ``predicate()`` holds; the worker dying first is an error."""
        with trio.move_on_after(timeout) as scope:
            while not predicate():
                if self.failure is not None:
                    raise DemoError(self.failure)
                with trio.move_on_after(POLL * 4):
                    await self.wait_changed(self.version)
        if scope.cancelled_caught:
            raise DemoError(f"gave up after {timeout:g}s waiting for {what}")

    def fact(self, text: str, tone: str = "ok") -> None:
        """Record something a step measured, filed under the running step."""
        self.facts.append({"text": text, "tone": tone, "step": self.step_index})
        self.notify()

    # -- setup / teardown ------------------------------------------------------------------------

    def _prepare(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.workdir.mkdir()
        script = self.workdir / "run-tests.sh"
        script.write_text(RUN_TESTS_SH, encoding="utf-8")
        script.chmod(0o755)

    async def teardown(self) -> None:
        """Stop the worker and every process this run started. Bounded, shielded, idempotent."""
        with trio.move_on_after(TEARDOWN_BOUND, shield=True):
            if self._process is not None:
                await self._process.stop()
            self.poll_log()
            for group in list(self.groups.values()):
                with contextlib.suppress(ValueError, OSError):
                    await reap_orphan_group(group.pgid, group.identity, grace=0.5)
            # The net under the net: anything still working in our directory is ours.
            for _ in range(3):
                pids = processes_under(self.dir)
                if not pids:
                    break
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                await trio.sleep(0.05)
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
        worker = self.runtime.start_worker(mode, process.pid)
        self.inputs.append({"start": {"mode": mode, "pid": process.pid}})
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
        self.cut_after = self.events[-1].seq if self.events else None
        self.notify()
        return worker.pid

    async def _read_worker(self, process: WorkerProcess, worker: Worker) -> None:
        code = await process.read_lines(lambda line: self._on_report(worker, line))
        self.runtime.worker_exited(worker, code)
        self.inputs.append({"worker": worker.generation, "exit": code})
        if not process.expect_exit:
            self.failure = f"worker {worker.pid} {worker.exit} unexpectedly" + process.stderr_tail()
        self.notify()

    def _on_report(self, worker: Worker, line: bytes) -> None:
        try:
            report = parse(line)
        except BadReport as exc:
            # The worker and the engine are one program: a report that does not parse is a
            # bug, shown as the run's failure (one line naming the field), never a traceback.
            self.failure = f"worker {worker.pid}: {exc}"
        else:
            self.runtime.apply(worker, report)
            self.inputs.append({"worker": worker.generation, "report": orjson.loads(line)})
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
                d = event.data
                self.groups[d["pgid"]] = Group(d["pgid"], d["identity"], d["callId"], event.seq)
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
        try:
            return (self.workdir / "progress.log").read_text().splitlines()
        except OSError:
            return []

    # -- the truncate contrast (read-only) -----------------------------------------------------

    async def compute_contrast(self) -> dict[str, Any]:
        """What truncation would drop next to what completion appends; writes nothing."""
        from ..store import JsonlStore

        before = self.log_path.read_bytes()
        scan = scan_log(before, strict=False)
        report = truncate_open_turn(scan.events)
        async with JsonlStore(self.root, reap_orphans=None) as store:
            inspected = await store.inspect(self.session_id)
        closers = inspected[len(scan.events) :]
        if [e.type for e in closers] != [e.type for e in repair_closers(scan.checker)]:
            raise DemoError("store.inspect and the pure core disagree about the closers")
        after = self.log_path.read_bytes()
        self.before_recovery = before
        self.contrast = {
            "truncate": report.to_json(),
            "droppedSeqs": [e.seq for e in report.dropped],
            "spawned": [
                {"pgid": e.data["pgid"], "callId": e.data["callId"]}
                for e in report.dropped
                if e.type == "tool/spawned"
            ],
            "complete": {
                "keptEvents": len(scan.events),
                "deletedEvents": 0,
                "closers": [log_item(e, 0, "would-append") for e in closers],
            },
            "file": {
                "bytes": len(after),
                "sha256": hashlib.sha256(after).hexdigest()[:16],
                "unchanged": before == after,
            },
        }
        self.notify()
        return self.contrast

    # -- the snapshot ------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        items = log_items(self.events, self.recovery_seqs)
        if self.contrast is not None:
            dropped = set(self.contrast["droppedSeqs"])
            for item in items:
                if item["seq"] in dropped:
                    item["would"] = "drop"
        fold = fold_consumed_work(self.events)
        worker_running = self.worker is not None and self.worker.state == "running"
        groups = [g.to_json(worker_running=worker_running) for g in self.groups.values()]
        progress = self.progress()
        runtime = self.runtime.to_json()
        notes = runtime.pop("notes")
        return {
            "log": {
                "path": str(self.log_path),
                "items": items,
                "cutAfter": self.cut_after,
                "recoveredFrom": self.recovered_from,
                "openTurn": open_turn(self.events),
            },
            "runtime": {
                **runtime,
                "groups": groups,
                "progress": {"lines": len(progress), "last": progress[-1] if progress else None},
                "fold": {"endSeq": fold.end_seq, "droppedUnrun": fold.dropped_unrun},
                "notes": notes,
            },
            "contrast": self.contrast,
            "facts": self.facts,
        }


@contextlib.asynccontextmanager
async def open_run(*, root: Path | None = None, session_id: str = SESSION_ID) -> AsyncIterator[Run]:
    """A fresh run in its own temporary directory, torn down (bounded) on exit.

    With ``root`` the session lives in that store root instead and stays there after the
    run (the work directory and the worker's stderr are still removed).
    """
    directory = Path(tempfile.mkdtemp(prefix="trio-agent-demo-"))
    async with trio.open_nursery() as nursery:
        run = Run(nursery, directory, root=root, session_id=session_id)
        try:
            run._prepare()
            nursery.start_soon(run._poller)
            yield run
        finally:
            await run.teardown()
            nursery.cancel_scope.cancel()


# -- scenarios and the driver ----------------------------------------------------------------


Action = Callable[[Run], Awaitable[None]]


@attrs.frozen
class Step:
    label: str
    caption: str
    action: Action


@attrs.frozen
class Scenario:
    name: str
    title: str
    summary: str
    setup: Action
    steps: tuple[Step, ...]


class Driver:
    """Plays one scenario on one run: ``step``, ``play``/``pause``, with a live snapshot."""

    def __init__(self, scenario: Scenario, run: Run, *, dwell: float = 2.5) -> None:
        self.scenario = scenario
        self.run = run
        self.dwell = dwell
        self.completed = 0
        self.target = 0
        self.running: int | None = None
        self.playing = False
        self.ready = False
        self.error: str | None = None
        self._wake = trio.Event()

    # -- commands (synchronous: they only change intent; :meth:`main` acts on it) ---------------

    def _poke(self) -> None:
        self._wake.set()
        self.run.notify()

    @property
    def done(self) -> bool:
        return self.completed >= len(self.scenario.steps)

    def step(self) -> None:
        """Run the next step (ignored while one is running, when playing, or when done)."""
        if self.running is None and not self.playing and not self.done and self.error is None:
            self.target = self.completed + 1
            self._poke()

    def play(self, dwell: float | None = None) -> None:
        if dwell is not None:
            self.dwell = dwell
        if not self.done and self.error is None:
            self.playing = True
            self.target = len(self.scenario.steps)
            self._poke()

    def pause(self) -> None:
        self.playing = False
        self.target = self.completed + (1 if self.running is not None else 0)
        self._poke()

    # -- the loop --------------------------------------------------------------------------------

    async def main(self, on_step: Callable[[int], Awaitable[None]] | None = None) -> None:
        """Set the scenario up, then run steps as commanded, forever (cancel to stop)."""
        try:
            await self.scenario.setup(self.run)
            self.ready = True
            self.run.notify()
            while True:
                while self.completed >= self.target:
                    self._wake = trio.Event()
                    await self._wake.wait()
                index = self.completed
                self.running = index
                self.run.step_index = index
                self.run.notify()
                await self.scenario.steps[index].action(self.run)
                self.running = None
                self.completed += 1
                if self.done:
                    self.playing = False
                self.run.notify()
                if on_step is not None:
                    await on_step(index)
                if self.playing and not self.done and self.dwell > 0:
                    with trio.move_on_after(self.dwell):
                        self._wake = trio.Event()
                        while self.playing:
                            await self._wake.wait()
                            self._wake = trio.Event()
        except DemoError as exc:
            self.error = str(exc)
            self.running = None
            self.playing = False
            self.run.notify()
            raise

    def snapshot(self) -> dict[str, Any]:
        sc = self.scenario
        current = self.running if self.running is not None else self.completed - 1
        steps = []
        for i, step in enumerate(sc.steps):
            state = "done" if i < self.completed else "running" if i == self.running else "pending"
            steps.append({"label": step.label, "caption": step.caption, "state": state})
        caption = None
        if 0 <= current < len(sc.steps):
            caption = {"index": current, "label": sc.steps[current].label}
        return {
            "scenario": {"name": sc.name, "title": sc.title, "summary": sc.summary},
            "steps": steps,
            "current": caption,
            "completed": self.completed,
            "running": self.running,
            "playing": self.playing,
            "ready": self.ready,
            "done": self.done,
            "error": self.error,
            **self.run.state(),
        }
