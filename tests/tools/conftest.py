"""Leak guard for the process-group tests: nothing a test started may outlive it.

Every test runs with a fresh marker in its environment. Every process it starts inherits the
marker, whatever group, session or parent it ends up in (even one that escaped the group), so
a scan of ``/proc/*/environ`` finds any survivor. Zombies have no environment left; an
unreaped zombie child of this pytest process is caught by a separate check.
"""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from collections.abc import Iterator

import pytest

TAG_VAR = "TRIO_AGENT_TOOLS_TEST_TAG"


def _proc_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return b""


def _tagged(tag: str) -> dict[int, str]:
    needle = f"\0{TAG_VAR}={tag}\0".encode()
    found = {}
    for pid in _proc_pids():
        if pid == os.getpid():
            continue
        if needle in b"\0" + _read(f"/proc/{pid}/environ"):
            cmdline = _read(f"/proc/{pid}/cmdline").replace(b"\0", b" ").decode(errors="replace")
            found[pid] = cmdline.strip()
    return found


def _zombie_children() -> set[int]:
    me = os.getpid()
    zombies = set()
    for pid in _proc_pids():
        fields = _read(f"/proc/{pid}/stat").rpartition(b")")[2].split()
        if len(fields) > 1 and fields[0] == b"Z" and int(fields[1]) == me:
            zombies.add(pid)
    return zombies


@pytest.fixture(autouse=True)
def no_leftover_processes(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Fail the test if any process it started is still alive (or an unreaped child)."""
    tag = uuid.uuid4().hex
    zombies_before = _zombie_children()
    monkeypatch.setenv(TAG_VAR, tag)
    yield tag
    leftovers = _tagged(tag)
    for pid in leftovers:
        # Clean up so one leak does not cascade into the following tests.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    new_zombies = _zombie_children() - zombies_before
    for pid in new_zombies:
        os.waitpid(pid, 0)
    assert not leftovers, f"processes left running by the test: {leftovers}"
    assert not new_zombies, f"children left unreaped by the test: {sorted(new_zombies)}"
