"""The real ``trio-agent`` process on bad input: one line on stderr, the documented exit code,
never a traceback (spec/cli.md §Exit codes, §Input files).

Every test runs the command line as a subprocess, the way a user meets it.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
from pathlib import Path

import pytest
from support.cli import CLI, cli, one_line
from support.polling import HANG_GUARD
from support.procenv import child_env
from support.terminal import sent_to_terminal

from trio_agent import __version__

# -- special files ------------------------------------------------------------------------

FILE_COMMANDS = [
    ["check"],
    ["check", "--balanced"],
    ["repair"],
    ["repair", "--write"],
    ["fold"],
    ["fold", "--suffix"],
    ["truncate"],
    ["show"],
]

#: The end of every refusal of a path that is not a regular file (trio_agent/files.py).
REGULAR = "(a session's log is a regular file)"


@pytest.fixture
def fifo(tmp_path: Path) -> str:
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)
    return str(path)


@pytest.mark.parametrize("command", FILE_COMMANDS, ids=" ".join)
def test_a_fifo_is_refused_without_blocking(fifo: str, command: list[str]) -> None:
    # Nobody ever opens the FIFO's write end: reading it would block forever.
    line = one_line(cli(*command, fifo), 2)
    assert line == f"{fifo}: is a FIFO (named pipe), not a log file {REGULAR}"


@pytest.mark.parametrize("command", FILE_COMMANDS, ids=" ".join)
def test_dev_zero_is_refused_not_read(command: list[str]) -> None:
    line = one_line(cli(*command, "/dev/zero"), 2)
    assert line == f"/dev/zero: is a character device, not a log file {REGULAR}"


@pytest.mark.parametrize("command", FILE_COMMANDS, ids=" ".join)
def test_a_directory_is_refused(tmp_path: Path, command: list[str]) -> None:
    line = one_line(cli(*command, str(tmp_path)), 2)
    assert line == f"{tmp_path}: is a directory, not a log file {REGULAR}"


def test_a_dot_directory_is_refused_by_repair_write(tmp_path: Path) -> None:
    line = one_line(cli("repair", "--write", "."), 2)
    assert line == f".: is a directory, not a log file {REGULAR}"


@pytest.mark.parametrize("command", FILE_COMMANDS, ids=" ".join)
def test_a_missing_file(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "nope.jsonl"
    assert one_line(cli(*command, str(path)), 2) == f"{path}: no such file"


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (("sessions", "--root"), "(give the store's directory with --root)"),
        (("check", "--session", "s", "--store"), "(--store takes a store directory or a "),
        (("conform", "--vectors"), "(use --vectors DIR)"),
    ],
    ids=["sessions --root", "check --store", "conform --vectors"],
)
def test_a_directory_name_too_long_is_one_line(
    tmp_path: Path, argv: tuple[str, ...], hint: str
) -> None:
    """A directory option whose name the system refuses (longer than the file system's
    longest name) is named with the system's reason. ``Path.is_dir`` raises for it, which
    was an internal error for these three."""
    long = tmp_path / ("d" * (os.pathconf(tmp_path, "PC_NAME_MAX") + 1))
    tail = ["--", "true"] if argv[0] == "conform" else []
    line = one_line(cli(*argv, str(long), *tail), 2)
    prefix = "conform: " if argv[0] == "conform" else ""
    assert line.startswith(f"{prefix}{long}: cannot read: File name too long {hint}"), line


def test_a_key_value_store_too_long_for_a_directory_name_is_a_dsn() -> None:
    """``--store key=value`` names a database unless a directory has that name; a value too
    long to be a file name is not one (``Path.is_dir`` raised: an internal error). The
    driver refuses the unknown key without connecting anywhere."""
    line = one_line(cli("check", "--store", "a=" + "d" * 300, "--session", "s"), 2)
    assert ": cannot read the store: database: " in line, line


# -- the command line's manners -----------------------------------------------------------


def test_version_prints_the_version() -> None:
    proc = cli("--version")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"trio-agent {__version__}\n", "")


def test_bare_command_prints_usage_and_a_hint() -> None:
    proc = cli()
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    first, *_, last = proc.stderr.splitlines()
    assert first.startswith("usage: trio-agent")
    assert "trio-agent --help" in last


def test_a_usage_error_is_one_line_with_a_hint() -> None:
    line = one_line(cli("fold"), 2)
    assert line.startswith("trio-agent fold: the following arguments are required: FILE")
    assert line.endswith("(see `trio-agent fold --help`)")
    # check, show and repair read a FILE or --store STORE --session ID: same manners.
    line = one_line(cli("check"), 2)
    assert line == (
        "trio-agent check: give a FILE, or --store STORE --session ID "
        "(see `trio-agent check --help`)"
    )


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (("conform", "--jobs", "1.5"), "argument --jobs: not a whole number: '1.5'"),
        (("conform", "--max-output", "0"), "argument --max-output: must be at least 1: '0'"),
        (
            ("conform", "--timeout", "inf"),
            "argument --timeout: must be a positive number of seconds: 'inf'",
        ),
        (("harness", "--examples", "1.5"), "argument --examples: not a whole number: '1.5'"),
        (("harness", "--steps", "0"), "argument --steps: must be at least 1: '0'"),
        (("harness", "--seed", "x"), "argument --seed: not a whole number: 'x'"),
        (("harness", "--timeout", "x"), "argument --timeout: not a number: 'x'"),
        (
            ("harness", "--shrink-limit", "0"),
            "argument --shrink-limit: must be a positive number of seconds: '0'",
        ),
        (("harness", "--max-line", "0"), "argument --max-line: must be at least 1: '0'"),
        (("serve", "--port", "99999"), "argument --port: not a port number (0 to 65535): '99999'"),
        (("serve", "--max-runs", "0"), "argument --max-runs: must be at least 1: '0'"),
        (
            ("serve", "--idle-timeout", "nan"),
            "argument --idle-timeout: must be a positive number of seconds: 'nan'",
        ),
    ],
)
def test_a_bad_number_is_worded_the_same_by_every_command(argv: tuple[str, ...], what: str) -> None:
    """Every numeric option parses through one of four types (cli/numbers.py): a count, a
    time in seconds, a port, any whole number. ``serve --port 99999`` once listened on
    34463 (99999 modulo 65536)."""
    command = argv[0]
    line = one_line(cli(*argv, "--", "true") if command != "serve" else cli(*argv), 2)
    assert line == f"trio-agent {command}: {what} (see `trio-agent {command} --help`)"


def test_a_glob_given_to_a_one_file_command_is_not_echoed_whole() -> None:
    """``trio-agent show sessions/*/session.jsonl``: the usage error names the first extra
    arguments, not all of them (it once repeated every path on its one line)."""
    paths = [f"sessions/s{n:04}/session.jsonl" for n in range(600)]
    line = one_line(cli("show", *paths), 2)
    assert line.startswith(f"trio-agent show: unrecognized arguments: {paths[1]} {paths[2]} ")
    assert line.endswith(" ... (see `trio-agent show --help`)"), line
    assert len(line) < 300, line
    few = one_line(cli("show", *paths[:3]), 2)  # a short list is still given whole
    assert few == (
        f"trio-agent show: unrecognized arguments: {paths[1]} {paths[2]}"
        " (see `trio-agent show --help`)"
    )


@pytest.mark.parametrize(
    ("argv", "where", "extras"),
    [
        (("sessions", "sessions"), "trio-agent sessions", "sessions"),
        (("check", "--frob", "log.jsonl"), "trio-agent check", "--frob"),
        (("run", "--root", "r", "extra"), "trio-agent run", "extra"),
        (("conform", "--frob", "--", "true"), "trio-agent conform", "--frob"),
        (("harness", "--frob", "--", "true"), "trio-agent harness", "--frob"),
        (("serve", "extra"), "trio-agent serve", "extra"),
        (("--frob",), "trio-agent", "--frob"),  # no command: the top parser's own
    ],
)
def test_an_argument_no_option_takes_is_the_command_s_usage_error(
    argv: tuple[str, ...], where: str, extras: str
) -> None:
    """``trio-agent sessions sessions``: the line names the command and points at its own
    help (which says the directory is ``--root``), as every other usage error does
    (spec/cli.md §trio-agent's own codes); argparse words it as the top parser's,
    ``trio-agent:``, pointing at ``trio-agent --help``."""
    line = one_line(cli(*argv), 2)
    assert line == f"{where}: unrecognized arguments: {extras} (see `{where} --help`)"


# -- broken pipe --------------------------------------------------------------------------


def test_demo_into_a_closed_pipe_exits_quietly() -> None:
    """``trio-agent demo esc | head -3``: the reader goes away mid-demo; trio wraps the
    ``BrokenPipeError`` in an exception group, and the CLI still says nothing."""
    proc = subprocess.Popen(
        [*CLI, "demo", "esc"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    for _ in range(3):
        assert proc.stdout.readline()
    proc.stdout.close()  # what `head -3` does after its third line
    err = proc.stderr.read()  # EOF: the demo has exited and its workers with it
    proc.stderr.close()
    assert proc.wait(HANG_GUARD) == 141  # 128 + SIGPIPE, as a shell reports `cat | head`
    assert err == ""


def test_show_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    from trio_agent.log import Header, encode_event, encode_header
    from trio_agent.testing.loggen import generate_log

    body = encode_header(Header("s1", 0)) + b"".join(map(encode_event, generate_log(1, 400)))
    path = tmp_path / "big.jsonl"
    path.write_bytes(body)
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte
    with os.fdopen(write, "w") as out:
        proc = subprocess.run(
            [*CLI, "show", str(path)],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=HANG_GUARD,
        )
    assert (proc.returncode, proc.stderr) == (141, "")


def _env(*, unbuffered: bool) -> dict[str, str]:
    """A child's environment, with Python's stdout and stderr buffered or not (``-u``)."""
    env = {k: v for k, v in child_env().items() if k != "PYTHONUNBUFFERED"}
    return {**env, "PYTHONUNBUFFERED": "1"} if unbuffered else env


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
@pytest.mark.parametrize(
    "argv",
    [
        ["check", "LOG"],
        ["check", "--json", "LOG"],
        ["fold", "LOG"],
        ["truncate", "LOG"],
        ["show", "LOG"],  # the one-pass timeline: spilled, then copied to stdout
        ["show", "--json", "LOG"],
        ["sessions", "--root", "ROOT"],
        ["conform", "--list"],
        ["--version"],
        ["check", "--help"],
    ],
    ids=" ".join,
)
@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "python -u"])
def test_a_full_stdout_is_one_line_and_exit_74(
    tmp_path: Path, argv: list[str], unbuffered: bool
) -> None:
    """stdout on a full disk (``/dev/full`` refuses every write with ENOSPC): one line, the
    documented code, and no "Exception ignored" at the interpreter's exit. Every command here
    ended in "internal error" (exit 70), and ``--help`` in exit 120 and a traceback (or, under
    ``python -u``, in exit 0: argparse swallows the error)."""
    from trio_agent.log import Header, encode_event, encode_header
    from trio_agent.testing.loggen import generate_log

    log = tmp_path / "root" / "s1" / "session.jsonl"
    log.parent.mkdir(parents=True)
    log.write_bytes(
        encode_header(Header("s1", 0)) + b"".join(map(encode_event, generate_log(1, 400)))
    )
    argv = [str(log) if a == "LOG" else str(tmp_path / "root") if a == "ROOT" else a for a in argv]
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [*CLI, *argv],
            stdin=subprocess.DEVNULL,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(unbuffered=unbuffered),
            check=False,
            timeout=HANG_GUARD,
        )
    assert (proc.returncode, proc.stderr) == (
        74,
        "trio-agent: cannot write stdout: No space left on device\n",
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "python -u"])
def test_a_full_stderr_is_exit_74_and_a_quiet_exit(tmp_path: Path, unbuffered: bool) -> None:
    """The error line of a missing file cannot be written: nothing more can be said, and the
    code says why (it was exit 1, the code of a log that breaks a rule, after a traceback
    nobody could read). A run that prints nothing on stderr is not affected."""
    env = _env(unbuffered=unbuffered)
    good = tmp_path / "s.jsonl"
    good.write_bytes(
        HEADER0 + b'{"seq":0,"time":1,"type":"turn/start","data":{"turn":1}}\n' + TURN_END
    )
    codes = []
    for argv in (["check", str(tmp_path / "missing")], ["check", str(good)], []):
        with open("/dev/full", "wb") as full:
            proc = subprocess.run(
                [*CLI, *argv],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=full,
                env=env,
                check=False,
                timeout=HANG_GUARD,
            )
        codes.append(proc.returncode)
        if argv[1:2] == [str(good)]:
            assert proc.stdout.decode().endswith(": ok (2 events, 1 turn)\n")
    assert codes == [74, 0, 74]  # the last: no COMMAND, whose usage goes to stderr


# -- serve --------------------------------------------------------------------------------


def test_serve_on_a_port_in_use() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_line(cli("serve", "--port", str(port)), 2)
    assert line == f"trio-agent serve: cannot listen on 127.0.0.1:{port}: Address already in use"


def test_serve_on_an_address_not_here() -> None:
    """An address no interface here has (numeric: no name is looked up), IPv6 in brackets as
    in a URL: the system's words, without Python's ``[Errno 99]`` before them."""
    line = one_line(cli("serve", "--host", "2001:db8::1", "--port", "0"), 2)
    assert line.startswith("trio-agent serve: cannot listen on [2001:db8::1]:0: "), line
    assert "Errno" not in line


# -- help ---------------------------------------------------------------------------------


def test_every_option_of_every_command_has_help_text() -> None:
    from trio_agent.cli.parser import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    missing = [
        f"{name} {action.dest}"
        for name, p in sub.choices.items()
        for action in p._actions
        if not action.help
    ]
    assert missing == []
    assert len(sub.choices) >= 10


@pytest.mark.parametrize(
    "command",
    [
        "check",
        "repair",
        "fold",
        "truncate",
        "show",
        "demo",
        "run",
        "sessions",
        "serve",
        "conform",
        "harness",
    ],
)
def test_every_command_help_lists_its_exit_codes(command: str) -> None:
    proc = cli(command, "--help")
    assert proc.returncode == 0 and proc.stderr == ""
    codes = proc.stdout.split("exit codes:\n", 1)[1]
    assert codes.startswith("  0    ")
    assert "  130  interrupted (Ctrl-C)" in codes


def test_top_level_help_is_plain_words() -> None:
    proc = cli("--help")
    assert proc.returncode == 0
    assert "``" not in proc.stdout and ":mod:" not in proc.stdout  # no raw RST
    assert proc.stdout.splitlines()[2].startswith("Check, repair and read the session logs")
    assert "exit codes" in proc.stdout


# -- odd but valid, or odd and broken, logs -----------------------------------------------

HEADER0 = b'{"type":"session","version":1,"id":"x","createdAt":0}\n'
TURN_END = b'{"seq":1,"time":1,"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}\n'


@pytest.mark.parametrize("created_at", [253402300800000, 2**53 - 1])
def test_show_a_header_created_after_year_9999(tmp_path: Path, created_at: int) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"session","version":1,"id":"x","createdAt":%d}\n' % created_at)
    proc = cli("show", str(path))
    assert (proc.returncode, proc.stderr) == (0, "")
    assert (
        proc.stdout == f"session x  created {created_at} ms after 1970 (past year 9999)  0 events\n"
    )


@pytest.mark.parametrize("created_at", [2**53, 2**64 + 1])
def test_a_header_time_beyond_2_to_the_53_is_unreadable(tmp_path: Path, created_at: int) -> None:
    """spec/log.md §Values: an integer field is at most 2^53 - 1."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"session","version":1,"id":"x","createdAt":%d}\n' % created_at)
    proc = cli("show", str(path))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"{path}:1: header.createdAt must be an integer >= 0 and at most 2^53 - 1 (ms)"
    ], proc.stderr


@pytest.mark.parametrize(
    ("line", "what"),
    [
        (b"[1, 2]", "seq ?: I0: an event must be a JSON object"),
        (b'{"time":1,"type":"turn/start","data":{"turn":1}}', "seq ?: I0: seq: missing"),
    ],
    ids=["array", "no-seq"],
)
def test_repair_and_repair_write_agree_on_a_broken_committed_line(
    tmp_path: Path, line: bytes, what: str
) -> None:
    path = tmp_path / "s.jsonl"
    body = HEADER0 + line + b"\n" + TURN_END  # before a turn/end: committed, so corruption
    path.write_bytes(body)
    dry = cli("repair", str(path))
    wet = cli("repair", "--write", str(path))
    assert one_line(dry, 1) == one_line(wet, 1) == f"{path}:2: {what}"
    assert path.read_bytes() == body


# -- the top level, in process: exception groups are taken apart --------------------------


def test_groups_are_flattened_into_one_line() -> None:
    import io

    from trio_agent.cli import _report
    from trio_agent.cli.errors import CliError

    err = io.StringIO()
    nested = ExceptionGroup("outer", [ExceptionGroup("inner", [CliError("f: bad", 2)])])
    assert _report(nested, io.StringIO(), err) == 2 and err.getvalue() == "f: bad\n"
    err = io.StringIO()
    pipes = ExceptionGroup("g", [BrokenPipeError(), ExceptionGroup("h", [BrokenPipeError()])])
    assert _report(pipes, io.StringIO(), err) == 141 and err.getvalue() == ""
    err = io.StringIO()
    bug = ExceptionGroup("g", [BrokenPipeError(), ValueError("odd\nsecond line")])
    assert _report(bug, io.StringIO(), err) == 70
    assert err.getvalue() == (
        "trio-agent: internal error: ValueError: odd (a bug; TRIO_AGENT_TRACEBACK=1 shows where)\n"
    )
    interrupted = BaseExceptionGroup("g", [KeyboardInterrupt(), BrokenPipeError()])
    assert _report(interrupted, io.StringIO(), io.StringIO()) == 130


def test_the_store_repair_of_a_directory_names_it(tmp_path: Path) -> None:
    """Below the CLI's own check: ``run_repair_file`` given a directory (a file replaced by
    one after the check) says so, not "no such file"."""
    import io

    from trio_agent.cli.repair_write import run_repair_file

    err = io.StringIO()
    assert run_repair_file(str(tmp_path), io.StringIO(), err, reap_orphans=None) == 2
    line = err.getvalue()
    assert line.startswith(f"{tmp_path}: ") and line.count("\n") == 1
    assert "directory" in line and "no such file" not in line


def test_show_marks_a_committed_line_that_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        HEADER0 + b'{"seq":0,"time":1,"type":"turn/start","data":{"turn":1}}\n{nope\n' + TURN_END
    )
    proc = cli("show", str(path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"{path}:3: not JSON") and proc.stderr.count("\n") == 1
    lines = proc.stdout.splitlines()
    assert lines[1:2] == ["[0] turn/start 1"]
    assert lines[2].startswith("!! line 3: not JSON") and lines[3] == "   {nope"


def test_a_file_name_s_control_characters_are_shown_not_sent(tmp_path: Path) -> None:
    """A glob over a shared directory may name a directory ``\x1b]0;pwned\x07``: the lines
    that name its log, on stdout and stderr, show ESC, BEL and DEL instead of sending them to
    the terminal."""
    hostile = tmp_path / "\x1b]0;pwned\x07x\x1b[31m\x7f"
    hostile.mkdir()
    good = hostile / "s.jsonl"
    good.write_bytes(HEADER0 + b'{"seq":0,"time":1,"type":"turn/start","data":{"turn":1}}\n')
    shown = str(hostile).replace("\x1b", "␛").replace("\x07", "␇").replace("\x7f", "␡")
    proc = cli("check", str(good), str(hostile / "missing.jsonl"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == f"{shown}/s.jsonl: ok (1 event, 1 turn)\n"
    assert proc.stderr.splitlines() == [
        f"{shown}/s.jsonl: note: turn 1 is open (a valid prefix of a live or crashed session)",
        f"{shown}/missing.jsonl: no such file",
    ]
    assert not sent_to_terminal(proc.stdout + proc.stderr)


def test_a_newline_in_a_file_name_keeps_each_message_one_line(tmp_path: Path) -> None:
    """A file name may hold a newline: every line that names it, on stdout and stderr, stays
    one line, the newline shown as ``⏎`` (the errors, the notes, what repair did)."""
    odd = tmp_path / "two\nlines"
    odd.mkdir()
    log = odd / "s.jsonl"
    torn = b'{"seq":1,"ti'
    log.write_bytes(HEADER0 + b'{"seq":0,"time":1,"type":"turn/start","data":{"turn":1}}\n' + torn)
    shown = str(odd).replace("\n", "⏎")
    checked = cli("check", str(log), str(odd / "missing.jsonl"))
    assert checked.returncode == 2, checked.stderr
    assert checked.stdout == f"{shown}/s.jsonl: ok (1 event, 1 turn)\n"
    assert [line.split(": ", 1)[0] for line in checked.stderr.splitlines()] == [
        f"{shown}/s.jsonl:3",  # the torn tail's note
        f"{shown}/s.jsonl",  # the open turn's note
        f"{shown}/missing.jsonl",  # no such file
    ], checked.stderr
    for command in (["show"], ["fold"], ["truncate"], ["repair"], ["repair", "--write"]):
        missing = cli(*command, str(odd / "missing.jsonl"))
        assert missing.stderr == f"{shown}/missing.jsonl: no such file\n", (command, missing)
    repaired = cli("repair", "--write", str(log))
    assert repaired.returncode == 0, repaired.stderr
    lines = repaired.stderr.splitlines()
    assert len(lines) == 2 and all(line.startswith(f"{shown}/s.jsonl: ") for line in lines), lines
    assert f"note: cut {len(torn)} bytes of torn tail" in lines[0]
    assert "repaired: 1 closing event(s) appended" in lines[1]


def test_show_marks_a_line_with_control_bytes_without_sending_them(tmp_path: Path) -> None:
    # Raw control bytes make a line that is not JSON; shown, they must not reach the terminal.
    path = tmp_path / "s.jsonl"
    bad = b'{"seq":1,"text":"\x1b[2J\x1b]0;pwned\x07\r\x9b"}\n'
    path.write_bytes(
        HEADER0 + b'{"seq":0,"time":1,"type":"turn/start","data":{"turn":1}}\n' + bad + TURN_END
    )
    proc = cli("show", str(path))
    assert proc.returncode == 2
    lines = proc.stdout.splitlines()
    assert lines[2].startswith("!! line 3: not JSON")
    assert lines[3] == '   {"seq":1,"text":"␛[2J␛]0;pwned␇␍�"}'  # 0x9b alone: not UTF-8
    assert not sent_to_terminal(proc.stdout)
