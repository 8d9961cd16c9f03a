"""The processes a run starts: the worker, and the tool groups it may leave behind.

A :class:`WorkerProcess` is one ``python -m trio_agent.demo.worker`` child: started in a
session of its own (Ctrl+C in a terminal reaches the engine, not the worker), commanded by
JSON lines on its stdin, read line by line on its stdout, its stderr kept in a file for the
error message if it dies unexpectedly.

The ``/proc`` probes tell whether a tool's process group (named by the log's ``tool/spawned``)
is still alive, even after the worker that started it was killed, and find any process still
working in a run's directory, so teardown can stop everything a run started
(:func:`stop_leftovers`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs
import orjson
import trio

from ..log import Event
from ..procs.census import (
    comm,
    group_members,
    leader_identity,
    namespace_init,
    namespace_members,
    open_pid_namespace,
    process_identity,
)
from ..procs.orphans import reap_orphan_group

__all__ = [
    "PIPE_ERRORS",
    "Group",
    "PinnedNamespace",
    "WorkerProcess",
    "group_alive",
    "namespace_alive",
    "pin_namespace",
    "processes_under",
    "stop_leftovers",
]

#: The package's parent directory: put on the worker's PYTHONPATH so ``-m`` finds us.
PACKAGE_PARENT: Final = str(Path(__file__).resolve().parents[2])
#: What writing to a worker that is gone may raise.
PIPE_ERRORS: Final = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)
#: How long a worker asked to shut down, or killed, may take to exit (seconds; a hang guard).
EXIT_BOUND: Final = 5.0


class WorkerProcess:
    """One worker child process (see the module docstring). Make it with :meth:`start`."""

    def __init__(self, proc: trio.Process, stderr_path: Path) -> None:
        self._proc = proc
        self._stdin = proc.stdin
        self.stderr_path = stderr_path
        #: Set before an exit the run asked for (shutdown, kill): it is then no failure.
        self.expect_exit = False

    @classmethod
    async def start(
        cls,
        *,
        root: Path,
        session_id: str,
        mode: str,
        workdir: Path,
        script: Sequence[Mapping[str, Any]],
        stderr_path: Path,
    ) -> WorkerProcess:
        argv = [
            sys.executable,
            "-m",
            "trio_agent.demo.worker",
            "--root",
            str(root),
            "--session",
            session_id,
            "--mode",
            mode,
            "--workdir",
            str(workdir),
            "--script",
            orjson.dumps(list(script)).decode(),
        ]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (PACKAGE_PARENT, env.get("PYTHONPATH", "")) if p
        )
        with open(stderr_path, "wb") as stderr:
            proc = await trio.lowlevel.open_process(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,  # Ctrl+C in a terminal reaches the engine, not the worker
                env=env,
            )
        return cls(proc, stderr_path)

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    async def send(self, cmd: Mapping[str, Any]) -> None:
        """Write one command line to the worker's stdin."""
        assert self._stdin is not None
        await self._stdin.send_all(orjson.dumps(cmd) + b"\n")

    def kill(self) -> None:
        """``kill -9`` the worker (an exit the run asked for)."""
        self.expect_exit = True
        self._proc.send_signal(signal.SIGKILL)

    async def read_lines(self, on_line: Callable[[bytes], None]) -> int | None:
        """Call ``on_line`` with each non-blank stdout line until end of output, then wait
        (bounded, shielded) for the exit and return the return code."""
        proc = self._proc
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
                        on_line(line)
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(EXIT_BOUND):
                await proc.wait()
        return proc.returncode

    async def stop(self) -> None:
        """Ask a running worker to shut down, kill it if it does not, close its stdin."""
        proc = self._proc
        if proc.returncode is None:
            self.expect_exit = True
            with contextlib.suppress(*PIPE_ERRORS):
                await self.send({"cmd": "shutdown"})
            with trio.move_on_after(EXIT_BOUND):
                await proc.wait()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        if self._stdin is not None:
            with contextlib.suppress(*PIPE_ERRORS):
                await self._stdin.aclose()

    def stderr_tail(self) -> str:
        """The last three non-blank lines of the worker's stderr, as ``": a | b | c"``."""
        try:
            text = self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""
        lines = [line for line in text.splitlines() if line.strip()]
        return (": " + " | ".join(lines[-3:])) if lines else ""


# -- tool process groups and /proc -----------------------------------------------------------


