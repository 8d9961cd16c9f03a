"""run_group on real process trees (spec/tools.md §2, §4–§8).

Every check is about /proc state, exit statuses and bytes observed; the ``fail_after`` bounds
inside the helpers only turn a hang into a failure.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from support.polling import until
from support.proc import alive, in_group, ppid, tagged
from support.tools.testlib import (
    HANG_GUARD,
    TAG_VAR,
    Recorder,
    group_options,
    pgid_and_sid,
    wait_gone,
)

from trio_agent.procs.census import boot_id, identity_marker, parse_identity, process_identity
from trio_agent.tools.run_group import GroupResult, Spawned, run_group


async def _run(argv: list[str], rec: Recorder, **kwargs: Any) -> GroupResult:
    with trio.fail_after(HANG_GUARD):
        return await run_group(argv, **rec.callbacks(), options=group_options(**kwargs))


async def _cancel_when(
    argv: list[str], ready: Callable[[Recorder], bool], **kwargs: Any
) -> tuple[Recorder, GroupResult]:
    """Start ``argv``, cancel its scope once ``ready`` holds; return what on_abort got."""
    rec = Recorder()
    scope = trio.CancelScope()
    left_at_return: list[int] = []

    async def runner() -> None:
        with scope:
            await run_group(argv, **rec.callbacks(), options=group_options(**kwargs))
        # The guarantee under test: the moment the cancelled call is over, the group is gone.
        left_at_return.extend(in_group(rec.pgid))

    with trio.fail_after(HANG_GUARD):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runner)
            await until(lambda: len(rec.spawns) == 1 and ready(rec))
            scope.cancel()
    assert scope.cancelled_caught, "run_group returned instead of raising Cancelled"
    assert left_at_return == []
    assert len(rec.aborts) == 1
    return rec, rec.aborts[0]


def _members_at_least(n: int) -> Callable[[Recorder], bool]:
    return lambda rec: len(in_group(rec.pgid)) >= n


def _printed(marker: str) -> Callable[[Recorder], bool]:
    return lambda rec: marker in rec.text()


# ---------------------------------------------------------------------------- cancel


async def test_cancel_stops_two_background_sleeps() -> None:
    _, res = await _cancel_when(
        ["bash", "-c", "sleep 100 & sleep 100 & wait"], _members_at_least(3)
    )
    assert res.term_sent and not res.kill_needed
    assert res.exit_signal == signal.SIGTERM and res.exit_code is None
    assert len(res.members_seen) == 3 and res.survivors == () and res.stray_members == ()


async def test_cancel_stops_nested_shells() -> None:
    script = 'bash -c "sleep 100 & bash -c \\"sleep 100\\" & wait" & bash -c "sleep 100" & wait'
    # Five processes: two shells and three sleeps (bash execs a lone last command in place).
    _, res = await _cancel_when(["bash", "-c", script], _members_at_least(5))
    assert len(res.members_seen) == 5 and not res.kill_needed


async def test_cancel_of_a_term_trapping_tree_needs_sigkill() -> None:
    # The trap runs (and prints) but the loop carries on, so only SIGKILL ends it. The output
    # it writes while being stopped is still streamed.
    script = "trap 'echo got-term' TERM; echo ready; while :; do sleep 0.05; done"
    rec, res = await _cancel_when(["bash", "-c", script], _printed("ready"), grace=0.3)
    assert res.term_sent and res.kill_needed
    assert res.exit_signal == signal.SIGKILL
    assert "got-term" in rec.text()


async def test_cancel_reaches_a_double_forked_member_of_the_group() -> None:
    # ( sleep & ) double-forks: the subshell exits at once, so the sleep is reparented away
    # from the leader, but it stays in the group. (bash then execs the last sleep in place.)
    script = "( sleep 100 & ) ; echo forked; sleep 100"
    parents: list[int | None] = []

    def started(rec: Recorder) -> bool:
        members = in_group(rec.pgid)
        parents[:] = [ppid(p) for p in members if p != rec.pgid]
        return "forked" in rec.text() and len(members) == 2

    _, res = await _cancel_when(["bash", "-c", script], started)
    assert len(parents) == 1 and parents[0] != res.pgid  # not the leader's child any more
    assert len(res.members_seen) == 2 and not res.kill_needed


async def test_no_zombie_work_after_cancel(tmp_path: Path, no_leftover_processes: str) -> None:
    log = tmp_path / "appends"
    script = f"(while :; do echo bg >> {log}; done) & while :; do echo fg >> {log}; done"
    await _cancel_when(
        ["bash", "-c", script],
        lambda rec: log.exists() and b"bg" in log.read_bytes() and b"fg" in log.read_bytes(),
    )
    # Nothing of the tool is still writing: no process this test started is alive (each
    # carries the test's tag, a background loop included), so nothing is left that could.
    assert tagged(TAG_VAR, no_leftover_processes) == {}


async def test_cancel_before_spawn_starts_nothing() -> None:
    rec = Recorder()
    with trio.CancelScope() as scope:
        scope.cancel()
        await run_group(["sleep", "100"], **rec.callbacks(), options=group_options())
    assert scope.cancelled_caught and rec.spawns == [] and rec.aborts == []


async def test_failing_callback_stops_the_group_and_propagates() -> None:
    rec = Recorder()

    def explode(stream: str, text: str) -> None:
        raise RuntimeError("sink failed")

    cbs = {**rec.callbacks(), "on_output": explode}
    with pytest.raises(BaseExceptionGroup) as info, trio.fail_after(HANG_GUARD):
        await run_group(["bash", "-c", "sleep 100 & echo hi; wait"], **cbs, options=group_options())
    assert info.group_contains(RuntimeError, match="sink failed")
    assert len(rec.aborts) == 1
    assert in_group(rec.pgid) == []


# ---------------------------------------------------------------------------- normal exit


async def test_spawned_reports_a_new_session_leader_and_its_identity() -> None:
    rec = Recorder()
    seen: list[tuple[int, int, str | None]] = []

    def spawned(spawned: Spawned) -> None:
        rec.on_spawned(spawned)
        seen.append((*pgid_and_sid(spawned.pgid), process_identity(spawned.pgid)))

    with trio.fail_after(HANG_GUARD):
        res = await run_group(
            ["sleep", "0.01"],
            on_spawned=spawned,
            on_output=rec.output,
            on_abort=rec.on_abort,
            options=group_options(),
        )
    pgid, identity = rec.spawns[0]
    # Its own group and session; the identity is the leader's (as /proc shows it) plus the
    # call's marker, which the leader's environment carries (spec/tools.md §3).
    leader_identity, marker = identity.rsplit(":", 1)
    assert seen == [(pgid, pgid, leader_identity)]
    assert identity_marker(identity) == marker
    assert parse_identity(identity)[0] == boot_id()
    assert pgid != os.getpgrp()
    assert res.pgid == pgid and res.identity == identity
    assert res.exit_code == 0 and res.exit_signal is None
    assert not res.term_sent and not res.kill_needed and not res.timed_out


async def test_exit_code_and_separate_streams() -> None:
    rec = Recorder()
    res = await _run(["bash", "-c", "echo out; echo err >&2; exit 3"], rec)
    assert res.exit_code == 3
    assert rec.text("stdout") == "out\n" and rec.text("stderr") == "err\n"
    assert res.stdout_bytes == 4 and res.stderr_bytes == 4 and not res.truncated


async def test_leftover_member_is_stopped_after_a_normal_exit() -> None:
    rec = Recorder()
    res = await _run(["bash", "-c", "sleep 100 & echo hi"], rec)
    assert rec.text() == "hi\n" and res.exit_code == 0
    assert len(res.stray_members) == 1 and res.term_sent and not res.kill_needed
    assert in_group(res.pgid) == []


async def test_leftover_member_that_ignores_sigterm_is_killed() -> None:
    rec = Recorder()
    # Ignored before the fork (SIG_IGN is inherited), so the sleep cannot miss it.
    script = "trap '' TERM; sleep 100 & echo hi"
    res = await _run(["bash", "-c", script], rec, grace=0.1)
    assert rec.text() == "hi\n" and res.exit_code == 0
    assert len(res.stray_members) == 1 and res.kill_needed
    assert in_group(res.pgid) == []


async def test_a_process_that_left_the_group_is_stopped_with_it(tmp_path: Path) -> None:
    # spec/tools.md §10: setsid leaves the group, but the child keeps the call's marker, so
    # it is stopped with the group; then its copy of stdout closes and EOF comes as usual.
    escaped_now = tmp_path / "escaped"
    os.mkfifo(escaped_now)
    # The leader waits on the fifo until the child has really left, then exits.
    script = (
        f"setsid sh -c 'echo escaped $$; echo > {escaped_now}; exec sleep 100' & "
        f"read -r _ < {escaped_now}"
    )
    rec = Recorder()
    res = await _run(["bash", "-c", script], rec)
    escaped = int(rec.text().split()[1])
    try:
        assert res.exit_code == 0 and not res.pipes_held
        assert res.escapees == (escaped,) and res.stray_members == ()
        assert not alive(escaped)
    finally:
        if alive(escaped):
            os.kill(escaped, signal.SIGKILL)
            await wait_gone(escaped)


async def test_a_process_with_a_fresh_environment_escapes_but_cannot_hang_the_call(
    tmp_path: Path,
) -> None:
    # The one escape the marker cannot see (spec/tools.md §10): setsid plus exec with an
    # empty environment. It is not stopped; it still holds stdout, so EOF never comes and
    # the call stops reading once the group itself is gone, and says so.
    escaped_now = tmp_path / "escaped"
    os.mkfifo(escaped_now)
    script = (
        f"setsid env -i sh -c 'echo escaped $$; echo > {escaped_now}; exec sleep 100' & "
        f"read -r _ < {escaped_now}"
    )
    rec = Recorder()
    res = await _run(["bash", "-c", script], rec)
    escaped = int(rec.text().split()[1])
    try:
        assert res.exit_code == 0 and res.pipes_held and res.escapees == ()
        assert in_group(res.pgid) == [] and res.stray_members == ()
        assert alive(escaped) and pgid_and_sid(escaped) == (escaped, escaped)
    finally:
        os.kill(escaped, signal.SIGKILL)
        await wait_gone(escaped)


async def test_timeout_stops_the_group() -> None:
    rec = Recorder()
    res = await _run(["bash", "-c", "sleep 100 & sleep 100 & wait"], rec, timeout=0.2)
    assert res.timed_out and res.term_sent
    assert res.exit_signal == signal.SIGTERM and res.stray_members == ()
    assert in_group(res.pgid) == [] and rec.aborts == []


# ---------------------------------------------------------------------------- output


async def test_ten_megabytes_stream_in_bounded_chunks() -> None:
    total = 10_000_000
    count = largest = 0

    def sink(stream: str, text: str) -> None:
        # Count only: the test itself must not hold the output either.
        nonlocal count, largest
        assert stream == "stdout" and set(text) == {"x"}
        count += len(text)
        largest = max(largest, len(text.encode()))

    rec = Recorder()
    with trio.fail_after(HANG_GUARD):
        res = await run_group(
            ["bash", "-c", f"head -c {total} /dev/zero | tr '\\0' x"],
            on_spawned=rec.on_spawned,
            on_output=sink,
            options=group_options(chunk_bytes=4096, max_output_bytes=2 * total),
        )
    assert count == total == res.stdout_bytes
    assert 0 < largest <= 4096
    assert res.exit_code == 0 and not res.truncated


async def test_multibyte_characters_are_never_split() -> None:
    text = "aé€𝄞" * 500  # 1, 2, 3 and 4-byte characters
    rec = Recorder()
    program = f"import sys; sys.stdout.write({text!r})"
    await _run([sys.executable, "-c", program], rec, chunk_bytes=7)
    assert rec.text() == text
    assert all(len(t.encode()) <= 7 for _, t in rec.chunks)


async def test_invalid_utf8_is_replaced_not_fatal() -> None:
    rec = Recorder()
    res = await _run(["bash", "-c", r"printf '\xff\xfeok\xe2\x82'"], rec)
    assert rec.text() == "\ufffd\ufffdok\ufffd" and res.exit_code == 0


async def test_output_past_the_limit_is_drained_not_reported() -> None:
    rec = Recorder()
    script = "head -c 100000 /dev/zero | tr '\\0' o; head -c 100000 /dev/zero | tr '\\0' e >&2"
    res = await _run(["bash", "-c", script], rec, max_output_bytes=1000, chunk_bytes=256)
    reported = sum(len(t.encode()) for _, t in rec.chunks)
    assert reported == 1000 and res.truncated
    # Drained to the end, so the writer was never blocked on a full pipe.
    assert res.stdout_bytes == res.stderr_bytes == 100_000 and res.exit_code == 0


async def test_bad_argv_and_chunk_size_are_rejected() -> None:
    rec = Recorder()
    with pytest.raises(ValueError, match="chunk_bytes"):
        group_options(chunk_bytes=3)
    with pytest.raises(TypeError, match="argv"):
        await run_group([], **rec.callbacks(), options=group_options())
    with pytest.raises(FileNotFoundError):
        await run_group(["/nonexistent/program"], **rec.callbacks(), options=group_options())
    assert rec.spawns == []
