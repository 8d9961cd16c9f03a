"""Stopping a call's processes: SIGTERM, a grace, SIGKILL, and waiting until they are gone.

Implements spec/tools.md §4 for the two containments of spec/tools.md §10: a process group
with the call's escapees (found by marker), and a PID namespace, which the kernel ends whole
when its init is killed. Every wait sleeps on pidfds; every sequence is bounded, so callers may
run it shielded from a cancel.

The one idea the group sequence leans on: a process group id cannot be handed out again while
any process (a zombie included) still carries it. As long as we hold the leader unreaped,
signalling the group can only ever reach processes of the group we started (spec/tools.md §4).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
from collections.abc import Iterable, Sequence
from typing import Protocol

import attrs
import trio

from .census import (
    EXITED_STATES,
    census,
    is_alive,
    marked_processes,
    namespace_members,
    open_pid_namespace,
    pid_namespace,
    read_stat,
)

DEFAULT_GRACE = 2.0
#: How long to wait for SIGKILLed processes to vanish, and then for the leader to be reaped.
#: SIGKILL cannot be ignored, so this only runs out for a process stuck in uninterruptible
#: sleep (state ``D``, e.g. a hung NFS mount); it exists so cleanup can never hang a turn.
DEFAULT_KILL_WAIT = 5.0

# Waiting for a group to empty sleeps on the members' pidfds, so it wakes the moment the last
# of them exits; no polling interval sets the latency. A wait also ends after a back-stop
# (doubling from the first value to the cap) and rescans, for the one change a pidfd does not
# report: a member leaving the group alive (setsid, setpgid), which stops counting as a member.
_BACKSTOP_FIRST = 0.005
_BACKSTOP_MAX = 0.2


class Leader(Protocol):
    """The group leader we spawned and have not reaped: its pid, and a wait that reaps it
    and returns its status (negative: the signal that ended it)."""

    @property
    def pid(self) -> int: ...

    async def wait(self) -> int: ...


@attrs.frozen
class TerminationReport:
    """What :func:`terminate_group` observed (spec/tools.md §4)."""

    pgid: int
    #: SIGTERM went to the group because it had live members when termination began.
    term_sent: bool
    #: Some member was still alive when the grace ran out, so SIGKILL was needed.
    kill_needed: bool
    #: Every pid seen alive in the group while terminating it.
    members_seen: tuple[int, ...]
    #: Members still alive when we gave up (only a process stuck in state ``D`` can cause this).
    survivors: tuple[int, ...] = ()
    #: Processes outside the group that carried the call's marker (they had left it with
    #: ``setsid``, ``setpgid`` or a daemonizing double fork) and were stopped (spec/tools.md §10).
    escapees: tuple[int, ...] = ()
    #: The leader's status, when we own (and so reaped) the leader.
    leader_exit_code: int | None = None
    leader_exit_signal: int | None = None
    #: Under PID-namespace containment: the namespace's init was seen to exit, so the kernel
    #: had ended every process in it (spec/tools.md §10). Always false for a process group.
    namespace_gone: bool = False

    @property
    def group_gone(self) -> bool:
        return not self.survivors


def _check_pgid(pgid: int) -> None:
    # killpg(0) means "my own group" and killpg(1) reaches init's group; a bad record must
    # never turn into either.
    if pgid <= 1:
        raise ValueError(f"refusing to signal process group {pgid}: not a tool's group")
    if pgid == os.getpgrp():
        raise ValueError(f"refusing to signal process group {pgid}: it is this runtime's own")


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True


async def _wait_group_empty(
    pgid: int,
    seen: set[int],
    deadline: float,
    *,
    kill: bool,
    signalled: Sequence[int] = (),
    marker: str | None = None,
) -> tuple[list[int], list[int] | None]:
    """Wait until the group has no live member or ``deadline``; returns who is left, and
    the processes outside the group carrying ``marker`` that the last scan saw (``None``
    when no scan ran since the wait, or without ``marker``).

    Each round sleeps on the members' pidfds until all have exited (or the back-stop, or
    ``deadline``), then scans the group again: a member may have forked before it died, and
    the scan finds the child. ``signalled`` are members a scan saw just before the caller's
    signal: the first round waits on them without scanning again (a scan right after a
    signal finds the same processes, still dying, and costs a /proc pass). With ``kill``,
    SIGKILL is re-sent whenever a scan finds members, which reaches a process that joined
    the group after the previous signal; it is only ever sent right after a scan saw live
    members, and those pin the pgid (see the module docstring).
    """
    backstop = _BACKSTOP_FIRST
    members = list(signalled)
    while True:
        if members:
            now = trio.current_time()
            if now >= deadline:
                return members, None
            await wait_all_gone(members, min(deadline, now + backstop), pgid=pgid)
            backstop = min(backstop * 2, _BACKSTOP_MAX)
        members, outside = census(pgid, marker)
        seen.update(members)
        if not members:
            return [], outside if marker is not None else None
        if kill:
            _signal_group(pgid, signal.SIGKILL)


async def terminate_group(
    pgid: int,
    *,
    leader: Leader | None,
    grace: float,
    kill_wait: float = DEFAULT_KILL_WAIT,
    marker: str | None = None,
) -> TerminationReport:
    """SIGTERM (and SIGCONT) the group, wait up to ``grace``, SIGKILL it, wait until no member
    is left (spec/tools.md §4); with ``marker``, the same for every process outside the group
    that carries the call's marker, until none is left (spec/tools.md §10).

    ``leader`` is the group leader when we spawned it (``pgid == leader.pid``); it must not
    have been reaped yet. Its zombie pins the pgid, so the final SIGKILL is sent to the group
    unconditionally and can only reach our processes; the leader is reaped last. With
    ``leader=None`` (an orphan found on cold recovery) a signal is only sent right after a
    scan saw live members.

    Bounded: returns within about ``grace + 3 * kill_wait`` whatever the processes do. It has
    no unbounded await, so callers may run it under ``trio.CancelScope(shield=True)``.
    """
    _check_pgid(pgid)
    if leader is not None and leader.pid != pgid:
        raise ValueError(f"leader pid {leader.pid} does not lead process group {pgid}")
    seen: set[int] = set()
    members, escapees = census(pgid, marker)
    seen.update(members)
    escaped: set[int] = set(escapees)
    term_sent = False
    grace_end = trio.current_time() + grace
    if escapees:
        signal_each(escapees, signal.SIGTERM)
        signal_each(escapees, signal.SIGCONT)
        term_sent = True
    if members:
        term_sent = _signal_group(pgid, signal.SIGTERM) or term_sent
        # A stopped member (SIGSTOP, Ctrl+Z) would sit on the SIGTERM until continued.
        _signal_group(pgid, signal.SIGCONT)
        members, _ = await _wait_group_empty(pgid, seen, grace_end, kill=False, signalled=members)
    if escapees:
        await wait_all_gone(escapees, grace_end)
    kill_needed = bool(members) or any(is_alive(pid) for pid in escapees)
    survivors: list[int] = []
    marked: list[int] | None = None  # outside the group, carrying the marker, if scanned
    if leader is not None or members:
        # With our leader unreaped this goes out even when the scan says empty: a member
        # forked after that scan still gets it (the kernel fails a fork that races a group
        # signal), so nothing of the group can outlive this line.
        _signal_group(pgid, signal.SIGKILL)
        kill_end = trio.current_time() + kill_wait
        survivors, marked = await _wait_group_empty(
            pgid, seen, kill_end, kill=True, signalled=members, marker=marker
        )
    if marker is not None:
        killed, stuck = await kill_marked(marker, kill_wait, skip=survivors, first=marked)
        escaped.update(pid for pid in killed if pid not in seen)
        kill_needed = kill_needed or bool(killed)
        survivors.extend(stuck)
    code: int | None = None
    sig: int | None = None
    if leader is not None:
        # Reaping frees the pgid, so it comes strictly after the last signal above.
        code, sig = await _reap(leader, kill_wait)
    return TerminationReport(
        pgid=pgid,
        term_sent=term_sent,
        kill_needed=kill_needed,
        members_seen=tuple(sorted(seen)),
        survivors=tuple(sorted(set(survivors))),
        leader_exit_code=code,
        leader_exit_signal=sig,
        escapees=tuple(sorted(escaped - seen)),
    )


async def _reap(leader: Leader, kill_wait: float) -> tuple[int | None, int | None]:
    """Reap ``leader`` within ``kill_wait``: its ``(exit code, signal)``, one of them set, or
    ``(None, None)`` if it could not be reaped in time."""
    with trio.move_on_after(kill_wait):
        status = await leader.wait()
        return (status, None) if status >= 0 else (None, -status)
    return None, None


async def kill_marked(
    marker: str,
    kill_wait: float,
    *,
    skip: Iterable[int] = (),
    first: Sequence[int] | None = None,
) -> tuple[set[int], list[int]]:
    """SIGKILL whatever carries ``marker`` (an escapee that ignored SIGTERM, or one forked
    since the last scan) and repeat the scan until it finds nobody: a killed process forks no
    more, so each round can only find newer descendants. Bounded by ``kill_wait``; returns
    ``(killed, stuck)``, the pids signalled and those still alive at the bound."""
    skipped = set(skip)
    killed: set[int] = set()
    kill_end = trio.current_time() + kill_wait
    while True:
        found = marked_processes(marker) if first is None else first
        first = None  # a scan the caller just made stands in for the first one
        left = [pid for pid in found if pid not in skipped]
        if not left:
            return killed, []
        killed.update(left)
        signal_each(left, signal.SIGKILL)
        if trio.current_time() >= kill_end:
            return killed, left
        await wait_all_gone(left, kill_end)


def signal_each(pids: Iterable[int], sig: signal.Signals) -> None:
    # Each pid was seen carrying the marker an instant ago; one that exited since is skipped.
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


async def _wait_gone(pid: int, pgid: int | None = None) -> None:
    """Return once ``pid`` (any process, not only a child) has exited; never reaps it.

    With ``pgid``, also return at once if, once its pidfd is open, ``pid`` is no longer a
    live member of that group: the pid seen by a scan may have exited and been reused since.
    """
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        if pgid is not None:
            stat = read_stat(pid)
            if stat is None or stat.pgrp != pgid or stat.state in EXITED_STATES:
                return
        await trio.lowlevel.wait_readable(fd)
    finally:
        os.close(fd)


async def wait_all_gone(pids: Iterable[int], deadline: float, *, pgid: int | None = None) -> None:
    """Wait on each pid's pidfd (no polling) until all have exited or ``deadline``."""
    with trio.move_on_at(deadline):
        async with trio.open_nursery() as nursery:
            for pid in pids:
                nursery.start_soon(_wait_gone, pid, pgid)


