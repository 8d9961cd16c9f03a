"""Waiting for a condition. The condition is the verdict; the hang guard only turns a bug
that would hang the suite into a failure, so it is generous and never an expectation of speed.

The waits poll in real time through a worker thread, so they work the same under trio's
``MockClock`` (whose virtual time a ``trio.sleep`` would only move) as under the real clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import trio

T = TypeVar("T")

#: Seconds of real time after which a wait is taken for a hang (a bug), not for slowness.
HANG_GUARD = 120.0
#: Real seconds between two looks at the condition.
PERIOD = 0.001


class Hung(AssertionError):
    """A condition still did not hold after the hang guard."""


def _hung(probe: Callable[[], object], guard: float) -> Hung:
    name = getattr(probe, "__qualname__", repr(probe))
    return Hung(f"{name} did not hold within the {guard:g} s hang guard")


async def until(probe: Callable[[], T], *, guard: float = HANG_GUARD, period: float = PERIOD) -> T:
    """Wait until ``probe()`` returns a true value, and return that value; look every
    ``period`` real seconds (a costly probe, a scan of /proc, wants a longer one)."""
    deadline = time.monotonic() + guard
    while not (value := probe()):
        if time.monotonic() > deadline:
            raise _hung(probe, guard)
        await trio.to_thread.run_sync(time.sleep, period)
    return value


def until_sync(probe: Callable[[], T], *, guard: float = HANG_GUARD, period: float = PERIOD) -> T:
    """:func:`until` outside trio (a synchronous fixture's teardown, a worker thread)."""
    deadline = time.monotonic() + guard
    while not (value := probe()):
        if time.monotonic() > deadline:
            raise _hung(probe, guard)
        time.sleep(period)
    return value
