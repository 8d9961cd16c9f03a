"""Killing a whole process group and waiting until the kernel says it is gone, in a plain
thread: for the callers that run no trio (the harness's pipe adapter, ``conform``).

spec/tools.md §4 gives the word "gone": the group has no member (a zombie is not one). A
SIGKILL is delivered asynchronously, so a member may run for a moment after ``killpg``
returns, and a pipe's end-of-file says only that its last writer closed it. Each member
found is therefore waited for on its pidfd, which is readable once it has exited; the group
is scanned again until a scan finds nobody, which also catches a member forked just before
the kill. The wait has no time limit: a SIGKILLed process always exits (spec/tools.md §4 on
the one exception, uninterruptible sleep).

The caller keeps the group id pinned while this runs: its leader is running or exited but
not yet reaped, so no other process can have taken that number.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal

from .census import describe_processes, group_members

__all__ = ["kill_group_until_gone", "kill_leftovers", "wait_exited"]


def kill_group_until_gone(pgid: int) -> list[int]:
    """SIGKILL every member of group ``pgid`` until none is left; return the members the
    first scan found (empty when the group was already gone). Refuses, as
    :func:`~trio_agent.procs.terminate.terminate_group` does, the groups 0 and 1 and the
    caller's own."""
    if pgid <= 1 or pgid == os.getpgrp():
        raise ValueError(f"refusing to signal process group {pgid}")
    first: list[int] | None = None
    while True:
        members = group_members(pgid)
        if first is None:
            first = members
        if not members:
            return first
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        for pid in members:
            wait_exited(pid)


def kill_leftovers(pgid: int) -> tuple[list[int], str]:
    """Name, then kill until gone, what group ``pgid`` still holds once its leader exited or
    was given up on: the live members' pids and their description
    (:func:`~trio_agent.procs.census.describe_processes`), or ``([], "")`` for an empty
    group. Named first, since a killed process's name leaves /proc with it."""
    members = group_members(pgid)  # an exited leader is a zombie: not a member
    if not members:
        return [], ""
    named = describe_processes(members)
    kill_group_until_gone(pgid)
    return members, named


def wait_exited(pid: int, timeout: float | None = None) -> None:
    """Block until process ``pid`` (not necessarily our child) has exited, without reaping it,
    or until ``timeout`` seconds passed (a hang guard; the caller kills afterwards)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # already gone
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        if timeout is not None:
            poller.poll(int(timeout * 1000))
            return
        while not poller.poll():
            pass
    finally:
        os.close(fd)
