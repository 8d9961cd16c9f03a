"""File commands on the log of a session that is live right now (spec/cli.md §Live sessions).

A real second process holds the session: it opens it through the store (which takes the
``flock`` a writer holds for its whole life), appends an open turn, says "ready" and waits for
its stdin to close. The CLI runs as a subprocess beside it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import cli, no_traceback
from support.cli.testlib import Held, holding


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Held]:
    with holding(tmp_path) as live:
        yield live


def test_show_says_live_and_shows_no_closers(held: Held) -> None:
    proc = cli("show", "--no-color", held.path)
    no_traceback(proc)
    assert proc.returncode == 0
    assert proc.stderr == (
        f"{held.path}: session 's1' is live (locked by process {held.pid}); "
        "a live session is never repaired, so no closers are shown\n"
    )
    assert "repair would append" not in proc.stdout
    assert "INTERRUPTED" not in proc.stdout and "turn/end" not in proc.stdout
    assert proc.stdout.splitlines()[-1].strip().startswith("[1]")  # the open step/start


@pytest.mark.parametrize("command", [["repair"], ["repair", "--write"], ["truncate"]], ids=" ".join)
def test_repair_and_truncate_refuse_a_live_session(held: Held, command: list[str]) -> None:
    before = Path(held.path).read_bytes()
    proc = cli(*command, held.path)
    no_traceback(proc)
    assert (proc.returncode, proc.stdout) == (3, "")
    assert proc.stderr == (
        f"{held.path}: session 's1' is live (locked by process {held.pid}); a live session "
        "is never repaired or truncated, so there is nothing to show\n"
    )
    assert Path(held.path).read_bytes() == before


def test_check_checks_a_live_session_and_says_so(held: Held) -> None:
    proc = cli("check", held.path)
    no_traceback(proc)
    assert proc.returncode == 0
    assert proc.stdout == f"{held.path}: ok (2 events, 1 turn)\n"
    assert proc.stderr == (
        f"{held.path}: note: session 's1' is live (locked by process {held.pid}); "
        "checked what it has written so far\n"
    )


def test_the_same_log_once_its_writer_is_gone_is_shown_with_closers(held: Held) -> None:
    """The contrast: the holder killed, the file unchanged, the session is cold."""
    held.kill()
    path = held.path
    shown = cli("show", "--no-color", path)
    assert shown.returncode == 0 and "repair would append" in shown.stdout
    repaired = cli("repair", path)
    assert repaired.returncode == 0
    assert [json.loads(x)["type"] for x in repaired.stdout.splitlines()] == [
        "step/end",
        "turn/end",
    ]


def test_a_pid_file_another_program_filled_names_no_process(held: Held) -> None:
    """The pid file is a hint for the message: 5,000 digits in it (once a ValueError, shown
    as an internal error) name no process, and the verdict is the same."""
    pid_file = Path(held.path).with_name("session.pid")
    pid_file.write_bytes(b"7" * 5000)
    proc = cli("repair", held.path)
    no_traceback(proc)
    assert (proc.returncode, proc.stdout) == (3, "")
    assert proc.stderr == (
        f"{held.path}: session 's1' is live (locked by another process); a live session "
        "is never repaired or truncated, so there is nothing to show\n"
    )