# --------------------------------------------------------------------------------------------
# A PID namespace


@attrs.frozen
class Namespace:
    """A call's PID namespace, as its runtime holds it (spec/tools.md §10).

    ``init`` is the namespace's first process (its pid here), ``init_fd`` a pidfd opened on
    it right after the spawn, so it names that very process even after its pid is reused, and
    ``inode`` the namespace's ``/proc/<pid>/ns/pid`` inode. ``pin_fd`` is that file, open
    from the spawn to the end of the call (``None`` if the init had already exited): the
    kernel numbers a new namespace with the lowest free inode number, and while the file is
    open this one's number stays taken, so a scan by it finds the call's processes and no
    later namespace's."""

    init: int
    init_fd: int
    inode: int
    pin_fd: int | None = None


def open_pin(init: int, init_fd: int, inode: int) -> int | None:
    """``/proc/<init>/ns/pid`` opened, for :attr:`Namespace.pin_fd`; ``None`` if the init has
    exited already (the namespace then has nothing left to scan for). The open is checked
    after the fact: the init still running (its pidfd) proves the file opened was its own,
    and the file must be the namespace bwrap reported."""
    fd = open_pid_namespace(init)
    if fd is None:
        return None
    if _exited(init_fd) or os.fstat(fd).st_ino != inode:
        os.close(fd)
        return None
    return fd


