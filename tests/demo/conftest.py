"""Leak guard for the demo tests: no worker, tool, server or browser process may outlive a test.
And the demo's stand-in test suite at a quick pace.

Every test runs with a fresh marker in its environment. Workers, their bash tools, a server
subprocess and Chromium all inherit it, whatever process group or session they end up in, so
a scan of ``/proc/*/environ`` finds any survivor (an orphaned tool group included).

The stand-in suite advances with the story, never with the clock (trio_agent/demo/workdir.py):
its pace changes only how long a step waits for the lines the story allows, never what the
step shows. At the demo's own pace (0.4 s a test) the scenarios spend most of their time
asleep; every demo test runs them at :data:`TEST_PACE` (``$TRIO_AGENT_DEMO_PACE``, inherited by
the worker, the server and the ``trio-agent demo`` a test starts; a test may still set its own).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from support.demo.helpers import TAG_VAR
from support.polling import Hung, until_sync
from support.proc import kill_tagged, tagged

from trio_agent.demo.engine import PACE_VAR

#: Seconds per test of the stand-in suite in the demo tests. Not faster: at the allowance the
#: suite still ticks, forking one ``sleep`` per tick, for as long as a step waits.
TEST_PACE = "0.05"


@pytest.fixture(autouse=True)
def quick_pace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PACE_VAR, TEST_PACE)


@pytest.fixture(autouse=True)
def leak_guard(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    tag = uuid.uuid4().hex
    monkeypatch.setenv(TAG_VAR, tag)
    yield tag
    # A hang guard, not a speed bar: processes a test ended may still be exiting on a loaded
    # machine; only one that is still alive after a minute is a leak.
    try:
        until_sync(lambda: not tagged(TAG_VAR, tag), guard=60.0, period=0.05)
    except Hung:
        left = tagged(TAG_VAR, tag)
        kill_tagged(TAG_VAR, tag)
        pytest.fail(f"processes outlived the test: {left}")
