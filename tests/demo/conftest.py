"""Leak guard for the demo tests: no worker, tool, server or browser process may outlive a test.

Every test runs with a fresh marker in its environment. Workers, their bash tools, a server
subprocess and Chromium all inherit it, whatever process group or session they end up in, so
a scan of ``/proc/*/environ`` finds any survivor (an orphaned tool group included).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from demo_helpers import TAG_VAR, kill_tagged, wait_untagged


@pytest.fixture(autouse=True)
def leak_guard(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    tag = uuid.uuid4().hex
    monkeypatch.setenv(TAG_VAR, tag)
    yield tag
    left = wait_untagged(tag, timeout=10.0)
    if left:
        kill_tagged(tag)
        pytest.fail(f"processes outlived the test: {left}")
