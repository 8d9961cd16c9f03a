"""``trio-agent run`` on a session or root it cannot use: one line on stderr naming what and
where, the exit code ``trio-agent run --help`` lists, never a traceback (spec/cli.md)."""

from __future__ import annotations

import io
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from support.cli import NO_WITHOUT_DAC, WITHOUT_DAC, cli, one_line
from support.cli.testlib import Held, holding

from trio_agent.cli.run import _reporter
from trio_agent.log import Header, encode_header
from trio_agent.runtime.events import TurnEnded, TurnOutcome


def run(
    root: Path | str, *extra: str | bytes, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """``trio-agent run --root ROOT extra...`` with no line to run: a good run exits 0 at once."""
    return cli("run", "--root", str(root), *extra, prefix=prefix)


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Held]:
    with holding(tmp_path) as live:
        yield live


def test_a_session_open_in_another_process_is_refused(tmp_path: Path, held: Held) -> None:
    path = held.path
    before = Path(path).read_bytes()
    line = one_line(run(tmp_path, "--session", "s1"), 3)
    assert line == (
        f"{path}: session 's1' is live (locked by process {held.pid}); "
        "it cannot be opened or repaired until that writer closes or dies"
    )
    assert Path(path).read_bytes() == before


def test_a_crashed_session_is_resumed_and_the_banner_says_what_was_repaired(
    tmp_path: Path, held: Held
) -> None:
    path = held.path
    held.kill()  # a real kill -9: the lock goes with the process
    proc = run(tmp_path, "--session", "s1")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == f"trio-agent run: session 's1' (resumed: 4 events, 1 turn), log {path}"
    assert lines[1] == "  repaired: step/end, turn/end{interrupted}"  # said once
    assert "Ctrl-C cancels the running command" in lines[2]


def corrupt_session(root: Path, body: bytes) -> Path:
    directory = root / "s1"
    directory.mkdir(parents=True)
    path = directory / "session.jsonl"
    path.write_bytes(encode_header(Header("s1", 0)) + body)
    return path


def test_the_banner_names_a_torn_tail_the_cold_open_cut(tmp_path: Path) -> None:
    body = b'{"seq":0,"time":1,"type":"turn/start","data":{"turn":1}}\n'
    body += b'{"seq":1,"time":1,"type":"step/start","data":{"turn":1,"step":1}}\n{"seq":'
    corrupt_session(tmp_path, body)
    proc = run(tmp_path, "--session", "s1")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    summary = proc.stderr.splitlines()[1]
    assert summary == "  repaired: step/end, turn/end{interrupted}; cut a torn tail of 7 bytes"


def test_a_corrupt_session_is_refused_and_left_alone(tmp_path: Path) -> None:
    body = b'{"seq":0,"time":1,"type":"turn/start","data":{"turn":1}}\n'
    body += b'{"seq":1,"time":1,"type":"turn/start","data":{"turn":2}}\n'
    body += (
        b'{"seq":2,"time":1,"type":"turn/end","data":{"turn":2,"reason":{"kind":"completed"}}}\n'
    )
    path = corrupt_session(tmp_path, body)
    before = path.read_bytes()
    line = one_line(run(tmp_path, "--session", "s1"), 1)
    assert line.startswith(f"{path}:3: seq 1: corrupt: I2: turn/start 2 while turn 1 is open")
    assert line.endswith("(committed data is damaged; the file was not modified)")
    assert path.read_bytes() == before


def test_a_foreign_file_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "s1"
    directory.mkdir()
    (directory / "session.jsonl").write_bytes(b'{"type":"other"}\n')
    line = one_line(run(tmp_path, "--session", "s1"), 2)
    assert line.startswith(f"{directory / 'session.jsonl'}: ")
    assert "not a trio_agent session log" in line


def test_a_root_that_is_a_file(tmp_path: Path) -> None:
    root = tmp_path / "afile"
    root.write_text("")
    assert one_line(run(root), 2) == f"{root}: --root is not a directory"


def test_a_root_whose_parent_does_not_exist(tmp_path: Path) -> None:
    root = tmp_path / "missing" / "sessions"
    line = one_line(run(root), 2)
    assert line == f"{root}: cannot create the --root directory: {root.parent} does not exist"
    assert not root.parent.exists()


