"""A command started without stdin, stdout or stderr (``<&-``, ``>&-``, ``2>&-``; spec/cli.md
§trio-agent's own codes, 74). Each descriptor it lacks is opened on ``/dev/null`` first, so
that no file it opens takes the number; then stdin reads as empty, stderr's messages go
nowhere, and a write to stdout fails with exit 74 and one line. Every command here once
ended in "internal error: AttributeError: 'NoneType' object has no attribute 'flush'"
(exit 70), and a missing file with stderr closed exited 1, not 2."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.cli import CLI
from support.polling import HANG_GUARD
from support.procenv import child_env, without_fds

from trio_agent.log import Header, encode_event, encode_header, scan_log
from trio_agent.testing.loggen import generate_log

CLOSED_STDOUT = "trio-agent: cannot write stdout: it was closed when trio-agent started\n"


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("closed") / "session.jsonl"
    path.write_bytes(
        encode_header(Header("s1", 0)) + b"".join(map(encode_event, generate_log(1, 40)))
    )
    return path


def run(closed: list[int], *argv: str, input: str = "") -> subprocess.CompletedProcess[str]:
    """``trio-agent argv...`` started without the ``closed`` descriptors; stdin ``input``
    unless it is closed, stdout and stderr captured (empty when closed)."""
    return subprocess.run(
        without_fds([*CLI, *argv], closed),
        input=input,
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=HANG_GUARD,
    )


@pytest.mark.parametrize(
    "argv",
    [["check", "LOG"], ["show", "LOG"], ["show", "--json", "LOG"], ["fold", "LOG"], ["--help"],
     ["--version"], ["demo", "esc"]],
    ids=" ".join,
)  # fmt: skip
def test_a_closed_stdout_is_one_line_and_exit_74(log: Path, argv: list[str]) -> None:
    done = run([1], *[str(log) if a == "LOG" else a for a in argv])
    assert (done.returncode, done.stderr) == (74, CLOSED_STDOUT)


def test_a_closed_stderr_keeps_the_exit_code_and_stdout(log: Path, tmp_path: Path) -> None:
    missing = run([2], "check", str(tmp_path / "missing.jsonl"))
    assert (missing.returncode, missing.stdout) == (2, "")
    ok, usual = run([2], "check", str(log)), run([], "check", str(log))
    assert (ok.returncode, ok.stdout) == (0, usual.stdout)
    assert usual.stdout.endswith(" turns)\n")


def test_a_closed_stdin_reads_as_empty(tmp_path: Path) -> None:
    done = run([0], "run", "--root", str(tmp_path))
    assert done.returncode == 0, done.stderr
    (session,) = tmp_path.glob("*/session.jsonl")
    assert scan_log(session.read_bytes(), strict=True).checker.balanced


def test_run_with_a_closed_stdout_stops_with_its_log_whole(tmp_path: Path) -> None:
    """The session log is opened after stdout is filled with /dev/null, so it cannot be
    descriptor 1, which the tool's bash would write to."""
    done = run([1], "run", "--root", str(tmp_path), input="echo hi; echo err >&2\n")
    assert done.returncode == 74 and done.stderr.endswith(CLOSED_STDOUT), done.stderr
    (session,) = tmp_path.glob("*/session.jsonl")
    scan = scan_log(session.read_bytes(), strict=True)
    assert scan.checker.balanced and scan.tail is None
