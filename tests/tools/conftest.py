"""Leak guard for the process-group tests: nothing a test started may outlive it.

Every test runs with a fresh marker in its environment. Every process it starts inherits the
marker, whatever group, session or parent it ends up in (even one that escaped the group), so
a scan of ``/proc/*/environ`` finds any survivor. Zombies have no environment left; an
unreaped zombie child of this pytest process is caught by a separate check.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from support.proc import kill_tagged, tagged, zombie_children
from support.tools.testlib import TAG_VAR

from trio_agent.procs.containment import POLICY_VAR


@pytest.fixture(autouse=True)
def no_leftover_processes(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Fail the test if any process it started is still alive (or an unreaped child)."""
    tag = uuid.uuid4().hex
    zombies_before = zombie_children()
    monkeypatch.setenv(TAG_VAR, tag)
    yield tag
    leftovers = tagged(TAG_VAR, tag)
    kill_tagged(TAG_VAR, tag)  # so one leak does not cascade into the following tests
    new_zombies = zombie_children() - zombies_before
    for pid in new_zombies:
        os.waitpid(pid, 0)
    assert not leftovers, f"processes left running by the test: {leftovers}"
    assert not new_zombies, f"children left unreaped by the test: {sorted(new_zombies)}"


@pytest.fixture(autouse=True)
def group_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests of this folder that do not name a containment test the process-group
    fallback (spec/tools.md §10), whose mechanics they were written for; test_containment
    names its containment on every call."""
    monkeypatch.setenv(POLICY_VAR, "process-group")
