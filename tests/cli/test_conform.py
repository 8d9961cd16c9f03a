"""``trio-agent conform``: every vector through the file-command contract of spec/cli.md.

Our own CLI runs through it exactly as a port's would (a subprocess per command); ports with
a planted bug show that each kind of expectation can fail and that the failure names the
case, the expectation and the answer.
"""

from __future__ import annotations

import contextlib
import os
import pty
import re
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support import proc
from support.cli import CLI, cli, no_traceback, one_line, stop_while_it_waits
from support.hostile_programs import DEEPLY_NESTED, HOSTILE, LONE_SURROGATE
from support.polling import HANG_GUARD, until_sync
from support.procenv import child_env

PY = sys.executable
ROOT = Path(__file__).resolve().parents[2]
#: A hang guard only: the slowest run here (every vector through our CLI) takes some 20 s.
GUARD = 10 * HANG_GUARD


def conform(*args: str, port: list[str]) -> subprocess.CompletedProcess[str]:
    return cli("conform", *args, "--", *port, cwd=ROOT, guard=GUARD)


@pytest.mark.slow  # long: make test-fast leaves it out
def test_our_cli_passes_every_vector() -> None:
    result = conform(port=[PY, "-m", "trio_agent"])
    assert result.returncode == 0, result.stdout + result.stderr
    last = result.stdout.strip().splitlines()[-1]
    every = (ROOT / "spec" / "vectors").rglob("*.json")
    total = len([p for p in every if p.parent.name != "checkpoint"])  # not a CLI's to answer
    assert last.startswith(f"{total}/{total} vectors pass"), result.stdout
    table = result.stdout.splitlines()
    for folder in ("valid", "invalid", "unreadable", "repair", "fold", "truncate", "torn"):
        assert any(line.startswith(folder) and line.endswith("pass") for line in table)


#: A port wrapping our CLI with one bug, chosen by the first argument.
BUGGY_PORT = """
import sys
from trio_agent.cli import main
bug, argv = sys.argv[1], sys.argv[2:]
if bug == "ignores-stopped":
    while "--stopped" in argv:
        i = argv.index("--stopped"); del argv[i:i + 2]
if bug == "ignores-boot-id":
    while "--boot-id" in argv:
        i = argv.index("--boot-id"); del argv[i:i + 2]
if bug == "no-suffix":
    argv = [a for a in argv if a != "--suffix"]
if bug == "balanced-always-ok":
    argv = [a for a in argv if a != "--balanced"]
if bug == "closers-not-objects" and argv[:1] == ["repair"]:
    print(1)
    raise SystemExit(0)
if bug == "wrong-rule":
    import io
    err = io.StringIO()
    code = main(argv, sys.stdout, err)
    sys.stderr.write(err.getvalue().replace(": I16: ", ": I15: "))
    raise SystemExit(code)
if bug in ("note-after-problem", "note-despite-early-failure") and argv[:1] == ["check"]:
    import io, pathlib
    err = io.StringIO()
    code = main(argv, sys.stdout, err)
    lines = err.getvalue().splitlines(keepends=True)
    notes = [line for line in lines if ": note: torn tail" in line]
    rest = [line for line in lines if line not in notes]
    data = pathlib.Path(argv[-1]).read_bytes()
    if bug == "note-despite-early-failure" and code == 1 and not data.endswith(b"\\n"):
        size, line = len(data) - data.rfind(b"\\n") - 1, data.count(b"\\n") + 1
        notes = [f"{argv[-1]}:{line}: note: torn tail ignored ({size} bytes): x\\n"]
    sys.stderr.write("".join(rest + notes if bug == "note-after-problem" else notes + rest))
    raise SystemExit(code)
raise SystemExit(main(argv))
"""


@pytest.mark.parametrize(
    ("bug", "only", "case", "diff"),
    [
        ("ignores-stopped", "repair/stopped-*", "repair/stopped-process-group", True),
        ("ignores-boot-id", "repair/other-host-*", "repair/other-host-process-group", True),
        ("no-suffix", "fold/suffix-*", "fold/suffix-with-step", False),
        ("balanced-always-ok", "valid/*open*", "valid/", False),
        ("wrong-rule", "I16", "invalid/I16-", False),
        ("closers-not-objects", "torn", "torn/", False),
        ("note-after-problem", "torn/partial-event-in-open-turn", "torn/partial-event", False),
        ("note-despite-early-failure", "torn/invalid-line-*", "torn/invalid-line", False),
    ],
)
def test_a_planted_bug_fails_and_names_the_case(
    bug: str, only: str, case: str, diff: bool, tmp_path: Path
) -> None:
    port = tmp_path / "port.py"
    port.write_text(BUGGY_PORT)
    result = conform("--only", only, port=[PY, str(port), bug])
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"FAIL {case}" in result.stdout
    assert "expected" in result.stdout and "the port answered" in result.stdout
    if diff:  # a unified diff from the expected JSON to what the port printed
        block = result.stdout.split(f"FAIL {case}", 1)[1]
        assert "    --- expected\n    +++ the port's stdout\n    @@ " in block, block
        assert any(line.startswith("    -") for line in block.splitlines()[3:]), block


