"""Random valid logs from a small simulation of the turn loop (no trio, no I/O).

Used by the property tests of the log core, by the benchmarks, and by anyone who wants
realistic valid logs to test a port's checker or repair. The simulation makes the choices
a real loop makes (queue work, claim it, stream, call tools, approvals, cancel at any point)
and always emits a valid log; cutting its output anywhere gives a valid prefix.
"""

from __future__ import annotations

import random
from typing import Any

from ..log.events import Event

_WORDS = ("run", "the", "tests", "and", "fix", "what", "breaks", "ok", "léger", "🙂", "data")


class LogGenerator:
    """Emits events of a plausible session. ``rng`` drives every choice (deterministic)."""

    def __init__(self, rng: random.Random, *, time0: int = 1_700_000_000_000) -> None:
        self.rng = rng
        self.events: list[Event] = []
        self.seq = 0
        self.time = time0
        self.turn = 0
        self.queues: dict[str, list[dict[str, str]]] = {"next-turn": [], "next-step": []}
        self._ids = 0

    # -- primitives ---------------------------------------------------------------------

    def _id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}{self._ids}"

    def emit(self, type_: str, data: dict[str, Any]) -> None:
        self.time += self.rng.randint(0, 40)
        self.events.append(Event(self.seq, self.time, type_, data))
        self.seq += 1

    def take(self) -> list[Event]:
        """Hand over the events generated so far and forget them (for very long logs)."""
        events, self.events = self.events, []
        return events

    def text(self, words: int) -> str:
        return " ".join(self.rng.choice(_WORDS) for _ in range(words))

    def queue(self, target: str) -> None:
        message = {"id": self._id("m"), "text": self.text(3), "source": "user"}
        queue = self.queues[target]
        self.emit(
            "agent/inbox/spliced", {"target": target, "start": len(queue), "inserted": [message]}
        )
        queue.append(message)

    def drop_queued(self) -> None:
        for target in ("next-step", "next-turn"):
            queue = self.queues[target]
            if queue:
                data: dict[str, Any] = {
                    "target": target,
                    "start": 0,
                    "removedCount": len(queue),
                    "inserted": [],
                    "outcome": "canceled",
                }
                self.emit("agent/inbox/spliced", data)
                queue.clear()

    def claim(self, include_turn_item: bool) -> list[dict[str, str]]:
        claimed: list[dict[str, str]] = []
        if self.queues["next-step"]:
            claimed += self.queues["next-step"]
            self.emit(
                "agent/inbox/spliced",
                {"target": "next-step", "start": 0, "removedCount": len(claimed), "inserted": []},
            )
            self.queues["next-step"] = []
        if include_turn_item and self.queues["next-turn"]:
            claimed.append(self.queues["next-turn"].pop(0))
            self.emit(
                "agent/inbox/spliced",
                {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []},
            )
        return claimed

    # -- the loop -------------------------------------------------------------------------

    def session(self, turns: int) -> list[Event]:
        """Generate ``turns`` turns with idle-time inbox activity between them."""
        for _ in range(turns):
            for _ in range(self.rng.choice((0, 1, 1, 2))):
                self.queue(self.rng.choice(("next-turn", "next-turn", "next-step")))
            if self.rng.random() < 0.1:
                self.drop_queued()
            if not (self.queues["next-turn"] or self.queues["next-step"]):
                self.queue("next-turn")
            self.run_turn()
        return self.events

    def run_turn(self) -> None:
        self.turn += 1
        turn = self.turn
        self.emit("turn/start", {"turn": turn})
        claimed = self.claim(include_turn_item=True)
        roll = self.rng.random()
        if roll < 0.05:
            self.emit("turn/end", {"turn": turn, "reason": {"kind": "blocked"}})
            return
        if roll < 0.08 or not claimed:
            self.drop_queued()
            self.emit("turn/end", {"turn": turn, "reason": {"kind": "aborted"}})
            return
        kind = "completed"
        step = 0
        while True:
            step += 1
            outcome = self.run_step(turn, step, claimed)
            claimed = []
            if outcome == "aborted":
                self.drop_queued()
                kind = "aborted"
                break
            if outcome == "max-tokens":
                kind = "max-tokens"
            if outcome == "error":
                kind = "error"
                break
            if outcome != "tools" and not self.queues["next-step"]:
                break
            if step >= 4:
                break
            if self.rng.random() < 0.2:
                self.queue("next-step")
            claimed = self.claim(include_turn_item=False)
        reason: dict[str, Any] = {"kind": kind}
        if kind == "error":
            reason["error"] = {"code": "MODEL_ERROR", "message": "the model failed"}
        self.emit("turn/end", {"turn": turn, "reason": reason})

    def run_step(self, turn: int, step: int, claimed: list[dict[str, str]]) -> str:
        ts = {"turn": turn, "step": step}
        self.emit("step/start", ts)
        for message in claimed:
            self.emit("user/message", {**ts, "message": message})
        text = ""
        for _ in range(self.rng.randint(0, 6)):
            delta = self.text(self.rng.randint(1, 4)) + " "
            text += delta
            self.emit("assistant/chunk", {**ts, "chunk": {"type": "text-delta", "text": delta}})
        fate = self.rng.random()
        if fate < 0.1:  # cancelled mid-stream: keep the visible prefix
            if text:
                prefix = [{"type": "text", "text": text}]
                self.emit(
                    "assistant/message",
                    {
                        **ts,
                        "message": {"id": self._id("a"), "content": prefix},
                        "interrupted": True,
                    },
                )
            self.emit("step/end", ts)
            return "aborted"
        if fate < 0.13:
            self.emit("step/end", ts)
            return "error"
        calls = []
        for _ in range(self.rng.choice((0, 0, 1, 1, 2, 3))):
            name = self.rng.choice(("bash", "sleep", "echo"))
            call = {
                "type": "tool-call",
                "id": self._id("c"),
                "name": name,
                "arguments": {"arg": self.text(2)},
            }
            self.emit("assistant/chunk", {**ts, "chunk": call})
            calls.append(call)
        finish = "max-tokens" if self.rng.random() < 0.05 else ("tool-calls" if calls else "stop")
        self.emit("assistant/chunk", {**ts, "chunk": {"type": "finish", "reason": finish}})
        content: list[dict[str, Any]] = ([{"type": "text", "text": text}] if text else []) + calls
        self.emit("assistant/message", {**ts, "message": {"id": self._id("a"), "content": content}})
        aborted = False
        for call in calls:
            aborted = self.run_call(ts, call, aborted) or aborted
        self.emit("step/end", ts)
        if aborted:
            return "aborted"
        if finish == "max-tokens":
            return "max-tokens"
        return "tools" if calls else "done"

    def run_call(self, ts: dict[str, int], call: dict[str, Any], aborted: bool) -> bool:
        """Run one call; return True if it was cancelled (later calls are then not dispatched)."""
        cid = call["id"]
        base = {**ts, "callId": cid}
        if aborted:
            self._result(
                base, "Error: tool call aborted before dispatch", "ABORTED_BEFORE_DISPATCH"
            )
            return True
        if self.rng.random() < 0.2:
            aid = self._id("ap")
            self.emit("approval/asked", {**ts, "id": aid, "callId": cid, "toolName": call["name"]})
            outcome = self.rng.choice(("allowed", "allowed", "rejected", "cancelled"))
            self.emit("approval/decided", {**ts, "id": aid, "outcome": outcome})
            if outcome == "rejected":
                self._result(base, "Error: denied by the user", "DENIED")
                return False
            if outcome == "cancelled":
                self._result(
                    base, "Error: tool call aborted before dispatch", "ABORTED_BEFORE_DISPATCH"
                )
                return True
        self.emit("tool/call", {**base, "name": call["name"], "arguments": call["arguments"]})
        if call["name"] == "bash":
            self.emit(
                "tool/spawned",
                {
                    **base,
                    "pgid": self.rng.randint(100, 99999),
                    "identity": f"boot:{self.rng.randint(1, 10**6)}",
                },
            )
        for _ in range(self.rng.randint(0, 4)):
            self.emit(
                "tool/output",
                {
                    **base,
                    "stream": self.rng.choice(("stdout", "stderr")),
                    "text": self.text(5) + "\n",
                },
            )
        roll = self.rng.random()
        if roll < 0.1:
            self._result(base, "Error: tool call aborted", "ABORTED")
            return True
        if roll < 0.2:
            self._result(base, "exit status 1", "TOOL_FAILED")
        else:
            self.emit("tool/result", {**base, "isError": False, "content": self.text(4)})
        return False

    def _result(self, base: dict[str, Any], content: str, code: str) -> None:
        self.emit(
            "tool/result", {**base, "isError": True, "content": content, "error": {"code": code}}
        )


def generate_log(seed: int, turns: int) -> list[Event]:
    """A valid, balanced log of ``turns`` turns; the same seed gives the same log."""
    return LogGenerator(random.Random(seed)).session(turns)
