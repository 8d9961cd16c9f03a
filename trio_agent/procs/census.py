"""What ``/proc`` says about processes: state, group, start time, name, identity, marker,
namespace.

Implements the probes of spec/tools.md §1, §3 and §10: membership of a process group, the
identity that survives pid reuse, the call's marker in a process's environment, and the PID
namespace a process lives in. Pure reads of ``/proc``; nothing here signals or waits, and
nothing imports trio, so the census can be read, tested and benchmarked on its own.
"""

from __future__ import annotations

import functools
import os
import secrets
from collections.abc import Iterable
from typing import Final

import attrs

#: The environment variable every process of a call inherits (spec/tools.md §3, §10): its
#: value, the call's *marker*, is random per call, so only processes descended from that
#: call's leader carry it, wherever they moved (a new session, another group, reparented).
MARKER_VAR: Final = "TRIO_AGENT_SPAWN"
# An environ larger than this is read no further (ARG_MAX is 2 MiB by default).
_ENVIRON_MAX = 4 << 20
# A stat line is 52 numbers and a command name of at most 64 bytes: well under this.
_STAT_MAX = 4096
# ``Z`` (zombie) and ``X`` (dead) entries have exited; they can run no code and write nothing.
EXITED_STATES: Final = frozenset({"Z", "X"})


@attrs.frozen
class Stat:
    state: str
    pgrp: int
    session: int
    starttime: int


def _read_once(path: str, limit: int) -> bytes | None:
    """One read of at most ``limit`` bytes of a ``/proc/<pid>`` file, or ``None`` if the
    process is gone."""
    # Raw os.open/os.read: read_stat runs for every process on every poll, and this is about
    # twice as fast as open(), which builds a buffered file object each time.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, ProcessLookupError):
        # ENOENT: gone before the open; ESRCH: exiting during it (seen on a loaded machine
        # while a group's census ran, as the cancel's TERM took effect).
        return None
    try:
        return os.read(fd, limit)
    except ProcessLookupError:
        # ESRCH: the process was reaped between open() and read().
        return None
    finally:
        os.close(fd)


def read_stat(pid: int) -> Stat | None:
    """Parse the fields we need from ``/proc/<pid>/stat``; ``None`` if the process is gone."""
    raw = _read_once(f"/proc/{pid}/stat", _STAT_MAX)
    if raw is None:
        return None
    # Field 2 (comm) is the executable's name in parentheses and may itself contain spaces and
    # ')' (a program can be called "a) (b"), so the fixed fields start after the *last* ')'.
    _, sep, rest = raw.rpartition(b")")
    fields = rest.split()
    if not sep or len(fields) < 20:
        raise ValueError(f"/proc/{pid}/stat: unexpected format: {raw[:200]!r}")
    # ``fields[0]`` is field 3 of proc(5), so field N is ``fields[N - 3]``.
    return Stat(
        state=fields[0].decode("ascii"),
        pgrp=int(fields[2]),
        session=int(fields[3]),
        starttime=int(fields[19]),
    )


@functools.cache
def boot_id() -> str:
    """This boot's random id; start times are only comparable within one boot."""
    with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
        return f.read().strip()


def wait_channel(pid: int) -> str | None:
    """Where ``pid`` sleeps in the kernel: ``/proc/<pid>/wchan``, the name of the kernel
    function it is blocked in, or ``0`` while it runs (and where the kernel will not say);
    ``None`` once it is gone. spec/tools.md §10 reads a namespace's init by it."""
    raw = _read_once(f"/proc/{pid}/wchan", 512)  # a kernel symbol's name is shorter
    return None if raw is None else raw.decode("ascii", "replace").strip()


def comm(pid: int) -> str:
    """The process's command name (``/proc/<pid>/comm``), or ``?`` once it is gone."""
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return "?"


def describe_processes(pids: list[int]) -> str:
    """``1 process (pid 7 sleep)``, ``3 processes (pids 7 sleep, 8 sh, 9 sleep)``: at most
    five named, each with its command name as /proc has it (:func:`comm`)."""
    named = ", ".join(f"{pid} {comm(pid)}" for pid in pids[:5])
    more = ", ..." if len(pids) > 5 else ""
    if len(pids) == 1:
        return f"1 process (pid {named})"
    return f"{len(pids)} processes (pids {named}{more})"


