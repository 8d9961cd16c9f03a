"""A session's files, trio-free: their names, what a path that is not a regular file is, the
one line that refuses it, what is wrong with a directory given to a command, and the
momentary shared-lock probe of liveness.

The store (spec/persistence.md §1, §4), the file commands (spec/cli.md §Input files, §Live
sessions) and ``trio-agent run`` all use these, so a refusal reads the same wherever it comes
from and the lock is probed one way. A bottom module importing only the standard library:
the file commands read it before anything else, and must not pay for importing trio or the
store to word a refusal.
"""

from __future__ import annotations

import fcntl
import os
import stat
from typing import Final

__all__ = [
    "LOG_NAME",
    "PID_NAME",
    "directory_problem",
    "file_kind",
    "holder_pid",
    "not_a_log",
    "not_a_session_directory",
    "other_session",
    "read_pid",
    "shared_lock_free",
]

#: A session's log, in its directory (spec/persistence.md §1).
LOG_NAME: Final = "session.jsonl"
#: Beside the log, the pid of the process holding it (spec/persistence.md §4).
PID_NAME: Final = "session.pid"


def file_kind(mode: int) -> str | None:
    """What a file that is not a regular file is, in words (``None`` for a regular file).

    ``mode`` comes from ``lstat`` where a symbolic link must be named, from ``stat``/``fstat``
    otherwise.
    """
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "is a symbolic link"
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "is a character device"
    if stat.S_ISBLK(mode):
        return "is a block device"
    if stat.S_ISSOCK(mode):
        return "is a socket"
    return "is a special file"


def directory_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be read as a directory (links followed), in words, or ``None`` when
    it is one: ``no such directory``, ``is not a directory``, or ``cannot read: <the system's
    reason>`` (a name too long, a loop of links). ``Path.is_dir`` would raise for some of
    those, and answer ``False`` for others."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "no such directory"
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    return None if stat.S_ISDIR(mode) else "is not a directory"


def not_a_log(path: str | os.PathLike[str], kind: str) -> str:
    """The one line refusing ``path``, which :func:`file_kind` called ``kind``, where a log (or
    a session's directory) belongs: ``PATH: is a FIFO (named pipe), not a log file (a
    session's log is a regular file)``; a link is named a link and nothing more."""
    what = kind if kind == "is a symbolic link" else f"{kind}, not a log file"
    return f"{os.fspath(path)}: {what} (a session's log is a regular file)"


def other_session(named: str, expected: str) -> str:
    """The problem of a log in session ``expected``'s directory whose header names ``named``
    (a directory copied or renamed): the store's cold open (spec/persistence.md §5), the
    file commands' ``--store DIR --session ID`` and ``sessions`` word it alike."""
    return f"the header names session {named!r}, not {expected!r}"


def not_a_session_directory(path: str | os.PathLike[str], kind: str) -> str:
    """The one line refusing ``path`` where a session's directory belongs (the store never
    makes or follows anything else there)."""
    what = kind if kind == "is a symbolic link" else f"{kind}, not a directory"
    return f"{os.fspath(path)}: {what} (a session's directory is a real directory)"


def shared_lock_free(fd: int) -> bool | None:
    """A momentary shared-lock probe of an open log (spec/persistence.md §4): ``False`` when
    a writer holds it (the session is live), ``True`` when it is free, ``None`` when the file
    system has no locks (nothing to learn). The lock is never kept."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return None
    fcntl.flock(fd, fcntl.LOCK_UN)
    return True


#: The most of a pid file read: a pid and its newline take at most 8 bytes on Linux (pid_max
#: is at most 2^22); anything longer was not written by a store.
_PID_FILE_BYTES: Final = 32


def read_pid(pid_path: str | os.PathLike[str]) -> int | None:
    """The pid written in ``pid_path``, or None when it is missing, unreadable or not a pid
    (ASCII digits, surrounding white space allowed, the file at most 32 bytes: a file another
    program filled is read no further, and never turned into a number of thousands of digits,
    which Python refuses)."""
    try:
        with open(pid_path, "rb") as f:
            raw = f.read(_PID_FILE_BYTES + 1)
    except OSError:
        return None
    text = raw.strip()
    if len(raw) > _PID_FILE_BYTES or not text.isdigit():
        return None
    return int(text)


def holder_pid(log_path: str | os.PathLike[str]) -> int | None:
    """The pid the live writer wrote beside the log (``session.pid``), if it can be read."""
    return read_pid(os.path.join(os.path.dirname(os.fspath(log_path)), PID_NAME))
