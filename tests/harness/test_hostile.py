"""``trio-agent harness`` against programs that cannot serve as the adapter, and one that
hangs after answering ``hello``: each ends with one line and exit 2, or a report and exit 1,
never a traceback. The programs are real subprocesses (tests/support/hostile_programs.py); the
verdict is the exit code and the output."""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import cli, no_traceback, one_line, stop_while_it_waits
from support.hostile_programs import DEEPLY_NESTED, HOSTILE
from support.polling import HANG_GUARD
from support.proc import kill_tagged, tagged
from support.procenv import child_env

from trio_agent.testing.protocol import POINTS, PROTOCOL

PY = sys.executable
#: Carried by every process a test's harness starts (its own scan finds what outlives it).
TAG_VAR = "TRIO_AGENT_HARNESS_TEST_TAG"
ROOT = Path(__file__).resolve().parents[2]


def harness(*args: str, port: list[str]) -> subprocess.CompletedProcess[str]:
    return cli("harness", *args, "--", *port, cwd=ROOT, guard=10 * HANG_GUARD)


@pytest.mark.slow  # long: make test-fast leaves it out
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_program_that_cannot_serve_is_one_line_exit_2(name: str, tmp_path: Path) -> None:
    program = tmp_path / "port.py"
    program.write_text(HOSTILE[name])
    line = one_line(harness("--timeout", "5", port=[PY, str(program)]), 2)
    assert line.startswith(f"harness: {PY} {program} cannot run as a harness adapter: "), line
    assert line.endswith("; no example was run"), line


def test_a_line_nested_too_deep_is_one_line_exit_2(tmp_path: Path) -> None:
    # Nested deeper than Python can parse, print or compare, but not than orjson reads: the
    # driver refuses it before any of those (spec/log.md §Values bounds a log line's depth).
    program = tmp_path / "port.py"
    program.write_text(DEEPLY_NESTED)
    line = one_line(harness(port=[PY, str(program)]), 2)
    assert "protocol: a line nested deeper than 108 levels of arrays and objects" in line, line
    assert line.endswith("; no example was run"), line


@pytest.mark.parametrize(
    ("prints", "says"),
    [
        (
            b'{"garbage": true}',
            'a line that is neither {"journal": ...} nor {"reply": ...}: \'{"garbage": true}\'',
        ),
        (b"[1, 2]", 'a line that is neither {"journal": ...} nor {"reply": ...}: \'[1, 2]\''),
        (b"\x1b[31mhello\xff", "a line that is not JSON: '\\x1b[31mhello\\\\xff'"),
    ],
    ids=["another-object", "not-an-object", "control-and-invalid-bytes"],
)
def test_a_line_of_another_shape_is_named_in_one_line(
    prints: bytes, says: str, tmp_path: Path
) -> None:
    """The line is shown as text between quotes, escapes visible (an escape sequence never
    reaches the terminal raw), not as Python's ``b'...'``."""
    program = tmp_path / "port.py"
    program.write_text(
        f"import sys\nsys.stdin.readline()\nsys.stdout.buffer.write({prints!r} + b'\\n')\n"
    )
    line = one_line(harness(port=[PY, str(program)]), 2)
    assert f"cannot run as a harness adapter: protocol: {says}; no example was run" in line, line
    assert "\x1b" not in line


