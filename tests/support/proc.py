"""``/proc`` probes, independent of the code under test (which has its own in
``trio_agent.procs``).

Each probe reads ``/proc`` itself and imports nothing from ``trio_agent``: a test that checks
"the group is gone" or "nothing carries the marker" with these does not take the answer from
the census it is testing (``group_members``, ``marked_processes``, ``carries_marker``), so a
bug there that misses processes cannot make such a test pass.

A leak guard gives each test a fresh tag in an environment variable; every process the test
starts inherits it, whatever group, session or parent it ends up in, so :func:`tagged` finds
any survivor. Zombies have no environment left: :func:`zombie_children` finds those.
"""

from __future__ import annotations

import contextlib
import os
import signal


def read_proc(path: str) -> bytes:
    """The bytes of a ``/proc`` file, or ``b""`` if the process is gone or not ours to read."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def pids() -> list[int]:
    """Every process id ``/proc`` lists."""
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def stat_fields(pid: int) -> list[bytes]:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), or ``[]``."""
    return read_proc(f"/proc/{pid}/stat").rpartition(b")")[2].split()


def alive(pid: int) -> bool:
    """``pid`` exists and is neither a zombie nor dead."""
    fields = stat_fields(pid)
    return bool(fields) and fields[0] not in (b"Z", b"X")


def cmdline(pid: int) -> str:
    return read_proc(f"/proc/{pid}/cmdline").replace(b"\0", b" ").decode(errors="replace").strip()


def has_env(pid: int, var: str, value: str) -> bool:
    """The environment ``pid`` was started with (``/proc/<pid>/environ``) has ``var=value``.

    The test-side twin of ``census.carries_marker``, written apart from it so a test that
    waits for a process to carry a marker does not lean on the check it tests.
    """
    return f"\0{var}={value}\0".encode() in b"\0" + read_proc(f"/proc/{pid}/environ")


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
    me = os.getpid()
    zombies = set()
    for pid in pids():
        fields = stat_fields(pid)
        if len(fields) > 1 and fields[0] == b"Z" and int(fields[1]) == me:
            zombies.add(pid)
    return zombies


def in_group(pgid: int) -> list[int]:
    """Live (not zombie) members of process group ``pgid``, sorted.

    The test-side twin of ``census.group_members`` (same answer, same order), read from
    ``/proc/<pid>/stat`` here so "the group is gone" is not the census under test speaking.
    """
    out = []
    for pid in pids():
        fields = stat_fields(pid)
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            out.append(pid)
    return sorted(out)


def children_of(pid: int) -> list[int]:
    """Live direct children of ``pid``."""
    out = []
    for child in pids():
        fields = stat_fields(child)
        if len(fields) > 1 and int(fields[1]) == pid and fields[0] not in (b"Z", b"X"):
            out.append(child)
    return out


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