def _signal_in_namespace(pid: int, sig: signal.Signals, namespace: int) -> bool:
    """Signal ``pid`` only if, once a pidfd holds it, it still lives in ``namespace``: the
    pidfd pins the process, so a pid reused since the scan is never signalled."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    try:
        if pid_namespace(pid) != namespace:
            return False
        signal.pidfd_send_signal(fd, sig)
        return True
    except ProcessLookupError:
        return False
    finally:
        os.close(fd)


def _exited(fd: int) -> bool:
    """Pidfd ``fd`` reports its process exited, now (a pidfd is readable once it has)."""
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)


async def _wait_fd(fd: int, deadline: float) -> bool:
    """Wait until pidfd ``fd`` reports its process exited, or ``deadline``; whether it did."""
    if _exited(fd):
        return True
    with trio.move_on_at(deadline):
        await trio.lowlevel.wait_readable(fd)
        return True
    return False


async def terminate_namespace(
    namespace: Namespace,
    *,
    pgid: int,
    leader: Leader,
    grace: float,
    kill_wait: float = DEFAULT_KILL_WAIT,
    command_exited: bool = False,
) -> TerminationReport:
    """SIGTERM (and SIGCONT) every process of the call's PID namespace, wait up to ``grace``
    for them to exit, then SIGKILL the namespace's init, which makes the kernel kill every
    process left in it (spec/tools.md §4, §10); ``leader`` (the spawned process that holds
    the namespace, pid ``pgid``) is reaped last.

    No process can leave a PID namespace, so the scans only decide who gets the SIGTERM and
    how long to wait; the end does not depend on them. ``namespace_gone`` is the kernel's
    word: the init's pidfd reported its exit, and an init exits only after every other
    process of its namespace is gone. With ``command_exited`` (the leader saw the command
    end), the init is on its way out already and is awaited first, up to ``grace``, so what
    the command left is not signalled twice. Bounded by about ``grace + 2 * kill_wait``.
    """
    seen: set[int] = set()
    term_sent = False
    grace_end = trio.current_time() + grace
    init_gone = (
        await _wait_fd(namespace.init_fd, grace_end)
        if command_exited
        else _exited(namespace.init_fd)
    )
    members = [] if init_gone else namespace_members(namespace.inode, init=namespace.init)
    if members:
        seen.update(members)
        for sig in (signal.SIGTERM, signal.SIGCONT):
            for pid in members:
                term_sent = _signal_in_namespace(pid, sig, namespace.inode) or term_sent
        backstop = _BACKSTOP_FIRST
        while members and trio.current_time() < grace_end:
            # The init exits as soon as the command does (the kernel then ends the rest), so
            # its pidfd is what is awaited; the back-stop rescans, for a command that ignores
            # SIGTERM while the rest exit, and for processes forked meanwhile.
            wake = min(grace_end, trio.current_time() + backstop)
            if await _wait_fd(namespace.init_fd, wake):
                members = []
                break
            backstop = min(backstop * 2, _BACKSTOP_MAX)
            members = namespace_members(namespace.inode, init=namespace.init)
            seen.update(members)
    kill_needed = bool(members)
    if not _exited(namespace.init_fd):
        # The init never leaves its namespace and pins it: killing it is the whole kill.
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(namespace.init_fd, signal.SIGKILL)
    gone = await _wait_fd(namespace.init_fd, trio.current_time() + kill_wait)
    code, sig_ = await _reap(leader, kill_wait)
    return TerminationReport(
        pgid=pgid,
        term_sent=term_sent,
        kill_needed=kill_needed,
        members_seen=tuple(sorted(seen)),
        survivors=() if gone else (namespace.init,),
        leader_exit_code=code,
        leader_exit_signal=sig_,
        namespace_gone=gone,
    )