def test_list_selects_by_id_folder_and_rule_without_a_program() -> None:
    vectors = ROOT / "spec" / "vectors"
    listed = conform("--list", "--only", "truncate", port=[])
    assert listed.returncode == 0, listed.stderr
    ids = sorted(line.split()[0] for line in listed.stdout.splitlines())
    want = sorted(f"truncate/{p.stem}" for p in (vectors / "truncate").glob("*.json"))
    assert ids == want and want
    by_rule = conform("--list", "--only", "I16", port=[])
    rows = [line.split() for line in by_rule.stdout.splitlines()]
    assert rows and all(rule == "I16" for _, rule in rows)
    assert {cid for cid, _ in rows} >= {
        f"invalid/{p.stem}" for p in (vectors / "invalid").glob("I16-*.json")
    }


def test_exitfirst_stops_at_the_first_failure(tmp_path: Path) -> None:
    port = tmp_path / "port.py"
    port.write_text(BUGGY_PORT)
    result = conform("-x", "--jobs", "1", "--only", "fold", port=[PY, str(port), "no-suffix"])
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.count("\nFAIL ") == 1, result.stdout
    assert "stopped at the first failure (-x)" in result.stdout


def test_junit_xml_has_a_testcase_per_vector_and_a_failure_per_failing_one(
    tmp_path: Path,
) -> None:
    port = tmp_path / "port.py"
    port.write_text(BUGGY_PORT)
    xml = tmp_path / "out.xml"
    result = conform(
        "--only",
        "fold/suffix-*",
        "--only",
        "fold/empty",
        "--junit-xml",
        str(xml),
        port=[PY, str(port), "no-suffix"],
    )
    assert result.returncode == 1
    cases = ET.parse(xml).getroot().findall("./testsuite/testcase")
    failed = {c.get("name") for c in cases if c.find("failure") is not None}
    assert {c.get("name") for c in cases} == {"fold/empty", *failed}
    assert failed and all(name.startswith("fold/suffix-") for name in failed)  # type: ignore[union-attr]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_junit_xml_on_a_full_disk_is_one_line_after_the_report() -> None:
    """/dev/full takes the empty write conform tries first and refuses the report itself
    (ENOSPC): the run's report is printed, then one line, exit 2 (it was exit 70)."""
    result = conform(
        "--only", "fold/empty", "--junit-xml", "/dev/full", port=[PY, "-m", "trio_agent"]
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].startswith("1/1 vectors pass (")
    assert result.stderr == (
        "conform: /dev/full: cannot write the JUnit XML: No space left on device\n"
    )


def test_jobs_defaults_to_the_core_count_and_says_so() -> None:
    result = conform("--only", "fold/empty", port=[PY, "-m", "trio_agent"])
    assert result.returncode == 0, result.stderr
    jobs = min(os.cpu_count() or 1, 1)
    assert result.stdout.startswith(f"1 cases, {jobs} at once (--jobs defaults to the core count)")
    help_text = cli("conform", "--help").stdout
    assert f"the core count, {os.cpu_count()} here" in " ".join(help_text.split())


@pytest.mark.slow  # long: make test-fast leaves it out
def test_a_terminal_gets_a_progress_line_and_a_pipe_does_not() -> None:
    args = [*CLI, "conform", "--only", "truncate", "--", PY, "-m", "trio_agent"]
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        args,
        stdout=secondary,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
        env=child_env(),
    )
    os.close(secondary)
    seen = bytearray()
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:  # EIO: the terminal's other side closed
            break
        if not chunk:
            break
        seen += chunk
    os.close(primary)
    assert proc.wait(timeout=GUARD) == 0
    total = len(list((ROOT / "spec" / "vectors" / "truncate").glob("*.json")))
    assert f"[{total}/{total}]".encode() in seen, seen
    assert b"\r\x1b[K" in seen
    piped = conform("--only", "truncate", port=[PY, "-m", "trio_agent"])
    assert "\r" not in piped.stdout and "[1/" not in piped.stdout


