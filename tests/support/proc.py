"""Process probes for the tests, by ``psutil``: independent of the code under test (which
reads ``/proc`` itself, in ``trio_agent.procs``).

Each probe asks psutil (a library written and tested by other people) and imports nothing
from ``trio_agent``: a test that checks "the group is gone" or "nothing carries the marker"
with these does not take the answer from the census it is testing (``group_members``,
``marked_processes``, ``carries_marker``), nor from a second parser by the same authors
sharing its blind spots. A process group is the kernel's answer to ``getpgid(2)``; a PID
namespace is the inode of ``/proc/PID/ns/pid``, which psutil does not read.

A leak guard gives each test a fresh tag in an environment variable; every process the test
starts inherits it, whatever group, session or parent it ends up in, so :func:`tagged` finds
any survivor. Zombies have no environment left: :func:`zombie_children` finds those.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from typing import TypeVar

import psutil

T = TypeVar("T")

#: A process in one of these has exited: it runs nothing.
_ENDED = frozenset({psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD})
#: psutil's status words as the one-letter states of ``ps`` and ``/proc/PID/stat``.
_LETTER = {
    psutil.STATUS_RUNNING: "R",
    psutil.STATUS_SLEEPING: "S",
    psutil.STATUS_DISK_SLEEP: "D",
    psutil.STATUS_STOPPED: "T",
    psutil.STATUS_TRACING_STOP: "t",
    psutil.STATUS_ZOMBIE: "Z",
    psutil.STATUS_DEAD: "X",
    psutil.STATUS_IDLE: "I",
}


def _ask(pid: int, question: Callable[[psutil.Process], T], gone: T) -> T:
    """``question`` of process ``pid``, or ``gone`` if it has exited or is not ours to read."""
    try:
        return question(psutil.Process(pid))
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, ProcessLookupError):
        return gone


def read_proc(path: str) -> bytes:
    """The bytes of a ``/proc`` file, or ``b""`` if the process is gone or not ours to read."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def pids() -> list[int]:
    """Every process id there is."""
    return psutil.pids()


def state(pid: int) -> str | None:
    """The one-letter state (``R``, ``S``, ``T``, ``Z``...), or ``None`` if gone."""
    return _ask(pid, lambda p: _LETTER.get(p.status(), "?"), None)


def ppid(pid: int) -> int | None:
    """The parent's pid, or ``None`` if gone."""
    return _ask(pid, lambda p: p.ppid(), None)


def alive(pid: int) -> bool:
    """``pid`` exists and is neither a zombie nor dead."""
    return _ask(pid, lambda p: p.status() not in _ENDED, False)


def cmdline(pid: int) -> str:
    return _ask(pid, lambda p: " ".join(p.cmdline()), "")


def has_env(pid: int, var: str, value: str) -> bool:
    """The environment ``pid`` was started with has ``var=value``.

    The test-side twin of ``census.carries_marker``, so a test that waits for a process to
    carry a marker does not lean on the check it tests.
    """
    return _ask(pid, lambda p: p.environ().get(var) == value, False)


def tagged(var: str, tag: str) -> dict[int, str]:
    """Live processes (other than this one) whose environment has ``var=tag``: pid -> cmdline.

    With ``var`` the call marker's variable, the test-side twin of
    ``census.marked_processes``."""
    me = os.getpid()
    return {
        pid: cmdline(pid) for pid in pids() if pid != me and has_env(pid, var, tag) and alive(pid)
    }


def kill_tagged(var: str, tag: str) -> None:
    """SIGKILL every process :func:`tagged` finds (so one leak does not cascade)."""
    for pid in tagged(var, tag):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def zombie_children() -> set[int]:
    """Unreaped (zombie) children of this process."""
    children = psutil.Process().children()
    return {c.pid for c in children if _ask(c.pid, lambda p: p.status(), None) == "zombie"}


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def in_group(pgid: int) -> list[int]:
    """Live (not zombie) members of process group ``pgid``, sorted: the kernel's
    ``getpgid(2)`` for every process, so "the group is gone" is not the census under test
    speaking."""
    return sorted(pid for pid in pids() if _pgid(pid) == pgid and alive(pid))


def children_of(pid: int) -> list[int]:
    """Live direct children of ``pid``."""
    kids: list[psutil.Process] = _ask(pid, lambda p: p.children(), [])
    return [c.pid for c in kids if alive(c.pid)]


def descendants(pid: int) -> list[int]:
    """Live descendants of ``pid``: its children, theirs, and so on."""
    kids: list[psutil.Process] = _ask(pid, lambda p: p.children(recursive=True), [])
    return [c.pid for c in kids if alive(c.pid)]


def pid_namespace(pid: int) -> int | None:
    """The inode of ``pid``'s PID namespace, or ``None`` if it cannot be read."""
    try:
        return os.stat(f"/proc/{pid}/ns/pid").st_ino
    except OSError:
        return None


def namespace_below(pid: int) -> tuple[int, int] | None:
    """``(init, inode)`` of the PID namespace that ``pid`` (a bwrap) made: its child that lives
    in another PID namespace than this process; ``None`` while there is none."""
    ours = pid_namespace(os.getpid())
    for child in children_of(pid):
        namespace = pid_namespace(child)
        if namespace is not None and namespace != ours:
            return child, namespace
    return None


def in_namespace(inode: int) -> list[int]:
    """Pids of the live processes in PID namespace ``inode`` (a zombie has exited and runs
    nothing; an init whose parent never reaps it stays one)."""
    return [pid for pid in pids() if pid_namespace(pid) == inode and alive(pid)]
