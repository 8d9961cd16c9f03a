"""Cold recovery's look for what a crashed runtime's tool calls left running.

Implements spec/tools.md §9: for each call of the open step that logged ``tool/spawned``,
decide from the record and ``/proc`` what is left, stop only what is proven the call's and
whose runtime is gone, and say which case it was (spec/recovery.md R5). The store runs
:func:`reap_orphans` on every cold open unless its opener opts out.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Sequence
from typing import Literal

import attrs
import trio

from ..log.repair import Orphan, Reaping, ReapKind
from .census import (
    boot_id,
    carries_marker,
    group_members,
    identity_marker,
    is_alive,
    marked_processes,
    namespace_init,
    owner_running,
    parse_identity,
    pid_namespace,
    process_identity,
)
from .terminate import (
    DEFAULT_GRACE,
    DEFAULT_KILL_WAIT,
    TerminationReport,
    kill_marked,
    signal_each,
    terminate_group,
    wait_all_gone,
)

OrphanStatus = Literal["stopped", "gone", "identity-mismatch", "unverified", "other-boot"]


@attrs.frozen
class OrphanOutcome:
    """What :func:`reap_orphan_group` found and did (spec/tools.md §9)."""

    pgid: int
    #: ``stopped``: ours, and we terminated it. ``gone``: nothing of it is alive.
    #: ``identity-mismatch``: the pid now belongs to another process, so our group is gone;
    #: nothing was signalled. ``unverified``: the leader is gone but processes with this pgid
    #: live on; they cannot be proven ours, so nothing was signalled. ``other-boot``: the
    #: record names another boot id (another host, or this one before a restart): nothing
    #: here can stop it or prove it ended, so nothing was looked at or signalled.
    status: OrphanStatus
    #: Live members seen (for ``unverified``: the processes left alone).
    members: tuple[int, ...] = ()
    report: TerminationReport | None = None


async def reap_orphan_group(
    pgid: int,
    identity: str,
    *,
    grace: float,
    kill_wait: float = DEFAULT_KILL_WAIT,
) -> OrphanOutcome:
    """Stop what a tool call left running when its runtime crashed (spec/tools.md §9).

    Nothing is signalled without proof that this project started it: the recorded identity
    must carry the call's marker, and a process is ours only if it runs as our uid with that
    marker in its environment (:func:`carries_marker`). A log is input like any other file,
    and a forged ``tool/spawned`` naming a stranger's group and start time must not get it
    killed. Then:

    - the leader (pid ``pgid``) is alive with the recorded identity and the marker → the
      pgid is still ours: the whole group is stopped by spec/tools.md §4, and every escapee
      carrying the marker with it → ``stopped``;
    - otherwise every live process carrying the marker (members that kept it, escapees) is
      stopped → ``stopped`` if there were any;
    - else, pid ``pgid`` has another identity → ``identity-mismatch``; processes with pgid
      ``pgid`` live on but none carries the marker (or the record has none) → ``unverified``:
      reported, never signalled; nothing alive → ``gone``.

    A record from another boot (another host's, or this host's before a restart) says nothing
    about this host's processes, and this host cannot reach the other's: ``other-boot``,
    nothing signalled.
    """
    if pgid < 1:
        # log.md allows pgid >= 1. pgid 1 (init's) or our own group need no special case: their
        # leader's identity cannot match a tool's, and terminate_group refuses them anyway.
        raise ValueError(f"recorded process group {pgid} is not a process group id")
    recorded_boot, start = parse_identity(identity)
    marker = identity_marker(identity)
    if recorded_boot != boot_id():
        return OrphanOutcome(pgid=pgid, status="other-boot")
    current = process_identity(pgid)
    leader_is_ours = (
        marker is not None
        and current == f"{recorded_boot}:{start}"
        and is_alive(pgid)
        and carries_marker(pgid, marker)
    )
    if leader_is_ours:
        members = tuple(group_members(pgid))
        report = await terminate_group(
            pgid, leader=None, grace=grace, kill_wait=kill_wait, marker=marker
        )
        return OrphanOutcome(
            pgid=pgid, status="stopped", members=members + report.escapees, report=report
        )
    marked = tuple(marked_processes(marker)) if marker is not None else ()
    if marked:
        report = await _terminate_marked(pgid, marker or "", grace, kill_wait)
        return OrphanOutcome(pgid=pgid, status="stopped", members=marked, report=report)
    members = tuple(group_members(pgid))
    if current is not None and current != f"{recorded_boot}:{start}":
        return OrphanOutcome(pgid=pgid, status="identity-mismatch")
    if members:
        return OrphanOutcome(pgid=pgid, status="unverified", members=members)
    return OrphanOutcome(pgid=pgid, status="gone")


async def _terminate_marked(
    pgid: int, marker: str, grace: float, kill_wait: float
) -> TerminationReport:
    """spec/tools.md §4 applied to each process carrying ``marker`` one by one, without
    signalling any group: the group's leader could not be verified, so its pgid proves nothing."""
    found = marked_processes(marker)
    signal_each(found, signal.SIGTERM)
    signal_each(found, signal.SIGCONT)
    await wait_all_gone(found, trio.current_time() + grace)
    killed, survivors = await kill_marked(marker, kill_wait)
    seen = set(found) | killed
    kill_needed = bool(killed)
    return TerminationReport(
        pgid=pgid,
        term_sent=bool(found),
        kill_needed=kill_needed,
        members_seen=tuple(sorted(seen)),
        survivors=tuple(survivors),
        escapees=tuple(sorted(seen)),
    )


