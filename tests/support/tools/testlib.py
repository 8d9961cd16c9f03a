"""Shared helpers for the process-group tests: a recording tool context and /proc probes.

Waiting helpers poll real /proc state (with tests/support's ``until``, ``alive`` and
``in_group``); their bounds are hang guards only.
"""

from __future__ import annotations

import errno
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import trio

from support.polling import until
from support.proc import alive, in_group
from support.procenv import child_env
from trio_agent.cancel import CancelCause, ControllerView
from trio_agent.log.events import Containment
from trio_agent.tools.base import Stream
from trio_agent.tools.run_group import GroupResult, ProcessOptions, Spawned

#: Generous bound on any single wait in these tests; reaching it means a hang, not slowness.
HANG_GUARD = 120.0
#: The variable carrying each test's tag (conftest.py): every process a test starts has it.
TAG_VAR = "TRIO_AGENT_TOOLS_TEST_TAG"

#: A Python child that answers SIGUSR1 with "pong". Reading "pong" after some operation
#: proves the operation sent it no fatal signal: a pending SIGTERM (default action) or SIGKILL
#: would have ended it before the Python-level handler could run.
PONG_CHILD = """
import signal, sys, time
def pong(signum, frame):
    print("pong", flush=True)
signal.signal(signal.SIGUSR1, pong)
print("ready", flush=True)
while True:
    time.sleep(3600)
"""


def pgid_and_sid(pid: int) -> tuple[int, int]:
    """Independent of the code under test: ask ps(1)."""
    out = subprocess.run(
        ["ps", "-o", "pgid=,sid=", "-p", str(pid)], capture_output=True, text=True, check=True
    ).stdout.split()
    return int(out[0]), int(out[1])


async def wait_members(pgid: int, count: int) -> list[int]:
    """Wait until the group has at least ``count`` live members (the tree has started),
    counted by the tests' own probe (:func:`support.proc.in_group`), not the census under test."""
    await until(lambda: len(in_group(pgid)) >= count)
    return in_group(pgid)


async def wait_gone(pid: int) -> None:
    await until(lambda: not alive(pid))


class LineReader:
    """Reads lines from a trio receive stream (test plumbing only)."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        self._buf = b""

    async def line(self) -> str:
        with trio.fail_after(HANG_GUARD):
            while b"\n" not in self._buf:
                data = await self._stream.receive_some()
                if not data:
                    raise EOFError(f"stream ended; partial line {self._buf!r}")
                self._buf += data
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode()


async def start_pong_child(
    argv_prefix: Sequence[str] = (),
) -> tuple[trio.Process, LineReader]:
    """Start :data:`PONG_CHILD` in a new session and wait until its handler is installed."""
    proc = await trio.lowlevel.open_process(
        [*argv_prefix, sys.executable, "-c", PONG_CHILD],
        start_new_session=True,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    reader = LineReader(proc.stdout)
    assert await reader.line() == "ready"
    return proc, reader


async def ping(pid: int, reader: LineReader) -> None:
    """Prove ``pid`` is alive and has received no fatal signal so far (see PONG_CHILD)."""
    os.kill(pid, signal.SIGUSR1)
    assert await reader.line() == "pong"


@attrs.define
class _Controller:
    """A ``ControllerView`` whose fields a test sets by hand."""

    cancel_called: bool = False
    cause: CancelCause | None = None
    turn: int | None = 1


@attrs.define
class Recorder:
    """A real ``ToolContext`` and ``run_group`` callback sink that records every call."""

    turn: int = 1
    step: int = 1
    call_id: str = "call-1"
    controller: ControllerView = attrs.field(factory=_Controller)
    spawns: list[tuple[int, str]] = attrs.field(factory=list)
    chunks: list[tuple[Stream, str]] = attrs.field(factory=list)
    details: list[str] = attrs.field(factory=list)
    aborts: list[GroupResult] = attrs.field(factory=list)
    #: Runs at each ``flush`` (the spawn gate); what it sees is recorded in ``flushes``.
    on_flush: Callable[[], object] | None = None
    flushes: list[object] = attrs.field(factory=list)
    spawn_records: list[Spawned] = attrs.field(factory=list)

    async def flush(self) -> None:
        await trio.lowlevel.checkpoint()
        self.flushes.append(self.on_flush() if self.on_flush is not None else None)

    def output(self, stream: Stream, text: str) -> None:
        self.chunks.append((stream, text))

    def spawned(
        self, pgid: int, identity: str, *, containment: str | None = None, owner: str | None = None
    ) -> None:
        self.spawns.append((pgid, identity))
        kind: Containment = "pid-namespace" if containment == "pid-namespace" else "process-group"
        self.spawn_records.append(Spawned(pgid, identity, kind, owner or "?"))

    def on_spawned(self, spawned: Spawned) -> None:
        """``run_group``'s callback: the same record as :meth:`spawned`."""
        self.spawns.append((spawned.pgid, spawned.identity))
        self.spawn_records.append(spawned)

    def abort_detail(self, text: str) -> None:
        self.details.append(text)

    def on_abort(self, result: GroupResult) -> None:
        self.aborts.append(result)

    def text(self, stream: Stream = "stdout") -> str:
        return "".join(t for s, t in self.chunks if s == stream)

    @property
    def pgid(self) -> int:
        assert len(self.spawns) == 1, self.spawns
        return self.spawns[0][0]

    def callbacks(self) -> dict[str, Any]:
        return {"on_spawned": self.on_spawned, "on_output": self.output, "on_abort": self.on_abort}


