"""``OpenAIChatModel``: an OpenAI-compatible Chat Completions endpoint, streamed (spec/models.md).

One adapter for OpenAI and the servers that copy its API (vLLM, llama.cpp's server,
llama-cpp-python, Ollama, LM Studio, LiteLLM, OpenRouter; spec/models.md §Compatibility)
``POST {base_url}/chat/completions`` with ``stream: true``, read as server-sent events. HTTP is
httpx (it runs on trio through anyio); the bounded reading is :mod:`trio_agent.models.http`
and the mapping both ways is the pure :mod:`trio_agent.models.openai_wire`.

Cancel closes the socket: the stream is an async generator whose ``finally`` closes the
response and the client, and the turn loop closes the generator (shielded, bounded) when the
turn is cancelled (spec/cancel.md K14), so no connection is left draining in the background.
Every failure ends the step with ``finish{error}`` and a one-line message; retrying is not
the adapter's job (a hook may do it).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import attrs

from .base import ModelRequest, StepContext
from .base_url import check_base_url
from .http import Limits, stream_answer
from .openai_wire import StreamAssembler, request_body

__all__ = ["OpenAIChatModel"]


class OpenAIChatModel:
    """Stream chunks from an OpenAI-compatible ``/chat/completions`` endpoint.

    ``api_key`` defaults to ``$OPENAI_API_KEY`` (sent as ``Authorization: Bearer``; none if
    unset, as local servers need none). ``timeout`` is the idle timeout: seconds without an
    event (``TIMEOUT`` when it runs out); ``limits`` holds it and every other bound
    (:class:`~trio_agent.models.http.Limits`, spec/models.md §Bounds). ``tool_choice`` is
    sent when tools are offered (``None``: not sent); ``include_usage`` asks for the usage
    event (``stream_options``).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        max_tokens: int | None = None,
        tool_choice: str | Mapping[str, Any] | None = "auto",
        include_usage: bool = True,
        limits: Limits | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        self.base_url = check_base_url(base_url)
        self.model = model
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self._headers = {"accept": "text/event-stream", **(headers or {})}
        if key:
            self._headers["authorization"] = f"Bearer {key}"
        limits = limits or Limits()
        if timeout is not None:
            limits = attrs.evolve(limits, idle=timeout)
        self.limits = limits
        self._max_tokens = max_tokens
        self._tool_choice = tool_choice
        self._include_usage = include_usage
        self._extra_body = dict(extra_body or {})

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def stream(self, request: ModelRequest, ctx: StepContext) -> AsyncIterator[Mapping[str, Any]]:
        """One model call: the chunks of ``POST /chat/completions`` (spec/models.md)."""
        body = request_body(
            request,
            self.model,
            max_tokens=self._max_tokens,
            tool_choice=self._tool_choice,
            include_usage=self._include_usage,
            extra_body=self._extra_body,
        )
        assembler = StreamAssembler(
            f"call-{ctx.turn}-{ctx.step}", max_tool_calls=self.limits.tool_calls
        )
        return stream_answer(
            self.url, body, self._headers, self.limits, assembler, step=request.step
        )
