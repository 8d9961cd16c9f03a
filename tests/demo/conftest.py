"""Leak guard for the demo tests: no worker, tool, server or browser process may outlive a test.

Every test runs with a fresh marker in its environment. Workers, their bash tools, a server
subprocess and Chromium all inherit it, whatever process group or session they end up in, so
a scan of ``/proc/*/environ`` finds any survivor (an orphaned tool group included).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from support.demo.helpers import TAG_VAR
from support.polling import Hung, until_sync
from support.proc import kill_tagged, tagged


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
