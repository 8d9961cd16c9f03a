"""Helpers for the store tests: the fork-server client, log readers, fault-injecting FileOps."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from support.lines import LineReader
from support.procenv import child_env
from trio_agent.log import Event, check_events, decode_event, split_log
from trio_agent.store import FileOps

#: The store tests' folder, where the child programs live.
HERE = Path(__file__).resolve().parents[2] / "store"
CHILD = HERE / "store_child.py"
TIMEOUT = 30.0  # generous: only a hung child ever reaches it


class Zygote:
    """Client of ``store_child.py zygote``: fork a child per command, SIGKILL it, reap it."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD), "zygote"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=child_env(),
        )
        assert self.proc.stdout is not None
        self._lines = LineReader(self.proc.stdout.fileno(), what="the zygote", guard=TIMEOUT)
        self._stash: list[list[str]] = []

    def _send(self, cmd: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps(cmd) + b"\n")
        self.proc.stdin.flush()

    def _next(self, match: Callable[[list[str]], bool]) -> list[str]:
        for i, msg in enumerate(self._stash):
            if match(msg):
                return self._stash.pop(i)
        while True:
            msg = self._lines.words()
            if match(msg):
                return msg
            self._stash.append(msg)

    def start(self, **cmd: Any) -> int:
        self._send(cmd)
        return int(self._next(lambda m: m[0] == "pid")[1])

    def wait(self, pid: int, *kinds: str) -> list[str]:
        """The next message of ``pid`` whose kind is one of ``kinds`` (or done/error)."""
        want = {*kinds, "done", "error"}
        return self._next(lambda m: m[0] in want and m[1] == str(pid))

    def kill(self, pid: int) -> None:
        os.kill(pid, signal.SIGKILL)

    def reap(self, pid: int) -> tuple[int, list[list[str]]]:
        """Wait for ``pid`` to exit; return its wait status and every message it sent."""
        self._send({"op": "reap", "pid": pid})
        status = int(self._next(lambda m: m[0] == "reaped" and m[1] == str(pid))[2])
        mine = [m for m in self._stash if len(m) > 1 and m[1] == str(pid)]
        self._stash = [m for m in self._stash if not (len(m) > 1 and m[1] == str(pid))]
        return status, mine

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._send({"op": "exit"})
        try:
            self.proc.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.stdout.close()


def read_log(path: Path) -> tuple[bytes, list[Event], bytes, list[bytes]]:
    """``(header line, events of the complete lines, torn tail, complete event lines)``.

    Raises if a complete line is not a valid event (a kill -9 never produces one).
    """
    split = split_log(path.read_bytes())
    assert split.header is not None
    lines = [line for _, line in split.lines]
    events = [decode_event(line, n) for n, line in split.lines]
    return split.header, events, split.torn_tail, lines


def assert_valid_balanced(path: Path) -> list[Event]:
    _, events, torn, _ = read_log(path)
    assert torn == b"", "a repaired log has no torn tail"
    checker = check_events(events)
    assert checker.open_turn is None, "a repaired log is balanced"
    return events


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class FaultyOps(FileOps):
    """Real file operations, with scripted failures: ``fail["write"] = [ENOSPC, None, EIO]``
    fails the first and third write calls. ``short`` makes every write short."""

    def __init__(self) -> None:
        self.fail: dict[str, list[int | None]] = {"write": [], "fsync": [], "truncate": []}
        self.calls: dict[str, int] = {"write": 0, "fsync": 0, "truncate": 0}
        self.short: int | None = None
        self.points: list[str] = []
        self.lock = threading.Lock()

    def _maybe_fail(self, op: str) -> None:
        with self.lock:
            self.calls[op] += 1
            plan = self.fail[op]
            code = plan.pop(0) if plan else None
        if code is not None:
            raise OSError(code, os.strerror(code))

    def write(self, fd: int, data: bytes | memoryview) -> int:
        self._maybe_fail("write")
        if self.short is not None:
            data = data[: self.short]
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        self._maybe_fail("fsync")
        os.fsync(fd)

    def truncate(self, fd: int, length: int) -> None:
        self._maybe_fail("truncate")
        os.ftruncate(fd, length)

    def point(self, name: str) -> None:
        self.points.append(name)


ENOSPC = errno.ENOSPC
EIO = errno.EIO