@pytest.mark.slow  # long: make test-fast leaves it out
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_program_that_cannot_run_is_one_line_exit_2(name: str, tmp_path: Path) -> None:
    """Before any case: never answers, endless output, an endless line, exits at once."""
    program = tmp_path / "port.py"
    program.write_text(HOSTILE[name])
    line = one_line(conform("--timeout", "5", port=[PY, str(program)]), 2)
    assert line.startswith(f"conform: {PY} {program} cannot run as a port: `check "), line
    assert line.endswith("no vector was run")


def test_json_nested_too_deep_fails_its_cases_without_a_traceback(tmp_path: Path) -> None:
    # Its JSON is nested deeper than Python's parser, printer or comparison can recurse: the
    # cases that read JSON fail as "not JSON" (spec/log.md §Values bounds a log line's depth).
    program = tmp_path / "port.py"
    program.write_text(DEEPLY_NESTED)
    result = no_traceback(
        conform("--only", "repair/*", "--only", "fold/*", port=[PY, str(program)])
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "internal error" not in result.stderr, result.stderr
    assert re.search(r"^0/\d+ vectors pass; \d+ fail", result.stdout, re.M), result.stdout


def test_json_with_a_lone_surrogate_fails_its_cases_without_a_traceback(tmp_path: Path) -> None:
    # "\ud800" names no character: Python's json takes it, and printing the diff with it
    # once ended conform in "internal error: UnicodeEncodeError" (exit 70).
    program = tmp_path / "port.py"
    program.write_text(LONE_SURROGATE)
    result = no_traceback(conform("--only", "fold/*", port=[PY, str(program)]))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "internal error" not in result.stderr, result.stderr
    assert re.search(r"^0/\d+ vectors pass; \d+ fail", result.stdout, re.M), result.stdout
    assert '"dropped_unrun": "\\ud800"' in result.stdout  # the diff shows it as written


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"{bad", "Expecting property name enclosed in double quotes"),
        (b"\xff{}", "can't decode byte 0xff"),
        (b"[" * 100_000, "maximum recursion depth exceeded"),
        (b"[]", "not a JSON object"),
        (b'{"log": ["x"]}', "expect: missing, or not an object"),
        (b'{"log": 5, "expect": {}}', "log: not an array"),
        (b'{"expect": {}}', "neither log nor file_hex"),
        (b'{"file_hex": "zz", "expect": {}}', "file_hex: not hexadecimal"),
        (b'{"log": ["x"], "expect": {"valid": true, "balanced": 1}}', "expect.balanced: not a"),
        (b'{"log": ["x"], "expect": {"valid": false, "rule": "I1"}}', "expect.seq: missing"),
        (b'{"log": ["x"], "expect": {"closers": [5]}}', "expect.closers: not a list of objects"),
        (b'{"log": ["x"], "expect": {"store": {"damage": "?"}}}', "expect.store.damage: not one"),
    ],
    ids=[
        "not-json",
        "not-utf8",
        "too-deep",
        "not-an-object",
        "no-expect",
        "log-not-a-list",
        "no-log",
        "bad-hex",
        "balanced-not-bool",
        "invalid-without-seq",
        "closer-not-object",
        "unknown-damage",
    ],
)
def test_a_vector_file_conform_cannot_read_is_one_line_exit_2(
    tmp_path: Path, body: bytes, says: str
) -> None:
    """``--vectors`` may name a porter's own directory: a file in it that is not a vector
    once ended conform in an internal error (exit 70)."""
    (tmp_path / "valid").mkdir()
    (tmp_path / "valid" / "x.json").write_bytes(body)
    line = one_line(conform("--vectors", str(tmp_path), port=[PY, "-m", "trio_agent"]), 2)
    assert line.startswith(f"conform: {tmp_path}/valid/x.json: not a vector conform reads: ")
    assert says in line, line


def test_a_port_that_cannot_be_started_for_a_case_says_why_in_the_systems_words(
    tmp_path: Path,
) -> None:
    """A port that answers the first look and is gone by the cases (it removes itself): each
    case says it could not run the command, in the system's words, and claims no answer
    (no exit status the port never gave, no Python ``[Errno 2]``)."""
    port = tmp_path / "port"
    port.write_text(
        '#!/bin/sh\nrm -f "$0"\necho "port: $2: No such file or directory" >&2\nexit 2\n'
    )
    port.chmod(0o755)
    result = no_traceback(conform("--only", "valid/one-turn-completed", port=[str(port)]))
    assert result.returncode == 1, result.stdout + result.stderr
    detail = "`check --balanced FILE`: expected exit 0 (valid, every turn ended); "
    assert detail + "could not run it: No such file or directory\n" in result.stdout
    assert "Errno" not in result.stdout and "answered" not in result.stdout, result.stdout


