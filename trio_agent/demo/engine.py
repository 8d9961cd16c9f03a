"""The scenario engine shared by the terminal and the web front ends.

One :class:`Run` is one scenario run: its own temporary directory holding a JSONL session
store and a work directory, the worker processes (``python -m trio_agent.demo.worker``) that
run the real agent on that session, and two views:

* the **log** is read back from the session file itself, complete lines only, so the left
  pane shows exactly what is durable (a line still in the writer's batch is not shown yet, a
  torn final line never is);
* the **runtime** is what the worker reports on stdout (agent status, controllers and their
  causes, inbox, turn outcomes), plus what the engine sees in ``/proc`` (the tool's process
  group, alive or gone, even after the worker that started it was killed).

A :class:`Driver` plays a scenario's steps on a run: ``step`` runs one action, ``play``
runs the rest with a pause (``dwell``) between them; the runtime keeps running in real time
between steps. Front ends read :meth:`Driver.snapshot`, a JSON-able dict, whenever
:attr:`Run.changed` fires.

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
import subprocess
import sys
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
    LogError,
    decode_event,
    decode_header,
    fold_consumed_work,
    repair_closers,
    scan_log,
    truncate_open_turn,
)
from ..log.render import describe
from ..log.rules import REPAIR_ONLY_CODES
from ..store import LOG_NAME, escape_id
from ..tools.procgroup import (
    group_members,
    leader_identity,
    process_identity,
    reap_orphan_group,
)

SESSION_ID: Final = "demo"
#: The package's parent directory: put on the worker's PYTHONPATH so ``-m`` finds us.
PACKAGE_PARENT: Final = str(Path(__file__).resolve().parents[2])

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


_PIPE_ERRORS: Final = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


class DemoError(Exception):
    """A scenario could not go on (a worker died unexpectedly, a wait ran out)."""


# -- log items (what the left pane shows) ------------------------------------------------------


def tone_of(event: Event) -> str:
    """A colour class for an event: the endings and drops this project is about stand out."""
    d: Any = event.data
    kind = event.type
    if kind == "turn/end":
        return str(d["reason"]["kind"])  # completed, aborted, interrupted, error, ...
    if kind == "agent/inbox/spliced":
        if "outcome" in d:
            return "dropped"
        return "claim" if d.get("removedCount") else "queue"
    if kind == "tool/result":
        code = (d.get("error") or {}).get("code")
        if code in REPAIR_ONLY_CODES:
            return "placeholder"
        if code is not None:
            return "aborted" if code.startswith("ABORTED") else "error"
        return "ok"
    if kind == "assistant/message" and d.get("interrupted"):
        return "aborted"
    if kind in ("tool/call", "tool/spawned"):
        return "dispatch"
    if kind == "tool/output":
        return "output"
    if kind == "assistant/chunk":
        return "chunk"
    if kind in ("turn/start", "step/start", "step/end"):
        return "boundary"
    return "plain"


def log_item(event: Event, depth: int, origin: str) -> dict[str, Any]:
    item = {
        "seq": event.seq,
        "type": event.type,
        "text": describe(event),
        "depth": depth,
        "tone": tone_of(event),
        "origin": origin,
    }
    d: Any = event.data
    if event.type == "assistant/chunk" and d["chunk"]["type"] == "text-delta":
        item["delta"] = d["chunk"]["text"]  # front ends fold a run of these into one line
    return item


def log_items(events: Sequence[Event], recovery: frozenset[int]) -> list[dict[str, Any]]:
    items = []
    depth = 0
    for event in events:
        if event.type in ("turn/end", "step/end"):
            depth = max(0, depth - 1)
        origin = "recovery" if event.seq in recovery else "loop"
        items.append(log_item(event, depth, origin))
        if event.type in ("turn/start", "step/start"):
            depth += 1
    return items


# -- /proc helpers ---------------------------------------------------------------------------


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return "?"


def group_alive(pgid: int, identity: str) -> list[int]:
    """Live members of a tool's process group, if it is still the group the log names."""
    current = process_identity(pgid)
    if current is not None and current != leader_identity(identity):
        return []  # the pid now belongs to someone else: our group is long gone
    return group_members(pgid)


