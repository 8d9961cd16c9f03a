"""``ScriptedModel``: the deterministic model the demo and the tests run.

The script format is documented on :class:`ScriptedModel`, so ``help(ScriptedModel)`` shows
it; spec/cancel.md §The scripted model is the normative statement.
"""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Final

import trio

from .base import ModelRequest, StepContext, is_error_info

__all__ = ["DEFAULT_FINAL_TEXT", "ScriptedModel", "split_text"]

DEFAULT_FINAL_TEXT: Final = "Done."
_KEYS: Final = frozenset({"text", "tool_calls", "finish", "error", "chunk_delay"})
_WORD: Final = re.compile(r"\s*\S+\s*")


def split_text(text: str) -> list[str]:
    """The text-delta pieces of ``text`` (see :class:`ScriptedModel`); ``""`` gives none."""
    pieces = _WORD.findall(text)
    return pieces if pieces else ([text] if text else [])


def _bad(index: int, message: str) -> ValueError:
    return ValueError(f"script entry {index}: {message}")


def _check_entry(index: int, entry: object) -> dict[str, Any]:
    if not isinstance(entry, Mapping):
        raise _bad(index, f"must be an object, got {type(entry).__name__}")
    unknown = set(entry) - _KEYS
    if unknown:
        raise _bad(index, f"unknown key(s) {sorted(unknown)}; allowed: {sorted(_KEYS)}")
    if type(entry.get("text", "")) is not str:
        raise _bad(index, "text must be a string")
    calls = entry.get("tool_calls", [])
    if not isinstance(calls, list):
        raise _bad(index, "tool_calls must be a list")
    for n, call in enumerate(calls):
        if not isinstance(call, Mapping) or type(call.get("name")) is not str or not call["name"]:
            raise _bad(index, f"tool_calls[{n}] needs a non-empty string name")
        if type(call.get("arguments", {})) is not dict:
            raise _bad(index, f"tool_calls[{n}].arguments must be an object")
        if "id" in call and (type(call["id"]) is not str or not call["id"]):
            raise _bad(index, f"tool_calls[{n}].id must be a non-empty string")
        if set(call) - {"name", "arguments", "id"}:
            raise _bad(index, f"tool_calls[{n}] allows only name, arguments and id")
    if entry.get("finish", "stop") not in ("stop", "max-tokens"):
        raise _bad(index, 'finish must be "stop" or "max-tokens"')
    if "error" in entry:
        if not is_error_info(entry["error"]):
            raise _bad(index, "error must be {code: str, message: str}")
        if calls or "finish" in entry:
            raise _bad(index, "an error entry has no tool_calls and no finish")
    if not _is_delay(entry.get("chunk_delay", 0)):
        raise _bad(index, "chunk_delay must be a finite number >= 0")
    return dict(entry)


def _is_delay(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and value >= 0


class ScriptedModel:
    """Plays a script: no network, no randomness, the same chunks on every run.

    The script is plain JSON-able data so that ports can share it: a list with one entry per
    model call (one step), each an object with these keys, all optional:

    ``text`` (str)
        streamed as ``text-delta`` chunks, split after each word: every chunk is a run of
        non-space characters together with the whitespace around it
        (``re.findall(r"\\s*\\S+\\s*")``); whitespace-only text is one chunk.
    ``tool_calls`` (list of ``{"name": str, "arguments": object, "id"?: str}``)
        streamed after the text, one ``tool-call`` chunk each. Without ``id`` the call id is
        ``call-<turn>-<step>-<n>`` (n from 1), unique in the log because turn and step are.
    ``finish`` (``"stop"`` or ``"max-tokens"``)
        the finish reason; by default ``"tool-calls"`` when there are tool calls, else ``"stop"``.
    ``error`` (``{"code": str, "message": str}``)
        after the text, finish with ``{"type": "finish", "reason": "error", "error": ...}``
        instead (no tool calls are streamed); the turn ends ``error``.
    ``chunk_delay`` (number >= 0, seconds)
        ``trio.sleep(chunk_delay)`` before every chunk, the finish included. 0 is still a
        checkpoint, so a cancel is honoured between any two chunks. Entries without it use the
        model's ``chunk_delay`` argument (default 0).

    When the script runs out, every further call answers ``{"text": final_text}``.

    A turn that runs one bash command and then answers (the tool's result is the second
    call's input; the second entry is what the model says after it)::

        ScriptedModel([
            {"text": "Listing.", "tool_calls": [
                {"name": "bash", "arguments": {"command": "ls"}}]},
            {"text": "Here they are."},
        ])

    ``calls`` counts the calls made so far; an instance belongs to one agent. A bad script
    raises ``ValueError("script entry N: ...")`` here, not during the turn.
    """

    def __init__(
        self,
        script: Sequence[Mapping[str, Any]] = (),
        *,
        final_text: str = DEFAULT_FINAL_TEXT,
        chunk_delay: float = 0.0,
    ) -> None:
        self._script = [_check_entry(i, e) for i, e in enumerate(script)]
        self._final: dict[str, Any] = _check_entry(len(self._script), {"text": final_text})
        if not _is_delay(chunk_delay):
            raise ValueError("chunk_delay must be a finite number >= 0")
        self._default_delay = float(chunk_delay)
        self.calls = 0

    def entry(self, index: int) -> Mapping[str, Any]:
        """The entry played by call ``index`` (0-based)."""
        return self._script[index] if index < len(self._script) else self._final

    async def stream(
        self, request: ModelRequest, ctx: StepContext
    ) -> AsyncIterator[Mapping[str, Any]]:
        entry = self.entry(self.calls)
        self.calls += 1
        delay = float(entry.get("chunk_delay", self._default_delay))
        for piece in split_text(entry.get("text", "")):
            await trio.sleep(delay)
            yield {"type": "text-delta", "text": piece}
        if "error" in entry:
            await trio.sleep(delay)
            error = entry["error"]
            yield {
                "type": "finish",
                "reason": "error",
                "error": {"code": error["code"], "message": error["message"]},
            }
            return
        calls = entry.get("tool_calls", [])
        for n, call in enumerate(calls, start=1):
            await trio.sleep(delay)
            yield {
                "type": "tool-call",
                "id": call.get("id") or f"call-{request.turn}-{request.step}-{n}",
                "name": call["name"],
                "arguments": dict(call.get("arguments", {})),
            }
        await trio.sleep(delay)
        default = "tool-calls" if calls else "stop"
        yield {"type": "finish", "reason": entry.get("finish", default)}
