"""No zombie work from a tool that escapes its process group (spec/tools.md §10).

A tool's command starts children that leave the group in every way a shell user meets:
``setsid``, ``setpgid`` to a new group, a daemonizing double fork, and, inside the group, a
child that ignores SIGTERM. Whether the call is cancelled or its runtime is killed with
SIGKILL and recovery reaps what it left, afterwards no process of the call is alive. Which
processes belong to the call is read here from ``/proc/*/environ`` independently of the code
under test.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import trio
from support.polling import until
from support.proc import tagged
from support.procenv import REPO
from support.tools.testlib import Recorder, group_options, runtime_killed_mid_tool

from trio_agent.procs import census
from trio_agent.procs.census import MARKER_VAR, identity_marker
from trio_agent.procs.orphans import reap_orphan_group
from trio_agent.tools.run_group import Spawned, run_group

DAEMON = (
    "import os, time\n"
    "if os.fork(): os._exit(0)\n"
    "os.setsid()\n"
    "if os.fork(): os._exit(0)\n"
    "time.sleep(1000)\n"
)
#: Each escape kind, as a background job of the tool's bash command, and how many
#: long-lived processes it leaves.
ESCAPES = {
    "setsid": ("setsid sleep 1000 &", 1),
    "setpgid": (f"{sys.executable} -c 'import os, time; os.setpgid(0, 0); time.sleep(1000)' &", 1),
    "double-fork": (f'{sys.executable} -c "{DAEMON}" &', 1),
    "term-ignoring": ("bash -c \"trap '' TERM; sleep 1000; :\" &", 2),
}


def carrying(marker: str) -> list[int]:
    """Live processes whose environment holds the call's marker (an independent scan)."""
    return list(tagged(MARKER_VAR, marker))


def _script(kinds: list[str]) -> tuple[str, int]:
    jobs = " ".join(ESCAPES[k][0] for k in kinds)
    # +1: the leader itself, which becomes a sleep that outlives its jobs. (A leader that
    # `wait`s would exit as soon as the double fork's first process does, so the count
    # would only transiently reach its expected value.) A process of the double fork's
    # chain forks before it exits, so the chain always counts for at least one.
    return f"{jobs} exec sleep 1000", 1 + sum(ESCAPES[k][1] for k in kinds)


KINDS = [[k] for k in ESCAPES] + [list(ESCAPES)]
IDS = [*ESCAPES, "all-at-once"]


@pytest.mark.parametrize("kinds", KINDS, ids=IDS)
async def test_cancel_stops_every_escapee(kinds: list[str]) -> None:
    script, expected = _script(kinds)
    rec = Recorder()
    markers: list[str] = []

    def spawned(spawned: Spawned) -> None:
        rec.on_spawned(spawned)
        marker = identity_marker(spawned.identity)
        assert marker is not None
        markers.append(marker)

    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:

            async def run() -> None:
                await run_group(
                    ["bash", "-c", script],
                    on_spawned=spawned,
                    on_output=rec.output,
                    options=group_options(grace=0.2),
                )

            nursery.start_soon(run)
            await until(lambda: bool(markers) and len(carrying(markers[0])) >= expected)
            scope.cancel()
    assert scope.cancelled_caught
    # run_group returned (by raising Cancelled): the whole tree is gone already.
    assert carrying(markers[0]) == []


@pytest.mark.parametrize("kinds", KINDS, ids=IDS)
async def test_kill_9_then_recovery_stops_every_escapee(kinds: list[str]) -> None:
    script, expected = _script(kinds)

    def started(_: int, identity: str) -> bool:
        return len(carrying(identity_marker(identity) or "-")) >= expected

    pgid, identity, _ = await runtime_killed_mid_tool(script, started)
    marker = identity_marker(identity)
    assert marker is not None
    # The runtime is dead; its tree lives on. Waited for, not read once: a process caught
    # mid-exec (or the double fork between links) has no readable environment for a moment.
    await until(lambda: len(carrying(marker)) >= expected)
    outcome = await reap_orphan_group(pgid, identity, grace=0.2)
    assert outcome.status == "stopped"
    assert carrying(marker) == []


def _orphan_log(directory: Path, pgid: int, identity: str) -> Path:
    """A crashed session whose open call recorded ``pgid``/``identity`` in tool/spawned."""
    from trio_agent.log import encode_event
    from trio_agent.store import Session

    s = Session.in_memory("s", clock=lambda: 5)
    s.append("turn/start", {"turn": 1})
    s.append("step/start", {"turn": 1, "step": 1})
    block = {"type": "tool-call", "id": "c1", "name": "bash", "arguments": {"command": "x"}}
    message = {"id": "m", "content": [block]}
    s.append("assistant/message", {"turn": 1, "step": 1, "message": message})
    where = {"turn": 1, "step": 1, "callId": "c1"}
    s.append("tool/call", {**where, "name": "bash", "arguments": {"command": "x"}})
    s.append("tool/spawned", {**where, "pgid": pgid, "identity": identity})
    path = directory / "s" / "session.jsonl"
    path.parent.mkdir(parents=True)
    header = b'{"type":"session","version":1,"id":"s","createdAt":1}\n'
    path.write_bytes(header + b"".join(encode_event(e) for e in s.events))
    return path


@pytest.mark.parametrize("no_reap", [True, False], ids=["no-reap", "reap"])
async def test_repair_write_stops_the_orphan_unless_no_reap(tmp_path: Path, no_reap: bool) -> None:
    marker = census.new_marker()
    orphan = await trio.lowlevel.open_process(
        ["sleep", "60"], start_new_session=True, env={**os.environ, MARKER_VAR: marker}
    )
    try:
        identity = f"{census.process_identity(orphan.pid)}:{marker}"
        log = _orphan_log(tmp_path, orphan.pid, identity)
        argv = [sys.executable, "-m", "trio_agent", "repair", "--write", str(log)]
        done = await trio.run_process(
            [*argv, "--no-reap"] if no_reap else argv, capture_stdout=True, capture_stderr=True,
            check=False, cwd=REPO,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        stopped = b"was stopped during recovery" in log.read_bytes()
        assert stopped is not no_reap
        assert (carrying(marker) == []) is not no_reap
    finally:
        orphan.kill()
        await orphan.wait()
