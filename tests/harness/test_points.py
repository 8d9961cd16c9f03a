"""Every named point, every action, driven explicitly through the machine's own rules.

The random budget reaches most points most of the time; these fixed scenarios reach each of
them every time, with every check of the machine applied (reference model, durable bytes,
repair), so ``make test`` always covers all crash and cancel points.
"""

from __future__ import annotations

from typing import Any

import pytest

from trio_agent.testing.inprocess import InProcessAdapter
from trio_agent.testing.machine import HarnessMachine, machine_for
from trio_agent.testing.protocol import CRASH_POINTS, trap_points

Points = machine_for(InProcessAdapter, profile="named points")

ACTIONS: list[tuple[str, dict[str, Any]]] = [
    ("crash", {"kind": "crash", "after_write": False}),
    ("crash-after-write", {"kind": "crash", "after_write": True}),
    ("cancel", {"kind": "cancel", "cause": "user", "keep_inbox": False}),
    ("cancel-keep-inbox", {"kind": "cancel", "cause": "parent", "keep_inbox": True}),
    ("disk", {"kind": "disk", "fail": 1}),
]


def _run(point: str, action: dict[str, Any], tear: int | None) -> HarnessMachine:
    machine = Points()
    try:
        machine.begin(["ask", "pair", "talk"])
        machine.inject()  # queued work for the cancel to drop (or keep)
        machine.provoke(point, action, tear)
        machine.followup()  # the agent carries on after the crash or the cancel
        machine.drive(40, True)
        machine.restart()
        machine.followup()
        machine.drive(40, False)
    finally:
        machine.teardown()
    return machine


#: Every point with every action (``after_write`` only differs at ``flush``).
CASES = [
    pytest.param(point, action, id=f"{name}@{point}")
    for name, action in ACTIONS
    for point in trap_points(action["kind"])
    if name != "crash-after-write" or point == "flush"
]


@pytest.mark.parametrize(("point", "action"), CASES)
def test_each_point(point: str, action: dict[str, Any]) -> None:
    machine = _run(point, action, tear=None)
    assert machine.fired[:1] == [f"{action['kind']}@{point}"]


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_each_point_with_a_torn_last_line(point: str) -> None:
    action = {"kind": "crash", "after_write": point == "flush"}
    machine = _run(point, action, tear=7)
    assert machine.fired[:1] == [f"crash@{point}"]