def test_a_missing_root_is_created_one_level(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    proc = run(root)
    assert proc.returncode == 0, proc.stderr
    assert (root / "default" / "session.jsonl").is_file()


@pytest.mark.skipif(NO_WITHOUT_DAC is not None, reason=NO_WITHOUT_DAC or "")
def test_a_root_without_write_permission(tmp_path: Path) -> None:
    root = tmp_path / "ro"
    root.mkdir(mode=0o500)
    try:
        line = one_line(run(root, prefix=WITHOUT_DAC), 2)
    finally:
        root.chmod(0o700)
    assert line == f"{root}: --root is not writable (a session needs to create its log there)"


def test_an_empty_session_id(tmp_path: Path) -> None:
    line = one_line(run(tmp_path, "--session", ""), 2)
    assert line == (
        "trio-agent run: argument --session: a session id must not be empty "
        "(see `trio-agent run --help`)"
    )


def test_a_session_id_that_is_not_utf8(tmp_path: Path) -> None:
    line = one_line(run(tmp_path, "--session", b"s\xff"), 2)
    assert line == (
        "trio-agent run: argument --session: b's\\xff' is not valid UTF-8 "
        "(see `trio-agent run --help`)"
    )
    assert list(tmp_path.iterdir()) == []  # nothing created


def test_a_session_id_longer_than_the_stores_take(tmp_path: Path) -> None:
    # It used to reach the store and end in "internal error" (exit 70).
    line = one_line(run(tmp_path, "--session", "é" * 2049), 2)
    assert line == (
        "trio-agent run: argument --session: a session id is at most 4096 bytes of UTF-8, "
        "not 4098 (see `trio-agent run --help`)"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "option",
    [
        ("--model-name", "m"),
        ("--api", "anthropic"),
        ("--api-key-env", "KEY"),
        ("--tool-choice", "none"),
    ],
)
def test_a_chat_option_without_model_is_a_usage_error(
    tmp_path: Path, option: tuple[str, str]
) -> None:
    """``run --api anthropic`` is not a chat: the embedded model would run and ignore it."""
    line = one_line(run(tmp_path / "root", *option), 2)
    assert line == (
        f"trio-agent run: {option[0]} needs --model URL (the embedded bash-echo model takes "
        "none) (see `trio-agent run --help`)"
    )
    assert list(tmp_path.iterdir()) == []  # refused before the store was made


def test_both_root_and_store_is_refused_before_any_request(tmp_path: Path) -> None:
    """The usage error comes first: no model server is asked (here none listens), no
    directory is made."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # bound and not listening: a connection is refused
        line = one_line(
            run(
                tmp_path / "a",
                "--store",
                str(tmp_path / "b"),
                "--model",
                f"http://127.0.0.1:{port}/v1",
            ),
            2,
        )
    assert line == (
        "trio-agent run: give either --root DIR or --store STORE, not both "
        "(see `trio-agent run --help`)"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["fifo", "symlink", "directory"])
def test_a_session_log_that_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "root"
    path = root / "s1" / "session.jsonl"
    path.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(path)  # nobody writes it: a read would block forever
        what = "is a FIFO (named pipe)"
    elif kind == "symlink":
        target = tmp_path / "elsewhere.jsonl"
        target.write_bytes(encode_header(Header("s1", 0)))
        path.symlink_to(target)
        what = "is a symbolic link"  # a link is named a link, and nothing more
    else:
        path.mkdir()
        what = "is a directory, not a log file"
    if kind == "fifo":
        what += ", not a log file"
    line = one_line(run(root, "--session", "s1"), 2)
    assert line == f"{path}: {what} (a session's log is a regular file)"


def test_a_model_error_with_a_newline_is_one_line_of_run_s_stderr() -> None:
    """A model server's error message is outside text: ``run`` reports the failed turn on
    one line, its newline shown as ``⏎``."""
    err = io.StringIO()
    report = _reporter(err, trio.CancelScope())
    error = {"code": "OVERLOADED", "message": "busy\nretry later"}
    report(TurnEnded(TurnOutcome(turn=3, reason="error", error=error)))
    assert err.getvalue() == "(turn 3 failed: OVERLOADED: busy⏎retry later)\n"