def test_a_missing_program_is_one_line_exit_2(tmp_path: Path) -> None:
    line = one_line(conform(port=[str(tmp_path / "no-such-port")]), 2)
    assert line == f"conform: cannot run {tmp_path / 'no-such-port'}: No such file or directory"


def test_a_directory_as_the_program_is_one_line_exit_2(tmp_path: Path) -> None:
    """``conform -- DIR`` says what DIR is: exec would only say "Permission denied"."""
    line = one_line(conform(port=[str(tmp_path)]), 2)
    assert line == f"conform: cannot run {tmp_path}: is a directory"


def test_an_empty_program_name_is_one_line_exit_2() -> None:
    """``conform -- ''`` is refused by name, before anything runs: exec would only say
    "Permission denied" (it tries the working directory)."""
    line = one_line(conform(port=[""]), 2)
    assert line == (
        "conform: the program's name is empty: give the port's command after --, "
        "e.g. conform -- ./my-port"
    )


#: Answers the missing-file probe as the contract says, then: hangs on ``fold``, floods
#: ``repair``'s stdout, and is our CLI for the rest.
HOSTILE_LATER = """
import subprocess, sys, time
if "fold" in sys.argv:
    time.sleep(3600)
if "repair" in sys.argv:
    while True:
        sys.stdout.write("y" * 10000)
sys.exit(subprocess.run([sys.executable, "-m", "trio_agent", *sys.argv[1:]]).returncode)
"""


@pytest.mark.slow  # long: make test-fast leaves it out
def test_a_case_that_hangs_or_floods_fails_alone(tmp_path: Path) -> None:
    port = tmp_path / "port.py"
    port.write_text(HOSTILE_LATER)
    result = no_traceback(
        conform(
            "--timeout",
            "5",
            "--max-output",
            "100000",
            "--only",
            "fold/empty",
            "--only",
            "repair/stopped-process-group",
            "--only",
            "valid/one-turn-completed",
            port=[PY, str(port)],
        )
    )
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "FAIL fold/empty" in out and "no answer within 5s (--timeout); killed" in out
    assert "exit -1" not in out  # no status the port never gave
    assert "FAIL repair/stopped-process-group" in out
    assert "more than 100000 bytes of output (--max-output); killed" in out
    assert re.search(r"^valid\s+1/1\s+pass$", out, re.M), out
    assert "1/3 vectors pass; 2 fail" in out


#: Our CLI, but ``fold`` first starts a sleeper it never waits for, and writes its pid to
#: the file named by the second argument: in the port's process group holding the port's
#: output (``holds-output``), in the group with its output on /dev/null (``quiet``), or in a
#: session of its own holding the output (``escaped``); with ``always``, every command
#: starts one as ``holds-output`` does.
LEAVES_WORK = """
import subprocess, sys
mode, pidfile, args = sys.argv[1], sys.argv[2], sys.argv[3:]
if "fold" in args or mode == "always":
    quiet = subprocess.DEVNULL if mode == "quiet" else None
    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(3600)"],
        stdout=quiet,
        stderr=quiet,
        start_new_session=mode == "escaped",
    )
    open(pidfile, "w").write(str(sleeper.pid))
sys.exit(subprocess.run([sys.executable, "-m", "trio_agent", *args]).returncode)
"""


#: conform's --timeout in the escaped case, which always waits it out.
ESCAPED_TIMEOUT = 10


@pytest.mark.parametrize("mode", ["holds-output", "quiet", "escaped"])
def test_a_command_that_leaves_work_behind_fails_its_case(tmp_path: Path, mode: str) -> None:
    """A command has answered when it has exited and its group is empty. What it left in
    its group is killed as it exits (conform once waited for --timeout when that held the
    output, and left it running for ever when it did not); what left the group and holds
    the output is waited for until --timeout, said, and not killed."""
    port, pidfile = tmp_path / "port.py", tmp_path / "sleeper.pid"
    port.write_text(LEAVES_WORK)
    # Only the escaped sleeper is waited for; in the other modes a --timeout reached would
    # be the bug, and the hang guard fails the test first. The escaped case must reach its
    # --timeout, and the port (two Python starts and our fold) must answer before it: 2 s
    # was once too short on a loaded host ("no answer within 2s"), so it has a wide margin.
    timeout = str(ESCAPED_TIMEOUT) if mode == "escaped" else str(10 * GUARD)
    only = ["--only", "fold/empty", "--only", "valid/one-turn-completed"]
    result = no_traceback(
        conform("--timeout", timeout, *only, port=[PY, str(port), mode, str(pidfile)])
    )
    sleeper = int(pidfile.read_text())
    try:
        assert result.returncode == 1, result.stdout + result.stderr
        out = result.stdout
        assert "FAIL fold/empty" in out and "1/2 vectors pass; 1 fail" in out, out
        if mode == "escaped":
            assert (
                f"exit 0, but its output was still open after {ESCAPED_TIMEOUT}s (--timeout): "
                "held by a process that left its process group (not killed)"
            ) in out, out
            assert proc.alive(sleeper)  # not ours to kill: conform never signals outside
        else:
            left = rf"exit 0, but left 1 process \(pid {sleeper} [^)\s]+\) running in its group"
            assert re.search(left + "; killed", out), out
            until_sync(lambda: not proc.alive(sleeper))  # the kernel's word: it is gone
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(sleeper, signal.SIGKILL)