async def _end_namespace(leader: int, kill_wait: float) -> bool:
    """Kill the PID namespace that ``leader`` (a bwrap proven the call's) holds, by its init;
    whether the kernel confirmed its end (the init's pidfd reported its exit)."""
    init = namespace_init(leader)
    if init is None:
        return False
    try:
        fd = os.pidfd_open(init)
    except ProcessLookupError:  # it exited since: the namespace ended by itself
        return False
    try:
        if pid_namespace(init) == pid_namespace(os.getpid()):  # pid reused since: not it
            return False
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        with trio.move_on_after(kill_wait):
            await trio.lowlevel.wait_readable(fd)
            return True
        return False
    finally:
        os.close(fd)


async def reap_orphan(
    orphan: Orphan, *, grace: float = DEFAULT_GRACE, kill_wait: float = DEFAULT_KILL_WAIT
) -> ReapKind | None:
    """What recovery finds and does for one call (spec/tools.md §9): the R5 kind for its
    placeholder, or ``None`` for no sentence (nothing proven either way, or another boot's).

    A call whose runtime still runs (the recorded ``owner``) is nobody's orphan: nothing is
    signalled (``owner-running``). A ``pid-namespace`` call's tree died with its runtime
    unless its leader somehow lives on; then the namespace is ended by its init
    (``namespace-ended``), else it is ``namespace-gone``. Otherwise, the process-group rules of
    :func:`reap_orphan_group` decide, and only ``stopped`` gets a sentence.
    """
    if orphan.pgid < 1:
        raise ValueError(f"recorded process group {orphan.pgid} is not a process group id")
    recorded_boot, start = parse_identity(orphan.identity)
    if recorded_boot != boot_id():
        return None  # the other-host sentence comes from the boot id (R5, other host)
    if orphan.owner is not None and owner_running(orphan.owner):
        return "owner-running"
    if orphan.containment == "pid-namespace":
        marker = identity_marker(orphan.identity)
        leader_is_ours = (
            marker is not None
            and process_identity(orphan.pgid) == f"{recorded_boot}:{start}"
            and is_alive(orphan.pgid)
            and carries_marker(orphan.pgid, marker)
        )
        if leader_is_ours and await _end_namespace(orphan.pgid, kill_wait):
            await reap_orphan_group(orphan.pgid, orphan.identity, grace=0, kill_wait=kill_wait)
            return "namespace-ended"
    outcome = await reap_orphan_group(
        orphan.pgid, orphan.identity, grace=grace, kill_wait=kill_wait
    )
    if outcome.status == "stopped":
        return "stopped"
    if orphan.containment == "pid-namespace" and outcome.status in ("gone", "identity-mismatch"):
        return "namespace-gone"
    return None


async def reap_orphans(orphans: Sequence[Orphan]) -> Reaping:
    """The orphan reaper a store runs on a cold open (spec/persistence.md §5 step 3):
    :func:`reap_orphan` for each call, and this host's boot id.

    The boot id lets repair tell a call of another host apart (spec/recovery.md R5, other
    host); ``None`` where the system has none."""
    reaped: dict[str, ReapKind] = {}
    for orphan in orphans:
        try:
            kind = await reap_orphan(orphan)
        except ValueError:  # a malformed pgid or identity in the log: nothing to signal
            continue
        if kind is not None:
            reaped[orphan.call_id] = kind
    try:
        host = boot_id()
    except OSError:
        host = None
    return Reaping(reaped, host)
