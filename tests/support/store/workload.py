"""A random but valid agent workload: turns, steps, streamed chunks, approvals, tool calls.

Used by the store tests, the kill -9 child (store_child.py) and bench/bench_store.py. It
produces ``(type, data, flush_after)`` triples; ``flush_after`` marks the runtime's flush
points (before a tool body, after ``turn/end``) plus some random ones.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

Step = tuple[str, dict[str, Any], bool]


def turn_script(
    rng: random.Random, turn: int, tag: str, *, max_steps: int = 3, text_size: int = 24
) -> Iterator[Step]:
    """One complete turn (numbered ``turn``); ``tag`` makes every id unique in the log."""
    msg = {"id": f"{tag}-m{turn}", "text": f"task {turn}", "source": "user"}
    yield "agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [msg]}, False
    yield "turn/start", {"turn": turn}, False
    claim = {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}
    yield "agent/inbox/spliced", claim, False
    steps = rng.randint(1, max_steps)
    aborted = rng.random() < 0.15
    for step in range(1, steps + 1):
        where = {"turn": turn, "step": step}
        yield "step/start", dict(where), rng.random() < 0.2
        if step == 1:
            yield "user/message", {**where, "message": msg}, False
        text = ""
        for _ in range(rng.randint(0, 6)):
            piece = "".join(rng.choice("abcdefgh ") for _ in range(rng.randint(1, text_size)))
            text += piece
            chunk = {"type": "text-delta", "text": piece}
            yield "assistant/chunk", {**where, "chunk": chunk}, False
        last = step == steps
        calls = (
            []
            if last
            else [
                {
                    "type": "tool-call",
                    "id": f"{tag}-t{turn}s{step}c{i}",
                    "name": rng.choice(["shell", "read", "write"]),
                    "arguments": {"n": i, "path": f"/tmp/x{i}"},
                }
                for i in range(rng.randint(1, 3))
            ]
        )
        content: list[dict[str, Any]] = [{"type": "text", "text": text}, *calls]
        message = {"id": f"{tag}-a{turn}s{step}", "content": content}
        yield "assistant/message", {**where, "message": message}, False
        for block in calls:
            cid = block["id"]
            call = {**where, "callId": cid}
            if rng.random() < 0.3:
                aid = f"{cid}-ap"
                asked = {**call, "id": aid, "toolName": block["name"]}
                yield "approval/asked", asked, False
                outcome = rng.choice(["allowed", "allowed", "rejected"])
                yield "approval/decided", {**where, "id": aid, "outcome": outcome}, False
                if outcome != "allowed":
                    denied = {**call, "isError": True, "content": "denied"}
                    denied["error"] = {"code": "DENIED"}
                    yield "tool/result", denied, False
                    continue
            dispatch = {**call, "name": block["name"], "arguments": block["arguments"]}
            yield "tool/call", dispatch, True  # the dispatch marker is flushed before the body
            if rng.random() < 0.5:
                spawned = {**call, "pgid": 4_000_000 + rng.randint(0, 99_999), "identity": "boot:1"}
                yield "tool/spawned", spawned, False
            for _ in range(rng.randint(0, 4)):
                stream = rng.choice(["stdout", "stderr"])
                out = {**call, "stream": stream, "text": "out " * rng.randint(1, 8)}
                yield "tool/output", out, False
            if aborted:
                stopped = {**call, "isError": True, "content": "stopped"}
                stopped["error"] = {"code": "ABORTED"}
                yield "tool/result", stopped, False
            else:
                yield "tool/result", {**call, "isError": False, "content": "ok"}, rng.random() < 0.2
        yield "step/end", dict(where), False
        if aborted:
            break
    kind = "aborted" if aborted else "completed"
    yield "turn/end", {"turn": turn, "reason": {"kind": kind}}, True


def workload(
    rng: random.Random, first_turn: int, tag: str, turns: int, **kw: Any
) -> Iterator[Step]:
    """``turns`` complete turns starting at ``first_turn``."""
    for turn in range(first_turn, first_turn + turns):
        yield from turn_script(rng, turn, tag, **kw)
