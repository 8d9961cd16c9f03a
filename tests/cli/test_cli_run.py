"""``trio-agent run``: Ctrl-C becomes cancel(user) for the running turn.

Real processes all the way: the CLI runs in a subprocess, its tool runs ``sleep`` in its own
process group, and the test sends a real SIGINT to the CLI process only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import CLI, cli as run_cli
from support.polling import HANG_GUARD, until_sync
from support.proc import in_group
from support.procenv import child_env, with_signals

from trio_agent.log import scan_log
from trio_agent.procs.containment import POLICY_VAR


@pytest.fixture(params=["pid-namespace", "process-group"])
def containment(request: pytest.FixtureRequest) -> str:
    """Each test runs with kernel containment and with the fallback (spec/tools.md §10)."""
    return str(request.param)


@pytest.fixture
def cli(tmp_path: Path, containment: str) -> Iterator[subprocess.Popen[str]]:
    policy = "required" if containment == "pid-namespace" else "process-group"
    proc = subprocess.Popen(
        with_signals([*CLI, "run", "--root", str(tmp_path)]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(**{POLICY_VAR: policy}),
    )
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        assert stream is not None
        stream.close()


def read_until(proc: subprocess.Popen[str], needle: str) -> list[str]:
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"{needle!r} never printed; got {seen}")


def send(proc: subprocess.Popen[str], line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def spawned_pgid(lines: list[str]) -> int:
    (line,) = [x for x in lines if "tool/spawned" in x]
    return int(line.rsplit("pgid ", 1)[1].split()[0])


def log_of(tmp_path: Path) -> bytes:
    (path,) = tmp_path.glob("*/session.jsonl")
    return path.read_bytes()


def test_ctrl_c_cancels_the_running_turn_and_the_next_turn_runs(
    cli: subprocess.Popen[str], tmp_path: Path
) -> None:
    send(cli, "sleep 30")
    pgid = spawned_pgid(read_until(cli, "tool/spawned"))
    assert in_group(pgid), "the tool's group should be running"
    cli.send_signal(signal.SIGINT)
    after = read_until(cli, "turn/end 1")
    assert any("ABORTED" in line for line in after)
    assert "ABORTED" in after[-1]
    assert in_group(pgid) == [], "the whole group is gone once turn/end is written"
    send(cli, "echo second")
    read_until(cli, "turn/end 2 COMPLETED")
    assert cli.stdin is not None
    cli.stdin.close()
    assert cli.wait(HANG_GUARD) == 0
    scan = scan_log(log_of(tmp_path), strict=True)
    assert scan.checker.balanced and scan.tail is None
    kinds = [e.data["reason"]["kind"] for e in scan.events if e.type == "turn/end"]
    assert kinds == ["aborted", "completed"]


def test_second_ctrl_c_exits_after_a_graceful_shutdown(
    cli: subprocess.Popen[str], tmp_path: Path
) -> None:
    send(cli, "sleep 30")
    send(cli, "echo queued")
    pgid = spawned_pgid(read_until(cli, "tool/spawned"))
    cli.send_signal(signal.SIGINT)
    read_until(cli, "turn/end 1")
    cli.send_signal(signal.SIGINT)  # idle now: leave
    assert cli.wait(HANG_GUARD) == 130
    assert in_group(pgid) == []
    scan = scan_log(log_of(tmp_path), strict=True)
    assert scan.checker.balanced
    # The user's cancel dropped the queued follow-up (default: inbox cleared).
    assert scan.checker.inbox.next_turn == []


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_or_sighup_stops_the_turn_and_leaves_the_log_balanced(
    cli: subprocess.Popen[str], tmp_path: Path, stop: signal.Signals
) -> None:
    """``kill``, ``timeout`` or a closed terminal: the run leaves as a second Ctrl-C does
    (it used to die, leaving the turn open and, without a namespace, the tool running)."""
    send(cli, "sleep 30")
    pgid = spawned_pgid(read_until(cli, "tool/spawned"))
    cli.send_signal(stop)
    assert cli.wait(HANG_GUARD) == 128 + stop
    assert in_group(pgid) == []
    scan = scan_log(log_of(tmp_path), strict=True)
    assert scan.checker.balanced and scan.tail is None
    (end,) = [e for e in scan.events if e.type == "turn/end"]
    assert end.data["reason"]["kind"] == "aborted"
    (result,) = [e for e in scan.events if e.type == "tool/result"]
    assert result.data["isError"] and result.data["error"] == {"code": "ABORTED"}


@pytest.mark.parametrize("ignored", [signal.SIGHUP, signal.SIGINT], ids=["nohup", "background"])
def test_a_signal_started_ignored_stays_ignored(tmp_path: Path, ignored: signal.Signals) -> None:
    """Started under ``nohup`` (SIGHUP ignored) or as a script's background job (SIGINT
    ignored), ``run`` goes on when that signal comes while it is idle, where taking it would
    end the run (it once took both): spec/cli.md §Stopping signals."""
    agent = subprocess.Popen(
        with_signals([*CLI, "run", "--root", str(tmp_path)], ignored=[ignored]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=child_env(),
    )
    assert agent.stdin is not None and agent.stdout is not None
    try:
        send(agent, "echo first")
        read_until(agent, "turn/end 1 COMPLETED")
        agent.send_signal(ignored)
        send(agent, "echo second")
        read_until(agent, "turn/end 2 COMPLETED")  # taken, the run would have left: no line
        agent.stdin.close()
        assert agent.wait(HANG_GUARD) == 0
    finally:
        if agent.poll() is None:
            agent.kill()
        agent.wait()
        agent.stdin.close()
        agent.stdout.close()


def test_every_printed_event_is_durable(cli: subprocess.Popen[str], tmp_path: Path) -> None:
    """A line on the screen survives a kill -9: it is printed only once it is on disk."""
    send(cli, "sleep 30")
    lines = read_until(cli, "tool/spawned")
    pgid = spawned_pgid(lines)
    cli.kill()  # SIGKILL right after the line was read: nothing more is written
    cli.wait()
    scan = scan_log(log_of(tmp_path), strict=False)
    last_printed = int(lines[-1].split("]", 1)[0].lstrip("["))
    assert [e.seq for e in scan.events][: last_printed + 1] == list(range(last_printed + 1))
    assert scan.events[last_printed].type == "tool/spawned"
    with contextlib.suppress(ProcessLookupError):  # the orphan a cold open would stop
        os.killpg(pgid, signal.SIGKILL)


def test_a_resumed_crashed_session_says_what_the_cold_open_did(
    cli: subprocess.Popen[str], tmp_path: Path, containment: str
) -> None:
    """After a kill -9 mid-tool, the next ``run`` names the placeholder, the closers and what
    it found of the call: the orphaned process group it stopped (the fallback), or the PID
    namespace that ended with the agent; the tree is gone and the log is balanced."""
    send(cli, "echo started; sleep 30")
    # Its output is printed: the command is past the spawn gate, so it ran.
    lines = read_until(cli, "tool/output")
    pgid = spawned_pgid(lines)
    call_id = lines[-1].split()[2]
    assert f"pgid {pgid} ({containment})" in "\n".join(lines)
    cli.kill()  # a real kill -9
    cli.wait()
    if containment == "process-group":
        assert in_group(pgid), "under the fallback the orphan outlives the agent"
        found = f"stopped orphan group {pgid} (call {call_id})"
    else:
        until_sync(lambda: in_group(pgid) == [])  # the tree dies with the agent
        found = f"call {call_id}: its PID namespace had ended with its runtime; nothing was left"
    try:
        again = run_cli("run", "--root", str(tmp_path))
        assert in_group(pgid) == [], "the cold open stops the orphaned group"
    finally:
        with contextlib.suppress(ProcessLookupError):  # only if the test failed
            os.killpg(pgid, signal.SIGKILL)
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    summary = again.stderr.splitlines()[1]
    assert summary == (
        f"  repaired: placeholder for call {call_id}, step/end, turn/end{{interrupted}}; {found}"
    )
    assert again.stderr.count(call_id) == 2  # the repair is said once, in that line
    scan = scan_log(log_of(tmp_path), strict=True)
    assert scan.checker.balanced
    # The printed tool/output is in the log as printed; the placeholder came after it.
    printed = int(lines[-1].split("]", 1)[0].lstrip("["))
    assert scan.events[printed].type == "tool/output"
    assert scan.events[printed + 1].type == "tool/result"


def test_a_closed_stdout_ends_the_run_quietly(cli: subprocess.Popen[str], tmp_path: Path) -> None:
    """``trio-agent run | head -1``: the reader goes away; the run stops its turn, closes the
    session and exits 141, with no traceback (the printer is a task, not a log observer)."""
    send(cli, "sleep 30")
    read_until(cli, "tool/spawned")
    assert cli.stdout is not None and cli.stderr is not None
    cli.stdout.close()  # the next event printed meets a closed pipe
    send(cli, "echo more")  # appends an event: the printer writes, and fails
    assert cli.wait(HANG_GUARD) == 141
    err = cli.stderr.read()
    assert "Traceback" not in err and "Broken pipe" not in err, err
    assert scan_log(log_of(tmp_path), strict=True).checker.balanced
