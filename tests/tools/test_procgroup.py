"""/proc identity and membership, and terminate_group (spec/tools.md §3, §4), on real processes."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import trio
from support.polling import until
from support.proc import alive, in_group, state
from support.tools.testlib import wait_members

from trio_agent.procs.census import boot_id, group_members, parse_identity, process_identity
from trio_agent.procs.group_kill import kill_group_until_gone
from trio_agent.procs.terminate import terminate_group


async def _spawn(argv: list[str]) -> trio.Process:
    return await trio.lowlevel.open_process(argv, start_new_session=True)


async def _wait_exited_unreaped(proc: trio.Process) -> None:
    # Watch /proc instead of wait(): the leader must stay an unreaped zombie.
    await until(lambda: not alive(proc.pid))


def test_identity_of_self_is_boot_id_and_start_time() -> None:
    identity = process_identity(os.getpid())
    assert identity is not None
    boot, start = parse_identity(identity)
    assert boot == Path("/proc/sys/kernel/random/boot_id").read_text().strip() == boot_id()
    assert start > 0
    assert process_identity(os.getpid()) == identity  # stable


async def test_awkward_comm_is_parsed_after_the_last_paren(tmp_path: Path) -> None:
    # comm is the executable's file name: one that looks like stat fields must not fool us.
    weird = tmp_path / "x) Z 1 1 1 (y"
    weird.symlink_to("/bin/sleep")
    proc = await _spawn([str(weird), "100"])
    try:
        # Popen returns once exec has closed the CLOEXEC status pipe; the kernel renames the
        # task a moment later, so wait for the new comm rather than assume it.
        comm = Path(f"/proc/{proc.pid}/comm")
        await until(lambda: comm.read_text().startswith("x) Z 1 1 1 (y"))
        assert group_members(proc.pid) == [proc.pid]  # pgrp and state parsed correctly
        identity = process_identity(proc.pid)
        assert identity is not None
        mine = process_identity(os.getpid())
        assert mine is not None
        assert parse_identity(identity)[1] >= parse_identity(mine)[1]
    finally:
        proc.kill()
        await proc.wait()


async def test_identity_is_none_once_reaped() -> None:
    proc = await _spawn(["true"])
    assert process_identity(proc.pid) is not None  # running or a zombie: still in the table
    await proc.wait()
    assert process_identity(proc.pid) is None


def test_malformed_identity_is_rejected() -> None:
    for bad in ["", "abc", "boot:", ":12", "boot:12x"]:
        with pytest.raises(ValueError, match="malformed process identity"):
            parse_identity(bad)


async def test_members_of_a_tree_and_not_the_zombie_leader() -> None:
    proc = await _spawn(["bash", "-c", "sleep 100 & sleep 100 & wait"])
    # wait_members counts with the tests' own /proc probe; group_members must agree with it.
    members = await wait_members(proc.pid, 3)
    assert group_members(proc.pid) == members
    assert proc.pid in members and len(members) == 3
    report = await terminate_group(proc.pid, leader=proc, grace=10)
    assert in_group(proc.pid) == [] and group_members(proc.pid) == []
    assert report.members_seen == tuple(members)

    # A leader that exited is a zombie until reaped: it no longer counts as a member.
    proc = await _spawn(["bash", "-c", "sleep 100 & exit 0"])
    await _wait_exited_unreaped(proc)
    members = await wait_members(proc.pid, 1)
    assert group_members(proc.pid) == members
    assert proc.pid not in members and len(members) == 1
    report = await terminate_group(proc.pid, leader=proc, grace=10)
    assert report.leader_exit_code == 0 and report.term_sent and not report.kill_needed
    assert report.members_seen == tuple(members)
    assert in_group(proc.pid) == [] and group_members(proc.pid) == []


async def test_terminate_group_that_honours_sigterm() -> None:
    proc = await _spawn(["sleep", "100"])
    report = await terminate_group(proc.pid, leader=proc, grace=10)
    assert report.term_sent and not report.kill_needed
    assert report.leader_exit_signal == signal.SIGTERM and report.leader_exit_code is None
    assert report.group_gone and report.members_seen == (proc.pid,)
    assert proc.returncode == -signal.SIGTERM  # reaped by terminate_group
    assert in_group(proc.pid) == []


async def test_terminate_group_that_ignores_sigterm_needs_sigkill() -> None:
    # SIG_IGN is inherited, so the background sleep ignores SIGTERM as well.
    proc = await _spawn(["bash", "-c", "trap '' TERM; sleep 100 & wait"])
    await wait_members(proc.pid, 2)
    report = await terminate_group(proc.pid, leader=proc, grace=0.1)
    assert report.term_sent and report.kill_needed
    assert report.leader_exit_signal == signal.SIGKILL
    assert len(report.members_seen) == 2 and report.group_gone
    assert in_group(proc.pid) == []


async def test_stopped_member_is_continued_and_honours_sigterm() -> None:
    proc = await _spawn(["bash", "-c", "sleep 100 & kill -STOP $!; wait"])
    await until(lambda: any(state(p) == "T" for p in in_group(proc.pid)))
    report = await terminate_group(proc.pid, leader=proc, grace=10)
    assert report.term_sent and not report.kill_needed  # SIGCONT let it act on SIGTERM
    assert in_group(proc.pid) == []


async def test_terminate_group_already_empty_sends_no_sigterm() -> None:
    proc = await _spawn(["bash", "-c", "exit 7"])
    await _wait_exited_unreaped(proc)
    report = await terminate_group(proc.pid, leader=proc, grace=10)
    assert not report.term_sent and not report.kill_needed
    assert report.leader_exit_code == 7 and report.members_seen == ()


async def test_terminate_group_works_under_a_cancelled_shield() -> None:
    # How callers use it: from a cancelled scope, shielded.
    proc = await _spawn(["bash", "-c", "sleep 100 & wait"])
    await wait_members(proc.pid, 2)
    with trio.CancelScope() as outer:
        outer.cancel()
        with trio.CancelScope(shield=True):
            report = await terminate_group(proc.pid, leader=proc, grace=10)
    assert report.group_gone and in_group(proc.pid) == []


async def test_refuses_to_signal_reserved_or_own_groups() -> None:
    for pgid in (0, 1, os.getpgrp()):
        with pytest.raises(ValueError, match="refusing to signal"):
            await terminate_group(pgid, leader=None, grace=0)
    proc = await _spawn(["sleep", "100"])
    try:
        with pytest.raises(ValueError, match="does not lead"):
            await terminate_group(proc.pid + 1, leader=proc, grace=0)
        assert alive(proc.pid)
    finally:
        proc.kill()
        await proc.wait()


def test_group_members_of_unused_pgid_is_empty() -> None:
    # Above any possible pid_max (2**22), so no process can have it.
    assert group_members(2**22 + 12345) == []


async def test_kill_group_until_gone_returns_once_the_kernel_says_so() -> None:
    """The blocking kill (the harness's pipe adapter, conform): when it returns, no member
    is alive by the tests' own probe, with no wait of the test's own; the leader, still
    running when the kill began, is a zombie for its parent to reap."""
    proc = await _spawn(["bash", "-c", "sleep 100 & sleep 100 & wait"])
    before = await wait_members(proc.pid, 3)
    killed = await trio.to_thread.run_sync(kill_group_until_gone, proc.pid)
    assert sorted(killed) == sorted(before)
    assert in_group(proc.pid) == []
    assert state(proc.pid) == "Z"  # not reaped: the group id stayed pinned throughout
    assert await proc.wait() == -signal.SIGKILL
    assert kill_group_until_gone(2**22 + 12345) == []  # no such group: nothing to do


def test_kill_group_until_gone_refuses_reserved_or_own_groups() -> None:
    for pgid in (0, 1, os.getpgrp()):
        with pytest.raises(ValueError, match="refusing to signal"):
            kill_group_until_gone(pgid)
