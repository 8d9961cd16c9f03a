"""``AnthropicModel``: Anthropic's Messages API, streamed (spec/models.md §AnthropicModel).

``POST {base_url}/messages`` with ``stream: true``, read as server-sent events through the
same bounded reader as :class:`~trio_agent.models.openai.OpenAIChatModel`
(:mod:`trio_agent.models.http`), mapped by the pure :mod:`trio_agent.models.anthropic_wire`.
The same Model contract, error codes, bounds and cancel: the turn loop closes the stream,
which closes the response and the connection.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import attrs

from .anthropic_wire import StreamAssembler, request_body
from .base import ModelRequest, StepContext
from .base_url import check_base_url
from .http import Limits, stream_answer

__all__ = ["ANTHROPIC_VERSION", "AnthropicModel"]

#: The ``anthropic-version`` header sent.
ANTHROPIC_VERSION = "2023-06-01"


class AnthropicModel:
    """Stream chunks from Anthropic's ``/messages`` endpoint (or a server that copies it).

    ``base_url`` is the API root with its version, e.g. ``https://api.anthropic.com/v1``.
    ``api_key`` defaults to ``$ANTHROPIC_API_KEY`` (sent as ``x-api-key``). ``max_tokens``
    is required by the API (default 4096). ``tool_choice`` (default ``{"type": "auto"}``)
    is sent when tools are offered; ``timeout`` replaces ``limits.idle`` (spec/models.md
    §Bounds).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        max_tokens: int = 4096,
        tool_choice: Mapping[str, Any] | None = None,
        limits: Limits | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        self.base_url = check_base_url(base_url)
        self.model = model
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        self._headers = {
            "accept": "text/event-stream",
            "anthropic-version": ANTHROPIC_VERSION,
            **(headers or {}),
        }
        if key:
            self._headers["x-api-key"] = key
        limits = limits or Limits()
        if timeout is not None:
            limits = attrs.evolve(limits, idle=timeout)
        self.limits = limits
        self._max_tokens = max_tokens
        self._tool_choice = dict(tool_choice) if tool_choice is not None else {"type": "auto"}
        self._extra_body = dict(extra_body or {})

    @property
    def url(self) -> str:
        return f"{self.base_url}/messages"

    def stream(self, request: ModelRequest, ctx: StepContext) -> AsyncIterator[Mapping[str, Any]]:
        """One model call: the chunks of ``POST /messages`` (spec/models.md §AnthropicModel)."""
        body = request_body(
            request,
            self.model,
            max_tokens=self._max_tokens,
            tool_choice=self._tool_choice,
            extra_body=self._extra_body,
        )
        assembler = StreamAssembler(
            f"call-{ctx.turn}-{ctx.step}", max_tool_calls=self.limits.tool_calls
        )
        return stream_answer(
            self.url, body, self._headers, self.limits, assembler, step=request.step
        )
