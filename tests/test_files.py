"""trio_agent.files: a session's files, trio-free (names, the one refusal, the lock probe)."""

from __future__ import annotations

import fcntl
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from trio_agent.files import (
    PID_NAME,
    file_kind,
    holder_pid,
    not_a_log,
    not_a_session_directory,
    read_pid,
    shared_lock_free,
)


def test_one_wording_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    kind = file_kind(os.lstat(tmp_path / "fifo").st_mode)
    assert not_a_log(tmp_path / "fifo", kind or "") == (
        f"{tmp_path}/fifo: is a FIFO (named pipe), not a log file (a session's log is a "
        "regular file)"
    )
    (tmp_path / "link").symlink_to(tmp_path / "fifo")
    link = file_kind(os.lstat(tmp_path / "link").st_mode) or ""
    assert not_a_log("L", link) == "L: is a symbolic link (a session's log is a regular file)"
    assert not_a_session_directory("D", "is a regular file") == (
        "D: is a regular file, not a directory (a session's directory is a real directory)"
    )
    assert file_kind(os.stat(__file__).st_mode) is None


def test_the_probe_sees_a_writer_in_another_process_and_keeps_no_lock(tmp_path: Path) -> None:
    log = tmp_path / "session.jsonl"
    log.write_bytes(b"")
    (tmp_path / PID_NAME).write_text("4242\n", encoding="ascii")
    fd = os.open(log, os.O_RDONLY)
    try:
        assert shared_lock_free(fd) is True
        holder = subprocess.Popen(
            [sys.executable, "-c",
             "import fcntl, sys; f = open(sys.argv[1]); fcntl.flock(f, fcntl.LOCK_EX); "
             "print('held', flush=True); sys.stdin.read()", str(log)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            assert shared_lock_free(fd) is False
            assert holder_pid(log) == 4242
        finally:
            holder.communicate("")
        # The probe kept nothing: an exclusive lock is free to take now.
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def test_holder_pid_is_none_without_a_readable_pid_file(tmp_path: Path) -> None:
    assert holder_pid(tmp_path / "session.jsonl") is None
    (tmp_path / PID_NAME).write_text("not a pid", encoding="ascii")
    assert holder_pid(tmp_path / "session.jsonl") is None


@pytest.mark.parametrize(
    "content",
    [b"1" * 5000, b"\xff\xfe12", b"\xd9\xa3", b"12 34\n", b"-5\n", b" \n"],
    ids=["5000-digits", "not-ascii", "arabic-indic-digit", "two-numbers", "negative", "blank"],
)
def test_a_pid_file_another_program_wrote_is_no_pid_and_no_error(
    tmp_path: Path, content: bytes
) -> None:
    """5,000 digits once raised ValueError (Python refuses to convert more than 4,300): a
    store's close, and the CLI's message about a live session, failed on it."""
    (tmp_path / PID_NAME).write_bytes(content)
    assert read_pid(tmp_path / PID_NAME) is None


def test_a_huge_pid_file_is_read_no_further_than_a_pid(tmp_path: Path) -> None:
    """A sparse file of 64 GiB: reading it whole would not end (or end in MemoryError)."""
    with open(tmp_path / PID_NAME, "wb") as f:
        f.write(b"4242\n")
        f.truncate(64 * 2**30)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert read_pid(tmp_path / PID_NAME) is None
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 1024  # KiB
    (tmp_path / PID_NAME).write_bytes(b" 4242\n")
    assert read_pid(tmp_path / PID_NAME) == 4242