def process_identity(pid: int) -> str | None:
    """An identity for ``pid`` that survives pid reuse (spec/tools.md §3).

    ``"<boot_id>:<starttime>"``, where ``starttime`` is field 22 of ``/proc/<pid>/stat`` (clock
    ticks after boot). A pid number can be reused, but never by two processes started at the
    same tick of the same boot. A zombie still has its identity (it is still in the process
    table); ``None`` means no process with this pid exists.
    """
    stat = read_stat(pid)
    if stat is None:
        return None
    return f"{boot_id()}:{stat.starttime}"


def parse_identity(identity: str) -> tuple[str, int]:
    """Split an identity into ``(boot_id, starttime)`` (spec/tools.md §3): the form of
    :func:`process_identity`, or a spawn's ``"<boot_id>:<starttime>:<marker>"``."""
    parts = identity.split(":")
    if len(parts) not in (2, 3) or not parts[0] or not parts[1].isdigit() or "" in parts:
        raise ValueError(
            f"malformed process identity {identity!r}: want '<boot_id>:<starttime>[:<marker>]'"
        )
    return parts[0], int(parts[1])


def leader_identity(identity: str) -> str:
    """The leader's part of a spawn's identity, as :func:`process_identity` reports it."""
    boot, start = parse_identity(identity)
    return f"{boot}:{start}"


def identity_marker(identity: str) -> str | None:
    """The marker of a spawn's identity, or ``None`` for one without (nothing to prove
    ownership with, spec/tools.md §9)."""
    parse_identity(identity)
    parts = identity.split(":")
    return parts[2] if len(parts) == 3 else None


def new_marker() -> str:
    """A fresh call marker: 16 random hex digits, never reused (spec/tools.md §3)."""
    return secrets.token_hex(8)