def test_a_missing_program_is_one_line_exit_2(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-port"
    line = one_line(harness(port=[str(missing)]), 2)
    assert line == f"harness: cannot run {missing}: No such file or directory"


def test_an_empty_program_name_is_one_line_exit_2() -> None:
    """``harness -- ''`` is refused by name, before anything runs: exec would only say
    "Permission denied" (it tries the working directory)."""
    line = one_line(harness(port=[""]), 2)
    assert line == (
        "harness: the program's name is empty: give the runtime's command after --, "
        "e.g. harness -- ./my-port"
    )


def test_a_directory_as_the_program_is_one_line_exit_2(tmp_path: Path) -> None:
    """``harness -- DIR`` says what DIR is: exec would only say "Permission denied"."""
    line = one_line(harness(port=[str(tmp_path), "--flag"]), 2)
    assert line == f"harness: cannot run {tmp_path} --flag: is a directory"


#: Answers ``hello`` (speaking ``PROTOCOL``) and ``bye`` as the protocol says, and never
#: anything else.
HANGS_AFTER_HELLO = r"""
import json, sys, time
for line in sys.stdin:
    op = json.loads(line)["op"]
    if op == "hello":
        result = {"protocol": PROTOCOL, "implementation": "hangs", "points": []}
    elif op == "bye":
        result = None
    else:
        time.sleep(3600)
    print(json.dumps({"reply": {"ok": True, "crashed": False, "result": result}}), flush=True)
    if op == "bye":
        break
"""


def test_another_protocol_version_is_one_line_exit_2(tmp_path: Path) -> None:
    """A port written for an earlier protocol is told so before any example, not failed on
    whichever entry it lacks."""
    program = tmp_path / "port.py"
    program.write_text(HANGS_AFTER_HELLO.replace("PROTOCOL", repr("trio-agent-harness/1")))
    line = one_line(harness(port=[PY, str(program)]), 2)
    assert line == (
        f"harness: {PY} {program} speaks trio-agent-harness/1, this driver speaks {PROTOCOL} "
        "(spec/harness.md); no example was run"
    )


def test_a_hang_stops_the_run_unshrunk(tmp_path: Path) -> None:
    """One request waits out --timeout; the run is not shrunk (each attempt would wait
    again), and the report says which request got no reply."""
    program = tmp_path / "port.py"
    program.write_text(HANGS_AFTER_HELLO.replace("PROTOCOL", repr(PROTOCOL)))
    result = no_traceback(harness("--timeout", "3", "--seed", "1", port=[PY, str(program)]))
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "FAIL: NoReply: no reply to 'start' within 3s" in out, out
    assert "not shrunk (no reply, or no exit after 'bye', within --timeout 3s" in out
    assert "!! no reply: no reply to 'start' within 3s" in out
    assert "--timeout 3 --" in out.split("reproduce:", 1)[1]


#: Our adapter, started so that its process group holds a ``sleep`` it never stops.
LEAVES_A_SLEEP = f"sleep 3600 & exec {PY} -m trio_agent.testing.adapter_server"
#: Our adapter, then (after it exits at ``bye``) a leader that runs on, its output elsewhere;
#: except the first time (the preflight's ``hello``), which leaves MARKER behind instead.
STAYS_AFTER_BYE = (
    f"{PY} -m trio_agent.testing.adapter_server; "
    "if [ -e MARKER ]; then exec sleep 3600 >/dev/null; fi; touch MARKER"
)


def _harness_tagged(tag: str, *args: str, port: list[str]) -> subprocess.CompletedProcess[str]:
    """``harness`` with every process it starts carrying ``TAG_VAR=tag``, so the test's own
    scan of /proc finds whatever of them outlives it."""
    env = {**child_env(), TAG_VAR: tag}
    return cli("harness", *args, "--", *port, cwd=ROOT, env=env, guard=10 * HANG_GUARD)


@pytest.mark.slow
def test_a_port_that_leaves_a_process_at_bye_fails_the_run(tmp_path: Path) -> None:
    """An implementation that exits after ``bye`` but leaves a process in its group fails
    the run, named, and the process is killed (spec/harness.md §Wire format)."""
    tag = f"leaves-{tmp_path.name}"
    port = ["bash", "-c", LEAVES_A_SLEEP]
    try:
        result = no_traceback(_harness_tagged(tag, "--examples", "1", "--steps", "1", port=port))
        left = tagged(TAG_VAR, tag)
    finally:
        kill_tagged(TAG_VAR, tag)
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(
        r"FAIL: AdapterError: the implementation exited with 0 after 'bye' but left 1 process "
        r"\(pid \d+ sleep\) running in its group; killed",
        result.stdout,
    ), result.stdout
    assert left == {}


@pytest.mark.slow
def test_a_port_that_does_not_exit_after_bye_stops_the_run_unshrunk(tmp_path: Path) -> None:
    """An implementation still running --timeout after ``bye`` stops the run unshrunk, as a
    request without a reply does; its group is killed. The timeout always runs out there:
    the leader never exits. It also bounds every request before, the adapter's start
    included, so it is long enough for a loaded machine."""
    tag = f"stays-{tmp_path.name}"
    port = ["bash", "-c", STAYS_AFTER_BYE.replace("MARKER", shlex.quote(str(tmp_path / "once")))]
    try:
        result = no_traceback(
            _harness_tagged(tag, "--examples", "1", "--steps", "1", "--timeout", "20", port=port)
        )
        left = tagged(TAG_VAR, tag)
    finally:
        kill_tagged(TAG_VAR, tag)
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert re.search(
        r"FAIL: NoReply: the implementation did not exit within 20s of 'bye' \(--timeout\); "
        r"killed its group: 1 process \(pid \d+ sleep\)",
        out,
    ), out
    assert "not shrunk (no reply, or no exit after 'bye', within --timeout 20s" in out
    assert left == {}


@pytest.mark.parametrize(
    "stop", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"]
)
def test_a_stopping_signal_kills_the_port_then_exits(tmp_path: Path, stop: signal.Signals) -> None:
    """The port runs in a session of its own, where neither the terminal's Ctrl-C nor a
    signal sent to the harness goes: SIGTERM and SIGHUP once ended the harness and left the
    port running. Now each kills the port's group, then the harness exits 128 + the signal."""
    stop_while_it_waits(*_harness_on_a_waiting_port(tmp_path), stop)


@pytest.mark.parametrize("ignored", [signal.SIGHUP, signal.SIGINT], ids=["nohup", "background"])
def test_a_signal_started_ignored_stays_ignored(tmp_path: Path, ignored: signal.Signals) -> None:
    """Started under ``nohup`` (SIGHUP ignored) or as a script's background job (SIGINT
    ignored), the harness goes on when that signal comes (SIGHUP once stopped it under
    nohup), and SIGTERM still stops it and the port (spec/cli.md §Stopping signals)."""
    stop_while_it_waits(*_harness_on_a_waiting_port(tmp_path), signal.SIGTERM, ignoring=ignored)


def _harness_on_a_waiting_port(tmp_path: Path) -> tuple[list[str], Path]:
    """``harness`` arguments for a port that answers ``hello``, writes its pid to a file (the
    second item) and waits for ever."""
    program, pidfile = tmp_path / "port.py", tmp_path / "port.pid"
    hangs = HANGS_AFTER_HELLO.replace("PROTOCOL", repr(PROTOCOL)).replace(
        "    time.sleep(3600)",
        f"    open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n        time.sleep(3600)",
    )
    program.write_text("import os\n" + hangs)
    return ["harness", "--timeout", str(10 * HANG_GUARD), "--", PY, str(program)], pidfile


def test_list_prints_the_named_points_without_a_program() -> None:
    result = cli("harness", "--list")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == list(POINTS)


@pytest.mark.parametrize(
    ("option", "why"),
    [
        (("--shrink-limit", "0"), "--shrink-limit: must be a positive number of seconds: '0'"),
        (
            ("--shrink-limit", "inf"),
            "--shrink-limit: must be a positive number of seconds: 'inf'",
        ),
        (("--examples", "0"), "--examples: must be at least 1: '0'"),
    ],
)
def test_a_bad_bound_is_one_line_exit_2(option: tuple[str, str], why: str) -> None:
    line = one_line(harness(*option, port=[PY, "-m", "trio_agent.testing.adapter_server"]), 2)
    assert line == f"trio-agent harness: argument {why} (see `trio-agent harness --help`)", line
