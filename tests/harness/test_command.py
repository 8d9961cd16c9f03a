"""``trio-agent harness -- CMD``: the state machine driving a runtime given as a command.

Our own runtime passes through the command exactly as a port would; a port with a planted
bug fails with the shrunk rules, the wire traffic and the reproduction command; a runtime
behind a shell wrapper is killed whole, and a wrapper that swallows a crash gets an error
saying so.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import cli
from support.polling import HANG_GUARD, until_sync
from support.proc import in_group

from trio_agent.testing.pipe import PipeAdapter
from trio_agent.testing.protocol import AdapterError

#: Long: make test runs it, make test-fast leaves it out.
pytestmark = pytest.mark.slow

PY = sys.executable
ROOT = Path(__file__).resolve().parents[2]
SERVER = [PY, "-m", "trio_agent.testing.adapter_server"]
#: A hang guard only: the slowest run here (finding and shrinking a failing run) takes a minute.
GUARD = 10 * HANG_GUARD


def harness(*args: str, port: list[str]) -> subprocess.CompletedProcess[str]:
    return cli("harness", *args, "--", *port, cwd=ROOT, guard=GUARD)


def test_our_runtime_passes_through_the_command() -> None:
    result = harness("--examples", "6", "--steps", "20", "--seed", "7", port=SERVER)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "PASS"
    assert any(line.startswith("tool/call:after") for line in lines)  # the coverage table
    # Machine instances run: the 6 valid examples, plus any Hypothesis discarded (overrun).
    ran = re.search(r"^(\d+) examples;", result.stdout, re.M)
    assert ran is not None and int(ran.group(1)) >= 6, result.stdout


#: A port: our server behind a relay that answers every cancel's end with ``hit: true``
#: (an idle cancel must reach nothing, K5). It dies the way its runtime died.
LYING_PORT = r"""
import json, os, signal, subprocess, sys, threading
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def feed():
    for line in sys.stdin.buffer:
        child.stdin.write(line); child.stdin.flush()
    child.stdin.close()
threading.Thread(target=feed, daemon=True).start()
for line in child.stdout:
    obj = json.loads(line)
    entry = obj.get("journal", {})
    if entry.get("k") == "act" and entry.get("op") == "cancel" and entry.get("phase") == "end":
        entry["hit"] = True
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
if child.wait() == -signal.SIGKILL:
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_port_with_a_planted_bug_fails_with_a_readable_report(tmp_path: Path) -> None:
    port = tmp_path / "port.py"
    port.write_text(LYING_PORT)
    result = harness(
        "--examples", "60", "--steps", "12", "--seed", "3", port=[PY, str(port), *SERVER]
    )
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    # The second-cancel scenario, which every run plays first, finds the lie at once.
    assert "FAIL: HarnessViolation: rule scenario 'K3, K5, K19:" in out
    assert "reference model: cancel returned hit=True" in out
    assert "the rule scenario's" in out and "cancel(" in out
    assert "wire traffic of that run" in out and '> {"op":"cancel"' in out
    # Each reply in full, the state the checks compared included.
    replies = [line.strip() for line in out.splitlines() if line.strip().startswith("< {")]
    assert replies and all('"state":' in r and not r.endswith("...") for r in replies), out
    assert "reproduce: trio-agent harness --examples 60 --steps 12 --seed 3" in out


def test_a_crash_kills_a_wrapped_runtime_whole(tmp_path: Path) -> None:
    """``bash -c 'cat | runtime'``: killing only bash would leave the runtime holding stdout
    (no end of file, a hang); the driver kills the process group."""
    wrapped = ["bash", "-c", 'cat | "$@"', "wrapper", *SERVER]
    adapter = PipeAdapter(wrapped)
    log = tmp_path / "s" / "session.jsonl"
    log.parent.mkdir()
    try:
        assert adapter.request({"op": "start", "log": str(log), "create": True, "plan": []})["ok"]
        assert adapter.request({"op": "followup", "text": "hi"})["ok"]
        proc = adapter._proc
        assert proc is not None
        adapter.crash()
        assert in_group(proc.pid) == []
    finally:
        adapter.close()


#: The first line of the two hanging "runtimes" below: it says, by creating the file named
#: by its first argument, that it has started and is about to read its requests.
READY = "import pathlib, sys; pathlib.Path(sys.argv[1]).touch()\n"

