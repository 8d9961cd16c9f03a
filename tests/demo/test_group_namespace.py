"""The demo's probe of a call's PID namespace keeps to that namespace after it ends.

The kernel numbers each new PID namespace with the lowest free inode number, so the number of
a namespace that ended soon names the next one made on the host. A probe that kept only the
number counted that namespace's processes as the ended call's. The kill scenario's snapshot
once showed its tool group alive again after the restart, under tests that make namespaces
of their own at the same time: what a reused number does.
The probe now holds the namespace open, which keeps its number. Which processes live where
is read here from ``/proc`` by ``support.proc``, not by the code under test.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
from collections.abc import Iterator

import pytest
from support.polling import until_sync
from support.proc import alive, in_namespace, namespace_below

from trio_agent.demo.worker_process import namespace_alive
from trio_agent.procs.census import process_identity
from trio_agent.procs.containment import in_namespace as contained, namespace_refusal

pytestmark = pytest.mark.skipif(
    namespace_refusal() is not None, reason=f"no PID namespace here: {namespace_refusal()}"
)

#: Namespaces made one after the other once the call's ended: the kernel hands out the lowest
#: free number, so without the pin one of them soon had the ended namespace's.
LATER_NAMESPACES = 40


def _start_contained(argv: list[str]) -> subprocess.Popen[bytes]:
    """``argv`` in a PID namespace of its own, as a call's tool runs: bwrap leads a new
    process group and session."""
    info = os.open(os.devnull, os.O_WRONLY)  # where bwrap says which init it made
    try:
        return subprocess.Popen(
            contained(argv, info),
            pass_fds=(info,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    finally:
        os.close(info)


def _processes_below(bwrap: int) -> list[int]:
    """The live processes of the namespace ``bwrap`` made, none while there is none."""
    below = namespace_below(bwrap)
    return [] if below is None else in_namespace(below[1])


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    """The bwraps a test starts, killed with their namespaces at its end."""
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is not None:
            continue  # reaped: its pid may be another process's by now
        below = namespace_below(proc.pid)
        for pid in [proc.pid] + ([below[0]] if below else []):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()


def test_an_ended_namespace_is_not_found_again_in_the_next_one(
    started: list[subprocess.Popen[bytes]],
) -> None:
    call = _start_contained(["sleep", "1000"])
    started.append(call)
    identity = process_identity(call.pid)
    assert identity is not None
    until_sync(lambda: len(_processes_below(call.pid)) == 2)  # its init and the command
    pids, namespace = namespace_alive(call.pid, identity, None)
    assert namespace is not None
    init, inode = namespace.init, namespace.inode
    assert (init, inode) == namespace_below(call.pid)
    assert pids and all(alive(pid) for pid in pids) and init not in pids

    try:
        # The call's tree ends: its init is killed, and the kernel kills the rest. bwrap reaps
        # the init and exits, so nothing holds the namespace and the kernel frees its number.
        os.kill(init, signal.SIGKILL)
        call.wait()
        until_sync(lambda: in_namespace(inode) == [])  # the kernel ended the namespace
        assert namespace_alive(call.pid, identity, namespace)[0] == []

        # Other calls, other programs, one after the other: none of their namespaces takes
        # the ended one's number, so none of their processes is counted as the call's.
        for _ in range(LATER_NAMESPACES):
            later = _start_contained(["sleep", "1000"])
            started.append(later)
            below = until_sync(functools.partial(namespace_below, later.pid))
            assert below is not None
            later_init, later_inode = below
            assert later_inode != inode
            assert namespace_alive(call.pid, identity, namespace)[0] == []
            os.kill(later_init, signal.SIGKILL)  # bwrap reaps its init, then exits
            later.wait()
    finally:
        namespace.close()
    assert namespace.fd is None