def test_a_program_that_leaves_work_behind_cannot_run(tmp_path: Path) -> None:
    port, pidfile = tmp_path / "port.py", tmp_path / "sleeper.pid"
    port.write_text(LEAVES_WORK)
    result = conform("--timeout", str(10 * GUARD), port=[PY, str(port), "always", str(pidfile)])
    sleeper = int(pidfile.read_text())
    try:
        line = one_line(result, 2)
        assert re.fullmatch(
            rf"conform: .* cannot run as a port: `check MISSING-FILE` gave exit 2, but left 1 "
            rf"process \(pid {sleeper} [^)\s]+\) running in its group; killed; no vector was run",
            line,
        ), line
        until_sync(lambda: not proc.alive(sleeper))
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(sleeper, signal.SIGKILL)


#: Our CLI, but the commands named by the first argument (``fold``, or ``check`` for the
#: preflight's) write the pid of a sleeper in the port's group to the file named by the
#: second argument, then wait for it for ever.
HANGS_ON = """
import subprocess, sys
verb, pidfile, args = sys.argv[1], sys.argv[2], sys.argv[3:]
if verb in args:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    open(pidfile, "w").write(str(sleeper.pid))
    sleeper.wait()
sys.exit(subprocess.run([sys.executable, "-m", "trio_agent", *args]).returncode)
"""


@pytest.mark.parametrize("verb", ["fold", "check"])
@pytest.mark.parametrize(
    "stop", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"]
)
def test_a_stopping_signal_kills_the_running_commands_then_exits(
    tmp_path: Path, verb: str, stop: signal.Signals
) -> None:
    """The port's commands run in sessions of their own, where neither the terminal's
    Ctrl-C nor a signal sent to conform goes: after Ctrl-C conform once went on waiting for
    them (up to --timeout), and a second one, SIGTERM or SIGHUP left them running. Now it
    kills every running command's group, then exits 128 + the signal; in a case (``fold``)
    or in the preflight (``check MISSING-FILE``)."""
    stop_while_it_waits(*_conform_on_a_hanging_port(tmp_path, verb), stop)


@pytest.mark.parametrize("ignored", [signal.SIGHUP, signal.SIGINT], ids=["nohup", "background"])
def test_a_signal_started_ignored_stays_ignored(tmp_path: Path, ignored: signal.Signals) -> None:
    """Started under ``nohup`` (SIGHUP ignored) or as a script's background job (SIGINT
    ignored), conform goes on when that signal comes (SIGHUP once stopped it under nohup),
    and SIGTERM still stops it and its commands (spec/cli.md §Stopping signals)."""
    command, pidfile = _conform_on_a_hanging_port(tmp_path, "fold")
    stop_while_it_waits(command, pidfile, signal.SIGTERM, ignoring=ignored)


def _conform_on_a_hanging_port(tmp_path: Path, verb: str) -> tuple[list[str], Path]:
    """``conform`` arguments for a port whose ``verb`` leaves a sleeper (its pid in the file,
    the second item) and hangs: in a case (``fold``) or in the preflight (``check``)."""
    port, pidfile = tmp_path / "port.py", tmp_path / "sleeper.pid"
    port.write_text(HANGS_ON)
    args = ["conform", "--timeout", str(10 * GUARD), "--only", "fold/empty", "--"]
    return [*args, PY, str(port), verb, str(pidfile)], pidfile


def test_usage_errors_are_one_line_exit_2() -> None:
    result = conform(port=[])
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "conform:" in result.stderr
    result = conform("--only", "no-such-case", port=[PY, "-m", "trio_agent"])
    assert result.returncode == 2 and "no vector matches" in result.stderr