#: A stand-in for the agent runtime: runs a tool through run_group and reports the group
#: the way ``tool/spawned`` would record it; with ``gated`` after the script, through the
#: spawn gate as the agent's tools do (its ``ready`` returns at once).
RUNTIME = """
import sys
import trio
from trio_agent.tools.run_group import run_group

def spawned(s):
    print(s.pgid, s.identity, s.containment, s.owner, flush=True)

async def main():
    ready = trio.lowlevel.checkpoint if sys.argv[2:] == ["gated"] else None
    await run_group(
        ["bash", "-c", sys.argv[1]], on_spawned=spawned, on_output=lambda s, t: None, ready=ready
    )

trio.run(main)
"""


async def runtime_killed_mid_tool(
    script: str, started: Callable[[int, str], bool]
) -> tuple[int, str, int]:
    """Start :data:`RUNTIME` running ``script``, wait until ``started(pgid, identity)`` holds
    (hang-guarded), SIGKILL the runtime; return the orphaned ``(pgid, identity)`` and the dead
    runtime's pid."""
    spawned, runtime = await kill_runtime_mid_tool(script, lambda s: started(s.pgid, s.identity))
    return spawned.pgid, spawned.identity, runtime


async def kill_runtime_mid_tool(
    script: str,
    started: Callable[[Spawned], bool],
    *,
    env: dict[str, str] | None = None,
    user: str | None = None,
    gated: bool = False,
) -> tuple[Spawned, int]:
    """:data:`RUNTIME` running ``script`` (as ``user`` when given, through ``setpriv``; through
    the spawn gate when ``gated``), SIGKILLed once ``started(spawned)`` holds (hang-guarded);
    return what it recorded in ``tool/spawned`` and its pid."""
    argv = [sys.executable, "-c", RUNTIME, script, *(["gated"] if gated else [])]
    if user is not None:
        argv = as_user(user, argv)
    runtime = await trio.lowlevel.open_process(
        argv, stdout=subprocess.PIPE, env=env if env is not None else child_env()
    )
    assert runtime.stdout is not None
    try:
        pgid, identity, containment, owner = (await LineReader(runtime.stdout).line()).split()
        spawned = Spawned(int(pgid), identity, containment, owner)  # type: ignore[arg-type]
        await until(lambda: started(spawned))
    finally:
        os.kill(runtime.pid, signal.SIGKILL)
        assert await runtime.wait() == -signal.SIGKILL
        await runtime.stdout.aclose()
    return spawned, runtime.pid


#: A ``bwrap`` that holds a call's namespace init before it sets its parent-death signal:
#: bwrap's init opens each ``--lock-file`` just before setting it, and the open of a FIFO
#: waits for a writer. The containment probe (no ``--info-fd``) runs unheld.
_HELD_BWRAP = """#!/bin/sh
case " $* " in
*" --info-fd "*) exec {bwrap} --lock-file {fifo} "$@" ;;
esac
exec {bwrap} "$@"
"""


def held_bwrap(directory: Path) -> tuple[Path, Path]:
    """``(bin, fifo)``: a directory to put first on ``PATH``, whose ``bwrap`` is the real one
    with each call's init held (:data:`_HELD_BWRAP`) until :func:`release` opens ``fifo``."""
    real = shutil.which("bwrap")
    assert real is not None
    bin_dir, fifo = directory / "held-bin", directory / "hold"
    bin_dir.mkdir()
    os.mkfifo(fifo)
    wrapper = bin_dir / "bwrap"
    wrapper.write_text(_HELD_BWRAP.format(bwrap=shlex.quote(real), fifo=shlex.quote(str(fifo))))
    wrapper.chmod(0o755)
    return bin_dir, fifo


async def release(fifo: Path) -> int:
    """Let an init held by :func:`held_bwrap` go on: open ``fifo`` for writing once the init
    waits on it (hang-guarded); the caller closes the descriptor returned."""

    opened: list[int] = []

    def open_it() -> bool:
        try:
            opened.append(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC))
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
        return bool(opened)

    await until(open_it)
    return opened[0]


def as_user(user: str, argv: list[str]) -> list[str]:
    """``argv`` run as ``user`` (its uid, gid and no supplementary groups), from root."""
    import pwd

    entry = pwd.getpwnam(user)
    return [
        "setpriv",
        f"--reuid={entry.pw_uid}",
        f"--regid={entry.pw_gid}",
        "--clear-groups",
        "--",
        *argv,
    ]


def group_options(**settings: Any) -> ProcessOptions:
    """Options for a test of the process-group fallback (spec/tools.md §10): the same
    settings, containment ``process-group``."""
    return ProcessOptions(containment="process-group", **settings)
