"""What the harness's model does at each step: a small menu of scripted answers (pure, no trio).

The state machine draws a *plan*, a list of menu names; the model of turn *t*, step *s* plays
``plan_entry(plan, t, s)``, a :class:`~trio_agent.models.ScriptedModel` script entry. The
choice depends only on the turn and step numbers, so the world (which plays it) and the
reference model (which predicts how the turn must end) agree without talking to each other,
also across crashes and reopens (turn numbers continue over the whole log).

Tools the menu uses, as the world provides them:

``sleep``
    the real :class:`~trio_agent.tools.builtin.SleepTool` (parallel); it progresses only
    when the harness advances virtual time.
``job``
    a non-parallel tool whose body writes one ``tool/output`` line and then waits until the
    harness finishes or fails it. With ``{"ask": true}`` its call waits for an approval first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = [
    "CHUNK_DELAY",
    "FINAL_ENTRY",
    "MENU",
    "MENU_NAMES",
    "PARALLEL_TOOLS",
    "entry_calls",
    "entry_kind",
    "expected_chunks",
    "job_done_text",
    "job_failed_text",
    "plan_entry",
    "unstarted_text",
]

#: Virtual seconds the scripted model sleeps before each chunk.
CHUNK_DELAY: Final = 1.0

#: The answers the model can give at a step.
MENU: Final[Mapping[str, Mapping[str, Any]]] = {
    "talk": {"text": "all good"},
    "sleep": {"text": "waiting", "tool_calls": [{"name": "sleep", "arguments": {"seconds": 2}}]},
    "job": {"text": "running job", "tool_calls": [{"name": "job", "arguments": {}}]},
    "ask": {"text": "may I", "tool_calls": [{"name": "job", "arguments": {"ask": True}}]},
    "pair": {
        "text": "two things",
        "tool_calls": [
            {"name": "sleep", "arguments": {"seconds": 1}},
            {"name": "job", "arguments": {}},
        ],
    },
    "cut": {"text": "cut off", "finish": "max-tokens"},
    "fail": {"text": "oh no", "error": {"code": "OVERLOADED", "message": "model overloaded"}},
    # Two parallel sleeps, the later-requested one shorter: it finishes first, and its result
    # must wait for the earlier call's (K16's request order).
    "race": {
        "text": "two naps",
        "tool_calls": [
            {"name": "sleep", "arguments": {"seconds": 2}},
            {"name": "sleep", "arguments": {"seconds": 1}},
        ],
    },
}
MENU_NAMES: Final = tuple(MENU)
#: The world's tools whose calls may overlap (spec/cancel.md K15): ``sleep``; ``job`` is not.
PARALLEL_TOOLS: Final = frozenset({"sleep"})


def job_done_text(call_id: str) -> str:
    """The result of a ``job`` call the driver finished (spec/harness.md §The scripted world)."""
    return f"job {call_id} done"


def job_failed_text(call_id: str) -> str:
    """The result of a ``job`` call the driver failed: the runtime's failure text (K18) around
    the body's ``RuntimeError`` (spec/harness.md §The scripted world)."""
    return f"The job call failed: RuntimeError: job {call_id} failed"


def unstarted_text(name: str) -> str:
    """The result of a call cancelled in its dispatch flush, after its ``tool/call`` was
    written, before its body started (K17; spec/harness.md §The scripted world)."""
    return (
        f"The {name} call was cancelled after it was dispatched but before its body started; "
        "nothing ran."
    )


#: Played from step 3 on, so that every turn ends after a bounded number of steps.
FINAL_ENTRY: Final[Mapping[str, Any]] = {"text": "wrapping up"}


def plan_entry(plan: Sequence[str], turn: int, step: int) -> Mapping[str, Any]:
    """The script entry the model plays at ``turn``/``step`` (both from 1)."""
    if step > 2 or not plan:
        return FINAL_ENTRY
    return MENU[plan[(turn - 1 + step - 1) % len(plan)]]


def entry_calls(entry: Mapping[str, Any]) -> int:
    """How many calls the step requests (a ``max-tokens`` answer's calls are dropped)."""
    if entry.get("finish") == "max-tokens" or "error" in entry:
        return 0
    return len(entry.get("tool_calls", ()))


def entry_kind(entry: Mapping[str, Any]) -> str | None:
    """How the step ends the turn, as the loop decides it (spec/cancel.md K12, K14):
    ``"error"``, ``"max-tokens"``, ``"completed"``, or ``None`` when the model called tools
    (a follow-up step is owed)."""
    if "error" in entry:
        return "error"
    if entry.get("finish") == "max-tokens":
        return "max-tokens"
    return None if entry_calls(entry) else "completed"


_WORD: Final = re.compile(r"\s*\S+\s*")


def expected_chunks(entry: Mapping[str, Any], turn: int, step: int) -> list[dict[str, Any]]:
    """The chunks the scripted model streams for ``entry`` at ``turn``/``step``, in order,
    written from spec/cancel.md §The scripted model: one ``text-delta`` per word
    (``\\s*\\S+\\s*``; whitespace-only text is one chunk), then either the ``error`` finish or
    one ``tool-call`` per call (id ``call-<turn>-<step>-<n>``) and the ``finish`` chunk. A
    step that is not cancelled logs every one of them (K14); a cancelled one a prefix."""
    text = entry.get("text", "")
    words = _WORD.findall(text) if text.strip() else ([text] if text else [])
    chunks: list[dict[str, Any]] = [{"type": "text-delta", "text": w} for w in words]
    if "error" in entry:
        error = entry["error"]
        chunks.append(
            {
                "type": "finish",
                "reason": "error",
                "error": {"code": error["code"], "message": error["message"]},
            }
        )
        return chunks
    calls = entry.get("tool_calls", ())
    for n, call in enumerate(calls, start=1):
        chunks.append(
            {
                "type": "tool-call",
                "id": call.get("id") or f"call-{turn}-{step}-{n}",
                "name": call["name"],
                "arguments": dict(call.get("arguments", {})),
            }
        )
    chunks.append(
        {"type": "finish", "reason": entry.get("finish", "tool-calls" if calls else "stop")}
    )
    return chunks