def processes_under(directory: Path) -> list[int]:
    """Pids of live processes whose working directory is inside ``directory``."""
    found = []
    prefix = str(directory.resolve())
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{name}/cwd")
        except OSError:
            continue
        if cwd == prefix or cwd.startswith(prefix + os.sep):
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    state = f.read().rpartition(b")")[2].split()[0]
            except (OSError, IndexError):
                continue
            if state not in (b"Z", b"X"):
                found.append(int(name))
    return found


# -- runtime state (what the right pane shows) ---------------------------------------------------


@attrs.define
class Controller:
    n: int
    turn: int | None = None
    states: list[str] = attrs.Factory(list)
    cause: str | None = None
    released_before_seq: int | None = None
    prevented: bool = False
    worker: int = 1
    lost: bool = False


@attrs.define
class Group:
    pgid: int
    identity: str
    call_id: str
    spawned_seq: int
    members: list[str] = attrs.Factory(list)
    alive: bool = True
    was_orphaned: bool = False


@attrs.define
class Worker:
    generation: int
    mode: str
    pid: int
    state: str = "starting"  # starting, running, killed, exited
    ready: bool = False
    exit: str | None = None


@attrs.define
class RuntimeState:
    workers: list[Worker] = attrs.Factory(list)
    status: str = "idle"
    current: int | None = None
    controllers: dict[int, Controller] = attrs.Factory(dict)
    inbox: dict[str, list[str]] = attrs.Factory(lambda: {"next_turn": [], "next_step": []})
    outcomes: list[dict[str, Any]] = attrs.Factory(list)
    dropped: list[dict[str, Any]] = attrs.Factory(list)
    recovery: list[dict[str, Any]] | None = None
    notes: list[str] = attrs.Factory(list)

    @property
    def worker(self) -> Worker | None:
        return self.workers[-1] if self.workers else None

    def controller(self, n: int) -> Controller:
        if n not in self.controllers:
            self.controllers[n] = Controller(n)
        return self.controllers[n]


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
        self.header: Header | None = None
        self.events: list[Event] = []
        self._offset = 0
        self.runtime = RuntimeState()
        self.groups: dict[int, Group] = {}
        self.cut_after: int | None = None
        self.recovered_from: int | None = None
        #: Seqs of the events the store's crash recovery appended (reported by the worker).
        self.recovery_seqs: frozenset[int] = frozenset()
        #: The step the driver is running (facts are filed under it).
        self.step_index: int | None = None
        self.contrast: dict[str, Any] | None = None
        #: The file's bytes when the truncate report was made (to prove completion kept them).
        self.before_recovery: bytes | None = None
        self.facts: list[dict[str, Any]] = []
        self.failure: str | None = None
        self._proc: trio.Process | None = None
        self._stdin: trio.abc.SendStream | None = None
        self._expect_exit = False
        self._stderr_path: Path | None = None
        self._controller_ids: dict[tuple[int, int], int] = {}
        self.version = 0
        self._changed = trio.Event()

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
            proc = self._proc
            if proc is not None and proc.returncode is None:
                self._expect_exit = True
                with contextlib.suppress(*_PIPE_ERRORS):
                    await self._send_raw({"cmd": "shutdown"})
                with trio.move_on_after(5):
                    await proc.wait()
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
            if self._stdin is not None:
                with contextlib.suppress(*_PIPE_ERRORS):
                    await self._stdin.aclose()
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
        if self._proc is not None and self._proc.returncode is None:
            raise DemoError("a worker is already running")
        generation = len(self.runtime.workers) + 1
        argv = [
            sys.executable,
            "-m",
            "trio_agent.demo.worker",
            "--root",
            str(self.root),
            "--session",
            self.session_id,
            "--mode",
            mode,
            "--workdir",
            str(self.workdir),
            "--script",
            orjson.dumps(list(script)).decode(),
        ]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (PACKAGE_PARENT, env.get("PYTHONPATH", "")) if p
        )
        self._stderr_path = self.dir / f"worker-{generation}.stderr"
        self._expect_exit = False
        with open(self._stderr_path, "wb") as stderr:
            proc = await trio.lowlevel.open_process(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,  # Ctrl+C in a terminal reaches the engine, not the worker
                env=env,
            )
        self._proc = proc
        self._stdin = proc.stdin
        worker = Worker(generation, mode, proc.pid)
        self.runtime.workers.append(worker)
        self.notify()
        self._nursery.start_soon(self._read_worker, proc, worker)
        await self.wait_until(lambda: worker.ready, "the worker to open the session")
        return worker

    async def _send_raw(self, cmd: Mapping[str, Any]) -> None:
        if self._stdin is None:
            raise DemoError("no worker")
        await self._stdin.send_all(orjson.dumps(cmd) + b"\n")

    async def send(self, cmd: Mapping[str, Any]) -> None:
        """Send a command to the running worker."""
        worker = self.worker
        if worker is None or worker.state != "running":
            raise DemoError("the worker is not running")
        await self._send_raw(cmd)

    async def kill_worker(self) -> int:
        """``kill -9`` the worker; return once it is dead and reaped (and the log re-read)."""
        proc, worker = self._proc, self.worker
        if proc is None or worker is None or proc.returncode is not None:
            raise DemoError("no running worker to kill")
        self._expect_exit = True
        proc.send_signal(signal.SIGKILL)
        await self.wait_until(lambda: worker.state == "killed", "the worker to die")
        self.poll_log()
        self.cut_after = self.events[-1].seq if self.events else None
        self.notify()
        return worker.pid

    async def _read_worker(self, proc: trio.Process, worker: Worker) -> None:
        assert proc.stdout is not None
        buffer = b""
        try:
            while True:
                data = await proc.stdout.receive_some(65536)
                if not data:
                    break
                buffer += data
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        self._on_report(worker, line)
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                await proc.wait()
        code = proc.returncode
        if code is not None and code < 0 and -code == signal.SIGKILL:
            worker.state, worker.exit = "killed", "killed by SIGKILL"
        else:
            worker.state, worker.exit = "exited", f"exited with code {code}"
        worker.ready = False
        self.runtime.status = "gone"
        self.runtime.current = None
        for c in self.runtime.controllers.values():
            mine = c.worker == worker.generation and c.turn is not None
            if mine and c.released_before_seq is None and worker.state == "killed" and not c.lost:
                c.lost = True
                c.states.append("died with the worker: no cancel, no finally, no turn/end")
        if not self._expect_exit:
            self.failure = f"worker {worker.pid} {worker.exit} unexpectedly" + self._stderr_tail()
        self.notify()

    def _stderr_tail(self) -> str:
        try:
            text = self._stderr_path.read_text(errors="replace") if self._stderr_path else ""
        except OSError:
            return ""
        lines = [line for line in text.splitlines() if line.strip()]
        return (": " + " | ".join(lines[-3:])) if lines else ""

    def _global(self, worker: Worker, n: int | None) -> int | None:
        """Number controllers across workers: each worker counts its own from 1."""
        return None if n is None else self._number(worker, n)

    def _number(self, worker: Worker, n: int) -> int:
        key = (worker.generation, n)
        if key not in self._controller_ids:
            self._controller_ids[key] = len(self._controller_ids) + 1
            self.runtime.controller(self._controller_ids[key]).worker = worker.generation
        return self._controller_ids[key]

    def _on_report(self, worker: Worker, line: bytes) -> None:
        try:
            r = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        if not isinstance(r, dict):
            return
        rt = self.runtime
        kind = r.get("type")
        if kind == "ready":
            worker.state, worker.ready = "running", True
            rt.status, rt.current = "idle", None
        elif kind == "recovered":
            rt.recovery = r["closers"]
            self.recovery_seqs = frozenset(c["seq"] for c in r["closers"])
        elif kind == "status":
            rt.status = r["status"]
        elif kind == "current":
            n = self._global(worker, r["controller"])
            rt.current = n
            if n is not None:
                rt.controller(n)
        elif kind == "controller":
            c = rt.controller(self._number(worker, r["controller"]))
            c.turn = r["turn"]
            if r["state"] == "live":
                c.states.append(f"live from turn/start (seq {r['seq']})")
            elif r["state"] == "released":
                c.released_before_seq = r["seq"]
                c.states.append(f"released before turn/end (seq {r['seq']})")
            else:
                c.states.append(f"STILL HELD at turn/end (seq {r['seq']})")
        elif kind == "cancel":
            n = self._global(worker, r.get("controller"))
            if n is not None and r.get("hit"):
                c = rt.controller(n)
                c.cause = r["cause"]
                c.states.append(f"cancelled, cause {r['cause']}")
            elif n is None:
                rt.notes.append("cancel while idle: nothing to cancel, nothing armed")
        elif kind == "prevented":
            n = next((c.n for c in reversed(rt.controllers.values()) if c.cause), None)
            if n is not None:
                c = rt.controller(n)
                c.prevented = True
                c.states.append("closed: its turn never started (no turn/start)")
        elif kind == "inbox":
            rt.inbox = {"next_turn": r["next_turn"], "next_step": r["next_step"]}
        elif kind == "turn_ended":
            rt.outcomes.append({"turn": r["turn"], "reason": r["reason"], "cause": r["cause"]})
        elif kind == "inbox_dropped":
            for text in r["texts"]:
                rt.dropped.append({"text": text, "target": r["target"], "cause": r["cause"]})
        elif kind in ("agent_error", "bad_command"):
            rt.notes.append(f"{kind}: {r.get('message')}")
        self.notify()

    # -- tailing the session file ---------------------------------------------------------------

    def poll_log(self) -> bool:
        """Read complete lines appended since the last poll. True if anything new arrived."""
        try:
            with open(self.log_path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < self._offset:
                    raise DemoError("the session file shrank below what was already shown")
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return False
        new = False
        start = 0
        while self.failure is None:
            newline = data.find(b"\n", start)
            if newline < 0:
                break  # an incomplete last line: not durable yet, or torn; never shown
            line = data[start:newline]
            try:
                if self.header is None:
                    self.header = decode_header(line)
                else:
                    event = decode_event(line)
                    self.events.append(event)
                    new = True
                    if event.type == "tool/spawned":
                        d = event.data
                        self.groups[d["pgid"]] = Group(
                            d["pgid"], d["identity"], d["callId"], event.seq
                        )
            except LogError as exc:
                self.failure = f"the session file has a bad line: {exc}"
                break
            start = newline + 1
        self._offset += start
        if new or self.failure is not None:
            self.notify()
        return new

    def poll_groups(self) -> bool:
        changed = False
        worker_alive = self.worker is not None and self.worker.state in ("starting", "running")
        for group in self.groups.values():
            pids = group_alive(group.pgid, group.identity)
            members = [f"{pid} {_comm(pid)}" for pid in pids]
            alive = bool(pids)
            orphaned = alive and not worker_alive
            if (
                members != group.members
                or alive != group.alive
                or (orphaned and not group.was_orphaned)
            ):
                group.members, group.alive = members, alive
                group.was_orphaned = group.was_orphaned or orphaned
                changed = True
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
        rt = self.runtime
        groups = [
            {
                "pgid": g.pgid,
                "callId": g.call_id,
                "alive": g.alive,
                "members": g.members,
                "orphaned": g.alive and not (self.worker and self.worker.state == "running"),
                "wasOrphaned": g.was_orphaned,
            }
            for g in self.groups.values()
        ]
        progress = self.progress()
        return {
            "log": {
                "path": str(self.log_path),
                "items": items,
                "cutAfter": self.cut_after,
                "recoveredFrom": self.recovered_from,
                "openTurn": _open_turn(self.events),
            },
            "runtime": {
                "workers": [attrs.asdict(w) for w in rt.workers],
                "status": rt.status,
                "current": rt.current,
                "controllers": [
                    attrs.asdict(c)
                    for c in rt.controllers.values()
                    if c.turn is not None or c.cause is not None
                ],
                "inbox": rt.inbox,
                "outcomes": rt.outcomes,
                "dropped": rt.dropped,
                "recovery": rt.recovery,
                "groups": groups,
                "progress": {"lines": len(progress), "last": progress[-1] if progress else None},
                "fold": {"endSeq": fold.end_seq, "droppedUnrun": fold.dropped_unrun},
                "notes": rt.notes,
            },
            "contrast": self.contrast,
            "facts": self.facts,
        }


def _open_turn(events: Sequence[Event]) -> int | None:
    turn = None
    for e in events:
        if e.type == "turn/start":
            turn = e.data["turn"]
        elif e.type == "turn/end":
            turn = None
    return turn


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
