"""Same requests, same journal: the world is deterministic (Hypothesis replays rely on it).

Random request sequences are generated from a seed, each one played twice on fresh
in-process adapters; the two journals must be identical (message ids aside, they are random).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import trio

from trio_agent.testing.inprocess import InProcessAdapter, TrioThread
from trio_agent.testing.plan import MENU_NAMES
from trio_agent.testing.protocol import trap_points


def _normalize(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _normalize(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalize(v, ids) for v in value]
    if isinstance(value, str) and value.startswith("m-"):
        return ids.setdefault(value, f"m{len(ids)}")
    return value


def _request(rng: random.Random, state: dict[str, Any], n: int) -> dict[str, Any]:
    ops = ["followup", "steer", "inject", "cancel", "advance", "advance", "flush", "arm"]
    if state["jobs"]:
        ops.append("tool")
    if state["approvals"]:
        ops.append("approval")
    if not state["disk_failures"]:
        ops.append("disk")
        armed = state["armed"]
        if armed is None or armed["action"]["kind"] != "disk":
            ops.append("new_agent")  # a failing final flush would fail the world (K24)
    op = rng.choice(ops)
    if op in ("followup", "steer", "inject"):
        return {"op": op, "text": f"{op} {n}"}
    if op == "cancel":
        # settle: false replies before the cancelled run unwinds; the run must still be
        # deterministic, whatever the next request is.
        keep, settle = rng.random() < 0.5, rng.random() < 0.6
        return {"op": op, "cause": "user", "keep_inbox": keep, "settle": settle}
    if op == "advance":
        return {"op": op, "ticks": rng.randint(1, 5), "seconds": 1.0}
    if op == "tool":
        return {"op": op, "decision": rng.choice(["finish", "fail"])}
    if op == "approval":
        return {"op": op, "decision": rng.choice(["allow", "deny"])}
    if op == "disk":
        return {"op": op, "fail": rng.randint(1, 2)}
    if op == "arm":
        kind = rng.choice(["crash", "cancel"])
        action: dict[str, Any] = (
            {"kind": "crash", "after_write": rng.random() < 0.5}
            if kind == "crash"
            else {"kind": "cancel", "cause": "parent", "keep_inbox": rng.random() < 0.5}
        )
        point = rng.choice(trap_points(kind))
        return {"op": "arm", "point": point, "action": action}
    return {"op": op}


def _play(seed: int, root: Path, steps: int) -> list[Any]:
    rng = random.Random(seed)
    plan = [rng.choice(MENU_NAMES) for _ in range(rng.randint(1, 3))]
    adapter = InProcessAdapter()
    ids: dict[str, str] = {}
    out: list[Any] = []
    try:
        log = root / "s" / "session.jsonl"
        reply = adapter.request({"op": "start", "log": str(log), "create": True, "plan": plan})
        for n in range(steps):
            if reply.get("crashed") or not reply.get("ok"):
                out.append(["end", reply.get("crashed"), reply.get("error")])
                break
            message = _request(rng, reply["state"], n)
            reply = adapter.request(message)
            state = reply.get("state") or {}
            out.append(
                [
                    message,
                    _normalize(reply["journal"], ids),
                    reply.get("crashed"),
                    {k: state.get(k) for k in ("status", "jobs", "approvals", "acked", "events")},
                ]
            )
    finally:
        adapter.close()
    return out


@pytest.mark.parametrize("seed", range(30))
def test_the_same_requests_give_the_same_journal(seed: int, tmp_path: Path) -> None:
    first = _play(seed, tmp_path / "a", steps=40)
    second = _play(seed, tmp_path / "b", steps=40)
    for a, b in zip(first, second, strict=False):
        assert a == b
    assert len(first) == len(second)


def test_nothing_runs_in_the_trio_thread_between_two_calls() -> None:
    """The in-process world is still between requests (spec/harness.md §What an
    implementation must provide, 1): after a call the trio thread waits for the next one
    inside trio, so a task that is always ready to run does not move in between."""
    thread = TrioThread()
    turns: list[None] = []

    async def spin() -> None:
        while True:
            turns.append(None)
            await trio.lowlevel.checkpoint()

    async def start_spinning() -> int:
        thread.nursery.start_soon(spin)
        for _ in range(3):
            await trio.lowlevel.checkpoint()
        return len(turns)

    async def count() -> int:
        return len(turns)

    try:
        spun = thread.call(start_spinning)
        assert spun > 0
        # A run loop left running between the calls would turn the spinning task at least
        # once before it ran the second one.
        assert thread.call(count) == spun
    finally:
        thread.close()
