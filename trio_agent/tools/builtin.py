"""In-process tools: ``sleep`` and ``echo`` (no subprocess, nothing outside the turn's tasks).

They are the tools of the demo's scripted turns and of the runtime tests and benchmarks:
``sleep`` is the long-running tool a cancel lands in, ``echo`` streams output.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import trio

from .base import ToolCall, ToolContext, ToolOutcome

__all__ = ["EchoTool", "SleepTool"]

_TOOL_FAILED = "TOOL_FAILED"


def _failed(text: str) -> ToolOutcome:
    return ToolOutcome(content=text, is_error=True, error_code=_TOOL_FAILED)


class SleepTool:
    """``sleep``: arguments ``{"seconds": number >= 0}``; sleeps, cancellable at any moment."""

    name = "sleep"
    parallel = True
    description = "Wait the given number of seconds, then answer 'slept'."
    parameters: Mapping[str, Any] = {
        "type": "object",
        "properties": {"seconds": {"type": "number", "minimum": 0}},
        "required": ["seconds"],
    }

    async def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutcome:
        seconds = call.arguments.get("seconds", 0)
        if type(seconds) not in (int, float) or not math.isfinite(seconds) or seconds < 0:
            return _failed(f"sleep: 'seconds' must be a finite number >= 0, got {seconds!r}")
        try:
            await trio.sleep(seconds)
        except trio.Cancelled:
            ctx.abort_detail(f"sleep of {seconds:g}s was interrupted")
            raise
        return ToolOutcome(content=f"slept {seconds:g}s")


class EchoTool:
    """``echo``: arguments ``{"text": str}``; writes the text to stdout and returns it."""

    name = "echo"
    parallel = True
    description = "Write the given text to stdout and answer with it."
    parameters: Mapping[str, Any] = {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    }

    async def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutcome:
        text = call.arguments.get("text")
        if type(text) is not str:
            return _failed(f"echo: 'text' must be a string, got {text!r}")
        await trio.lowlevel.checkpoint()
        ctx.output("stdout", text)
        return ToolOutcome(content=text)