#: A "runtime" that reports a crash trap firing and then hangs with stdout open: what a
#: shell wrapper around a self-killing runtime looks like from the driver.
SWALLOWED_CRASH = (
    READY
    + r"""
import sys, time
for line in sys.stdin:
    sys.stdout.write('{"journal":{"k":"fire","point":"step/start:after","action":{"kind":"crash","after_write":false},"events":3}}\n')
    sys.stdout.flush()
    time.sleep(3600)
"""
)

#: How long the driver waits for a line here. The runtime is started and seen ready before the
#: request, so this spans only its answer (one line read, one written), never its start-up.
NO_REPLY = 2


@pytest.mark.parametrize(
    ("script", "says"),
    [
        (SWALLOWED_CRASH, "a wrapper (bash -c, a pipe through tee, npm) still holds stdout"),
        (READY + "import time; time.sleep(3600)", "it wrote nothing at all"),
    ],
)
def test_no_reply_says_what_probably_happened(tmp_path: Path, script: str, says: str) -> None:
    # The timeout only turns these real hangs into the error under test.
    port = tmp_path / "port.py"
    port.write_text(script)
    ready = tmp_path / "ready"
    adapter = PipeAdapter([PY, str(port), str(ready)], timeout=NO_REPLY)
    try:
        adapter._spawn()  # what the request would do first; here before the clock starts
        until_sync(ready.exists)
        with pytest.raises(AdapterError) as info:
            adapter.request({"op": "hello"})
    finally:
        adapter.close()
    assert f"no reply to 'hello' within {NO_REPLY}s" in str(info.value)
    assert says in str(info.value)


#: A port: our server behind a relay that spoils one line, the second journal entry of the
#: first request after ``start`` that writes two: ``cut`` leaves it not JSON, ``entry``
#: gives it an unknown kind, ``exit`` writes nothing more and exits with 3 instead. It dies
#: the way its runtime died.
SPOILING_PORT = r"""
import json, os, signal, subprocess, sys, threading
mode, command = sys.argv[1], sys.argv[2:]
child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def feed():
    for line in sys.stdin.buffer:
        child.stdin.write(line); child.stdin.flush()
    child.stdin.close()
threading.Thread(target=feed, daemon=True).start()
replies = entries = 0
spoiled = False
for line in child.stdout:
    obj = json.loads(line)
    if "reply" in obj:
        replies, entries = replies + 1, 0
    elif replies and not spoiled:
        entries += 1
        if entries == 2:
            spoiled = True
            if mode == "exit":
                os._exit(3)
            if mode == "cut":
                line = line.rstrip(b"\n")[:-5] + b"\n"
            else:
                obj["journal"]["k"] = "bogus"
                line = json.dumps(obj, separators=(",", ":")).encode() + b"\n"
    sys.stdout.buffer.write(line); sys.stdout.buffer.flush()
if child.wait() == -signal.SIGKILL:
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize(
    ("mode", "fail", "marked"),
    [
        ("cut", "protocol: a line that is not JSON", '!! offending line: \'{"journal":'),
        ("entry", "protocol: unknown journal entry bogus", '!! offending line: \'{"journal":'),
        ("exit", "the implementation exited with 3", "!! no reply: the implementation exited"),
    ],
)
def test_the_report_shows_the_line_that_broke_the_protocol(
    tmp_path: Path, mode: str, fail: str, marked: str
) -> None:
    """The wire traffic of a request the driver gave up on ends with the journal entries
    it received and the offending line, marked, not with the bare request."""
    port = tmp_path / "port.py"
    port.write_text(SPOILING_PORT)
    result = harness("--examples", "3", "--seed", "1", port=[PY, str(port), mode, *SERVER])
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert f"FAIL: AdapterError: {fail}" in out, out
    traffic = out.split("wire traffic of that run", 1)[1].split("\nreproduce:", 1)[0]
    lines = [line.strip() for line in traffic.splitlines()[1:] if line.strip()]
    last = max(i for i, line in enumerate(lines) if line.startswith("> "))
    request, received = lines[last], lines[last + 1 :]
    assert request.startswith('> {"op":"followup"'), out
    # The entry that came before the spoiled one, then the spoiled line (or the exit), last.
    assert len(received) == 2, out
    assert received[0].startswith('{"k":"act","op":"followup","phase":"begin"'), out
    assert received[1].startswith(marked), out
    if mode == "entry":
        assert '"k":"bogus"' in received[1], out
    if mode == "cut":
        assert '"type":"agent/inbox/spliced"' in received[1], out