@attrs.define
class Group:
    """A tool's process group, as the log's ``tool/spawned`` names it and ``/proc`` shows it."""

    pgid: int
    identity: str
    call_id: str
    spawned_seq: int
    members: list[str] = attrs.Factory(list)
    alive: bool = True
    was_orphaned: bool = False
    #: As ``tool/spawned`` recorded it (spec/tools.md §10); an older log's is the group's.
    containment: str = "process-group"
    #: Under ``pid-namespace``: the namespace, pinned once seen; its processes are the call's
    #: even after the bwrap that made it is gone.
    namespace: PinnedNamespace | None = None

    @classmethod
    def from_spawned(cls, event: Event) -> Group:
        """The group a ``tool/spawned`` event names (alive until ``/proc`` says otherwise)."""
        d = event.data
        contained = d.get("containment")
        group = cls(d["pgid"], d["identity"], d["callId"], event.seq)
        if isinstance(contained, str):
            group.containment = contained
        return group

    def refresh(self, *, worker_alive: bool) -> bool:
        """Look the group up in ``/proc`` again; a group alive while no worker runs is
        orphaned (and stays marked so). True if anything changed."""
        if self.containment == "pid-namespace":
            pids, self.namespace = namespace_alive(self.pgid, self.identity, self.namespace)
        else:
            pids = group_alive(self.pgid, self.identity)
        members = [f"{pid} {comm(pid)}" for pid in pids]
        alive = bool(pids)
        orphaned = alive and not worker_alive
        if (
            members == self.members
            and alive == self.alive
            and not (orphaned and not self.was_orphaned)
        ):
            return False
        self.members, self.alive = members, alive
        self.was_orphaned = self.was_orphaned or orphaned
        return True

    def close(self) -> None:
        """Let go of the pinned namespace, if any (the run is over)."""
        if self.namespace is not None:
            self.namespace.close()

    def to_json(self, *, worker_running: bool) -> dict[str, Any]:
        return {
            "pgid": self.pgid,
            "callId": self.call_id,
            "alive": self.alive,
            "members": self.members,
            "orphaned": self.alive and not worker_running,
            "wasOrphaned": self.was_orphaned,
        }


def group_alive(pgid: int, identity: str) -> list[int]:
    """Live members of a tool's process group, if it is still the group the log names."""
    current = process_identity(pgid)
    if current is not None and current != leader_identity(identity):
        return []  # the pid now belongs to someone else: our group is long gone
    return group_members(pgid)


@attrs.define
class PinnedNamespace:
    """A call's PID namespace, held by an open descriptor of it (``/proc/<init>/ns/pid``).

    The kernel numbers each new namespace with the lowest free inode number, so once a
    namespace ends its number soon belongs to the next one made on the host: a probe that
    kept only the number would count that namespace's processes (another call's, another
    program's) as the call's. While the descriptor is open the namespace object lives on,
    its processes gone or not, and keeps its number."""

    init: int
    inode: int
    fd: int | None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def pin_namespace(leader: int) -> PinnedNamespace | None:
    """The PID namespace that ``leader`` (a bwrap we started) made, pinned; ``None`` if there
    is none (yet, or any more)."""
    init = namespace_init(leader)
    if init is None:
        return None
    fd = open_pid_namespace(init)
    if fd is None:  # it exited since
        return None
    if namespace_init(leader) != init:  # it exited and its pid went to another before the open
        os.close(fd)
        return None
    return PinnedNamespace(init, os.fstat(fd).st_ino, fd)


def namespace_alive(
    pgid: int, identity: str, namespace: PinnedNamespace | None
) -> tuple[list[int], PinnedNamespace | None]:
    """Live processes of a call contained in a PID namespace (spec/tools.md §10), and the
    namespace, pinned: the command's processes, not the containment's (bwrap, ``pgid``, and
    its init hold the namespace and die with it). The namespace is learnt from the leader
    while it lives and kept, so its processes are seen even after the leader is gone; until
    the namespace exists, the leader stands for it."""
    leader = group_alive(pgid, identity)
    if namespace is None and leader:
        namespace = pin_namespace(pgid)
    if namespace is None:
        return leader, None
    return namespace_members(namespace.inode, init=namespace.init) or leader, namespace


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


async def stop_leftovers(groups: Iterable[Group], directory: Path) -> None:
    """Stop every tool group in ``groups`` (if it is still the group the log names), then,
    the net under the net, kill anything still working in ``directory``: it is ours."""
    for group in list(groups):
        with contextlib.suppress(ValueError, OSError):
            await reap_orphan_group(group.pgid, group.identity, grace=0.5)
    for _ in range(3):
        pids = processes_under(directory)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        await trio.sleep(0.05)