def carries_marker(pid: int, marker: str) -> bool:
    """``pid`` runs as our uid and its environment holds ``TRIO_AGENT_SPAWN=<marker>``.

    This is the proof of ownership recovery needs before it signals anything (spec/tools.md
    §9): the marker is random per call, so a process carries it only if it descends from
    that call's leader (or was deliberately given it). ``/proc/<pid>/environ`` reads the
    process's memory where its environment was placed at ``exec``: a process that overwrites
    it there, or ``exec``s with a new environment, no longer shows the marker. So the marker
    proves a process is the call's, and its absence proves nothing (spec/tools.md §10).
    """
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return False
        fd = os.open(f"/proc/{pid}/environ", os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    try:
        chunks, size = [], 0
        while size < _ENVIRON_MAX:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except (ProcessLookupError, PermissionError):
        return False
    finally:
        os.close(fd)
    needle = f"\0{MARKER_VAR}={marker}\0".encode()
    return needle in b"\0" + b"".join(chunks) + b"\0"


def marked_processes(marker: str) -> list[int]:
    """Pids of the live processes that carry ``marker`` (:func:`carries_marker`), in any
    group or session, except this process."""
    me = os.getpid()
    found = []
    for pid in pids():
        if pid == me:
            continue
        stat = read_stat(pid)
        if stat is not None and stat.state not in EXITED_STATES and carries_marker(pid, marker):
            found.append(pid)
    return sorted(found)


def pids() -> Iterable[int]:
    # Only thread-group leaders are listed at the top of /proc, so these are processes.
    for name in os.listdir("/proc"):
        if name.isdigit():
            yield int(name)


def group_members(pgid: int) -> list[int]:
    """Pids of the live (not zombie) processes whose process group is ``pgid`` (spec/tools.md §4).

    A zombie has already exited and can do no more work, so it does not count: a group whose
    only remaining entry is its unreaped leader is empty.
    """
    members = []
    for pid in pids():
        stat = read_stat(pid)
        if stat is not None and stat.pgrp == pgid and stat.state not in EXITED_STATES:
            members.append(pid)
    return sorted(members)


def census(pgid: int, marker: str | None) -> tuple[list[int], list[int]]:
    """One ``/proc`` pass: the live members of group ``pgid`` (:func:`group_members`), and the
    live processes outside it that carry ``marker`` (none when ``marker`` is ``None``).

    Termination needs both at the start and at the end; one pass instead of two halves the
    cost of those scans, which is most of a cancel's latency on a host with many processes.
    """
    me = os.getpid()
    members: list[int] = []
    outside: list[int] = []
    for pid in pids():
        stat = read_stat(pid)
        if stat is None or stat.state in EXITED_STATES:
            continue
        if stat.pgrp == pgid:
            members.append(pid)
        elif marker is not None and pid != me and carries_marker(pid, marker):
            outside.append(pid)
    return sorted(members), sorted(outside)


def is_alive(pid: int) -> bool:
    """``pid`` exists and has not exited (a zombie has)."""
    stat = read_stat(pid)
    return stat is not None and stat.state not in EXITED_STATES


def runtime_identity() -> str:
    """This process's identity with its pid, ``"<boot_id>:<pid>:<starttime>"``: the *owner*
    recorded with every call it starts (spec/tools.md §9), so that recovery can tell whether
    the runtime that started a call still runs."""
    stat = read_stat(os.getpid())
    if stat is None:  # our own /proc entry: only a missing /proc gets here
        raise OSError(f"no /proc entry for this process ({os.getpid()})")
    return f"{boot_id()}:{os.getpid()}:{stat.starttime}"


def owner_running(owner: str) -> bool:
    """The runtime that ``owner`` (:func:`runtime_identity`) names is alive on this boot.

    A malformed owner, another boot's, or a pid now held by another process (another start
    time) is not running: only an exact match of boot, pid and start time is."""
    parts = owner.split(":")
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return False
    boot, pid, start = parts[0], int(parts[1]), int(parts[2])
    if pid < 1 or boot != boot_id():
        return False
    stat = read_stat(pid)
    return stat is not None and stat.state not in EXITED_STATES and stat.starttime == start


def pid_namespace(pid: int) -> int | None:
    """The inode of ``pid``'s PID namespace (``/proc/<pid>/ns/pid``), or ``None`` when the
    process is gone or its namespace cannot be read (spec/tools.md §10).

    Reading it needs the right to inspect the process: a process of our uid, or one inside
    a user namespace we own (then even a non-dumpable one is readable)."""
    try:
        return os.stat(f"/proc/{pid}/ns/pid").st_ino
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def open_pid_namespace(pid: int) -> int | None:
    """A descriptor open on ``pid``'s PID namespace (``/proc/<pid>/ns/pid``, close-on-exec),
    or ``None`` when the process is gone or its namespace cannot be opened. While it is open
    the namespace keeps its inode number (spec/tools.md §10); the caller checks afterwards
    that ``pid`` was still the process it meant."""
    try:
        return os.open(f"/proc/{pid}/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def namespace_init(leader: int) -> int | None:
    """The init of the PID namespace that ``leader`` (a bwrap we started) made: its child
    living in another PID namespace than ours; ``None`` if there is none (any more)."""
    try:
        with open(f"/proc/{leader}/task/{leader}/children", encoding="ascii") as f:
            children = [int(pid) for pid in f.read().split()]
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return None
    ours = pid_namespace(os.getpid())
    for pid in children:
        namespace = pid_namespace(pid)
        if namespace is not None and namespace != ours:
            return pid
    return None


def namespace_members(namespace: int, *, init: int) -> list[int]:
    """Pids (as this namespace sees them) of the live processes whose PID namespace is
    ``namespace``, except its ``init``: what a cancel's SIGTERM must reach (spec/tools.md §10).

    A process in a namespace nested inside it is not listed: it gets no SIGTERM, but the
    SIGKILL of ``init`` ends it with the rest."""
    found = []
    for pid in pids():
        if pid == init:
            continue
        stat = read_stat(pid)
        if stat is None or stat.state in EXITED_STATES:
            continue
        if pid_namespace(pid) == namespace:
            found.append(pid)
    return sorted(found)
