"""Random valid logs from a small simulation of the turn loop (no trio, no I/O).

Used by the property tests of the log core, by the benchmarks, and by anyone who wants
realistic valid logs to test a port's checker or repair. The simulation makes the choices
a real loop makes (queue work, claim it, stream, call tools, approvals, cancel at any point)
and always emits a valid log; cutting its output anywhere gives a valid prefix.
"""

from __future__ import annotations

import random
from typing import Any

from ..log import build
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
        self.emit(*build.inbox_inserted(target, len(queue), message))
        queue.append(message)

    def drop_queued(self) -> None:
        for target in ("next-step", "next-turn"):
            queue = self.queues[target]
            if queue:
                self.emit(*build.inbox_cleared(target, len(queue)))
                queue.clear()

    def claim(self, include_turn_item: bool) -> list[dict[str, str]]:
        claimed: list[dict[str, str]] = []
        if self.queues["next-step"]:
            claimed += self.queues["next-step"]
            self.emit(*build.inbox_claimed("next-step", len(claimed)))
            self.queues["next-step"] = []
        if include_turn_item and self.queues["next-turn"]:
            claimed.append(self.queues["next-turn"].pop(0))
            self.emit(*build.inbox_claimed("next-turn", 1))
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
        self.emit(*build.turn_start(turn))
        claimed = self.claim(include_turn_item=True)
        roll = self.rng.random()
        if roll < 0.05:
            self.emit(*build.turn_end(turn, "blocked"))
            return
        if roll < 0.08 or not claimed:
            self.drop_queued()
            self.emit(*build.turn_end(turn, "aborted"))
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
        error = None
        if kind == "error":
            error = {"code": "MODEL_ERROR", "message": "the model failed"}
        self.emit(*build.turn_end(turn, kind, error))

    def run_step(self, turn: int, step: int, claimed: list[dict[str, str]]) -> str:
        self.emit(*build.step_start(turn, step))
        for message in claimed:
            self.emit(*build.user_message(turn, step, message))
        text = ""
        for _ in range(self.rng.randint(0, 6)):
            delta = self.text(self.rng.randint(1, 4)) + " "
            text += delta
            self.emit(*build.assistant_chunk(turn, step, {"type": "text-delta", "text": delta}))
        fate = self.rng.random()
        if fate < 0.1:  # cancelled mid-stream: keep the visible prefix
            if text:
                prefix = [{"type": "text", "text": text}]
                self.emit(
                    *build.assistant_message(turn, step, self._id("a"), prefix, interrupted=True)
                )
            self.emit(*build.step_end(turn, step))
            return "aborted"
        if fate < 0.13:
            self.emit(*build.step_end(turn, step))
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
            self.emit(*build.assistant_chunk(turn, step, call))
            calls.append(call)
        finish = "max-tokens" if self.rng.random() < 0.05 else ("tool-calls" if calls else "stop")
        self.emit(*build.assistant_chunk(turn, step, {"type": "finish", "reason": finish}))
        content: list[dict[str, Any]] = ([{"type": "text", "text": text}] if text else []) + calls
        self.emit(*build.assistant_message(turn, step, self._id("a"), content))
        aborted = False
        for call in calls:
            aborted = self.run_call(turn, step, call, aborted) or aborted
        self.emit(*build.step_end(turn, step))
        if aborted:
            return "aborted"
        if finish == "max-tokens":
            return "max-tokens"
        return "tools" if calls else "done"

    def run_call(self, turn: int, step: int, call: dict[str, Any], aborted: bool) -> bool:
        """Run one call; return True if it was cancelled (later calls are then not dispatched)."""
        cid = call["id"]
        if aborted:
            self._aborted_before_dispatch(turn, step, cid)
            return True
        if self.rng.random() < 0.2:
            aid = self._id("ap")
            self.emit(*build.approval_asked(turn, step, aid, cid, call["name"]))
            outcome = self.rng.choice(("allowed", "allowed", "rejected", "cancelled"))
            self.emit(*build.approval_decided(turn, step, aid, outcome))
            if outcome == "rejected":
                self._result(turn, step, cid, "Error: denied by the user", "DENIED")
                return False
            if outcome == "cancelled":
                self._aborted_before_dispatch(turn, step, cid)
                return True
        self.emit(*build.tool_call(turn, step, cid, call["name"], call["arguments"]))
        if call["name"] == "bash":
            pgid = self.rng.randint(100, 99999)
            identity = f"boot:{self.rng.randint(1, 10**6)}"
            self.emit(*build.tool_spawned(turn, step, cid, pgid, identity))
        for _ in range(self.rng.randint(0, 4)):
            stream = self.rng.choice(("stdout", "stderr"))
            self.emit(*build.tool_output(turn, step, cid, stream, self.text(5) + "\n"))
        roll = self.rng.random()
        if roll < 0.1:
            self._result(turn, step, cid, "Error: tool call aborted", "ABORTED")
            return True
        if roll < 0.2:
            self._result(turn, step, cid, "exit status 1", "TOOL_FAILED")
        else:
            self.emit(*build.tool_result(turn, step, cid, self.text(4), is_error=False, code=None))
        return False

    def _result(self, turn: int, step: int, call_id: str, content: str, code: str) -> None:
        self.emit(*build.tool_result(turn, step, call_id, content, is_error=True, code=code))

    def _aborted_before_dispatch(self, turn: int, step: int, call_id: str) -> None:
        """The result of a call never dispatched (an aborted step, a cancelled approval)."""
        self._result(
            turn,
            step,
            call_id,
            "Error: tool call aborted before dispatch",
            "ABORTED_BEFORE_DISPATCH",
        )


def generate_log(seed: int, turns: int) -> list[Event]:
    """A valid, balanced log of ``turns`` turns; the same seed gives the same log."""
    return LogGenerator(random.Random(seed)).session(turns)
