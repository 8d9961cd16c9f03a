"""Cold-recovery reaping of groups left by a killed runtime (spec/tools.md §9).

The runtime is a real Python process running ``run_group``; it is killed with SIGKILL, and
the group it leaves behind is found and stopped (or, when it cannot be proven ours, left
alone) by ``reap_orphan_group``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import trio
from support.polling import until
from support.proc import alive, cmdline, in_group, ppid
from support.tools.testlib import (
    PONG_CHILD,
    LineReader,
    ping,
    runtime_killed_mid_tool,
    wait_gone,
    wait_members,
)

from trio_agent.procs.census import (
    MARKER_VAR,
    identity_marker,
    new_marker,
    parse_identity,
    process_identity,
)
from trio_agent.procs.orphans import reap_orphan_group


async def _runtime_killed_mid_tool(script: str) -> tuple[int, str]:
    """Start the runtime stand-in running ``script``, SIGKILL it once its tool group has three
    members, return the orphaned (pgid, identity)."""
    pgid, identity, runtime_pid = await runtime_killed_mid_tool(
        script, lambda pgid, _: len(in_group(pgid)) >= 3
    )
    # The runtime is dead; the group it started lives on, now parented elsewhere.
    assert len(in_group(pgid)) == 3
    assert ppid(pgid) != runtime_pid
    # The recorded identity is the leader's plus the call's marker (spec/tools.md §3).
    assert process_identity(pgid) == identity.rsplit(":", 1)[0]
    assert identity_marker(identity) is not None
    return pgid, identity


async def test_kill_9_leaves_the_group_and_recovery_stops_it() -> None:
    pgid, identity = await _runtime_killed_mid_tool("sleep 100 & sleep 100 & wait")
    outcome = await reap_orphan_group(pgid, identity, grace=10)
    assert outcome.status == "stopped" and len(outcome.members) == 3
    assert outcome.report is not None
    assert outcome.report.term_sent and not outcome.report.kill_needed
    assert in_group(pgid) == []


async def test_recovery_kills_an_orphan_that_ignores_sigterm() -> None:
    pgid, identity = await _runtime_killed_mid_tool("trap '' TERM; sleep 100 & sleep 100 & wait")
    outcome = await reap_orphan_group(pgid, identity, grace=0.1)
    assert outcome.status == "stopped"
    assert outcome.report is not None and outcome.report.kill_needed
    assert in_group(pgid) == []


async def test_recorded_identity_that_does_not_match_is_left_alone() -> None:
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-c", PONG_CHILD], start_new_session=True, stdout=subprocess.PIPE
    )
    assert proc.stdout is not None
    reader = LineReader(proc.stdout)
    try:
        assert await reader.line() == "ready"
        identity = process_identity(proc.pid)
        assert identity is not None
        boot, start = parse_identity(identity)
        # Same pid, different start time: what pid reuse looks like.
        outcome = await reap_orphan_group(proc.pid, f"{boot}:{start + 1}", grace=0.1)
        assert outcome.status == "identity-mismatch" and outcome.report is None
        await ping(proc.pid, reader)  # alive, and no SIGTERM/SIGKILL was ever delivered
    finally:
        proc.kill()
        await proc.wait()
        await proc.stdout.aclose()


async def test_leaderless_members_are_reported_not_signalled() -> None:
    # The leader starts a background child and exits; we reap it, so only the child is left
    # carrying the pgid, with nothing to verify it against.
    leader = await trio.lowlevel.open_process(
        ["bash", "-c", f'{sys.executable} -c "$0" & echo "child $!"', PONG_CHILD],
        start_new_session=True,
        stdout=subprocess.PIPE,
    )
    assert leader.stdout is not None
    identity = process_identity(leader.pid)
    assert identity is not None
    reader = LineReader(leader.stdout)
    lines = {await reader.line(), await reader.line()}
    (child_line,) = lines - {"ready"}
    child = int(child_line.removeprefix("child "))
    assert await leader.wait() == 0
    try:
        outcome = await reap_orphan_group(leader.pid, identity, grace=0.1)
        assert outcome.status == "unverified" and outcome.members == (child,)
        assert outcome.report is None
        await ping(child, reader)

        # A record from another boot (another host's): nothing here is looked at or signalled.
        _, start = parse_identity(identity)
        other_boot = "00000000-0000-0000-0000-000000000000"
        outcome = await reap_orphan_group(leader.pid, f"{other_boot}:{start}", grace=0.1)
        assert outcome.status == "other-boot" and outcome.report is None
        await ping(child, reader)
    finally:
        # The child is no longer ours to wait() for; watch /proc until it is gone.
        os.kill(child, signal.SIGKILL)
        await wait_gone(child)
        await leader.stdout.aclose()


async def test_a_zombie_leaders_marked_members_are_ours() -> None:
    # A zombie's environment cannot be read, so the group is not proven ours by its leader;
    # its member is stopped because it carries the call's marker.
    marker = new_marker()
    leader = await trio.lowlevel.open_process(
        ["bash", "-c", "sleep 100 & exit 0"],
        start_new_session=True,
        env={**os.environ, MARKER_VAR: marker},
    )
    identity = f"{process_identity(leader.pid)}:{marker}"
    await until(lambda: not alive(leader.pid))  # exited, not yet reaped
    await wait_members(leader.pid, 1)
    # The member is `sleep` itself, not bash's fork on its way to exec: mid-exec its
    # environment can be unreadable for a moment, and the census would rightly not vouch.
    await until(lambda: [cmdline(p) for p in in_group(leader.pid)] == ["sleep 100"])
    outcome = await reap_orphan_group(leader.pid, identity, grace=10)
    assert outcome.status == "stopped" and len(outcome.members) == 1
    assert in_group(leader.pid) == []
    assert await leader.wait() == 0


async def test_nothing_alive_is_gone() -> None:
    leader = await trio.lowlevel.open_process(["true"], start_new_session=True)
    identity = process_identity(leader.pid)
    assert identity is not None
    await leader.wait()
    outcome = await reap_orphan_group(leader.pid, identity, grace=0.1)
    assert outcome.status == "gone" and outcome.members == ()


async def test_bad_records_are_rejected() -> None:
    identity = process_identity(os.getpid())
    assert identity is not None
    for pgid in (0, -5):
        with pytest.raises(ValueError, match="not a process group id"):
            await reap_orphan_group(pgid, identity, grace=0.1)
    # Valid ids that are never a tool's group are simply not ours: nothing is signalled.
    boot, start = parse_identity(identity)
    for pgid in (1, os.getpgrp()):
        outcome = await reap_orphan_group(pgid, f"{boot}:{start + 1}", grace=0.1)
        assert outcome.status in ("identity-mismatch", "unverified")
    # Even a forged record naming this runtime's own group, with its real identity, proves
    # nothing: no process of that group carries the record's marker.
    own = process_identity(os.getpgrp())
    if own is not None:
        for record in (own, f"{own}:{new_marker()}"):
            outcome = await reap_orphan_group(os.getpgrp(), record, grace=0.1)
            assert outcome.status == "unverified" and outcome.report is None
    with pytest.raises(ValueError, match="malformed process identity"):
        await reap_orphan_group(os.getpid(), "garbage", grace=0.1)
