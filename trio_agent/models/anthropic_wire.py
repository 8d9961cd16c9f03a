"""Anthropic's Messages API wire format, both ways (spec/models.md §AnthropicModel). Pure.

:func:`request_body` maps a :class:`~trio_agent.models.base.ModelRequest` to the JSON body of
``POST /messages`` with ``stream: true``; :class:`StreamAssembler` turns each server-sent
event (``message_start``, ``content_block_start``/``delta``/``stop``, ``message_delta``,
``message_stop``, ``ping``, ``error``) into the model protocol's chunks. Events are attrs
classes structured by cattrs, so a malformed one is refused with the field named. No trio,
no I/O: :mod:`trio_agent.models.anthropic` drives this over HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs
import cattrs
import orjson

from ..boundary import errors, strict_converter
from .base import ModelError, ModelRequest
from .openai_wire import provider_ids
from .sse import SSEEvent

__all__ = ["STOP_REASONS", "StreamAssembler", "request_body"]

#: ``stop_reason`` → the chunk protocol's ``finish.reason`` (``refusal`` is an error).
STOP_REASONS: Final = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool-calls",
    "max_tokens": "max-tokens",
    "model_context_window_exceeded": "max-tokens",
}


def request_body(
    request: ModelRequest,
    model: str,
    *,
    max_tokens: int,
    tool_choice: Mapping[str, Any] | None = None,
    extra_body: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body for ``request`` (spec/models.md §AnthropicModel). Consecutive messages
    of one role are merged (tool results and a steered-in user text share one user message,
    the results first), and empty text blocks are left out, as the API requires."""
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    sent_ids: dict[str, str] = {}
    for m in request.messages:
        role = m["role"]
        if role == "user":
            add("user", [{"type": "text", "text": m["text"]}] if m["text"] else [])
        elif role == "assistant":
            calls = [b for b in m["content"] if b["type"] == "tool-call"]
            ids = provider_ids(calls)
            sent_ids.update(ids)
            blocks: list[dict[str, Any]] = []
            for b in m["content"]:
                if b["type"] == "text" and b["text"]:
                    text = b["text"].rstrip() if m.get("interrupted") else b["text"]
                    if text:
                        blocks.append({"type": "text", "text": text})
                elif b["type"] == "tool-call":
                    blocks.append(
                        {"type": "tool_use", "id": ids[b["id"]], "name": b["name"],
                         "input": b["arguments"]}
                    )  # fmt: skip
            add("assistant", blocks)
        elif role == "tool":
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": sent_ids.get(m["callId"], m["callId"]),
                "content": m["content"] or "(no output)",
            }
            if m["isError"]:
                result["is_error"] = True
            add("user", [result])
    for turn in turns:  # tool results come first in a user message
        if turn["role"] == "user":
            turn["content"].sort(key=lambda b: b["type"] != "tool_result")
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "messages": turns,
        "stream": True,
    }
    if request.system:
        body["system"] = request.system
    specs = request.tool_specs or tuple(
        {"name": name, "parameters": {"type": "object"}} for name in request.tools
    )
    if specs:
        body["tools"] = [
            {
                "name": spec["name"],
                "description": spec.get("description", ""),
                "input_schema": spec.get("parameters", {"type": "object"}),
            }
            for spec in specs
        ]
        if tool_choice is not None:
            body["tool_choice"] = dict(tool_choice)
    body.update(extra_body or {})
    return body


# -- the response: one event at a time -------------------------------------------------------


@attrs.frozen
class ContentBlock:
    type: str
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: dict[str, Any] | None = None


@attrs.frozen
class BlockStart:
    index: int
    content_block: ContentBlock


@attrs.frozen
class Delta:
    type: str
    text: str | None = None
    partial_json: str | None = None


@attrs.frozen
class BlockDelta:
    index: int
    delta: Delta


@attrs.frozen
class BlockStop:
    index: int


@attrs.frozen
class MessageDeltaBody:
    stop_reason: str | None = None


@attrs.frozen
class MessageDelta:
    delta: MessageDeltaBody = attrs.Factory(MessageDeltaBody)
    usage: dict[str, Any] | None = None


@attrs.frozen
class StartedMessage:
    usage: dict[str, Any] | None = None


@attrs.frozen
class MessageStart:
    message: StartedMessage = attrs.Factory(StartedMessage)


@attrs.frozen
class ProviderError:
    """The ``error`` of an ``error`` event; its ``type`` is shown as sent, never refused
    (as for the OpenAI adapter's error ``code``)."""

    message: str = ""
    type: Any = None


@attrs.frozen
class ErrorEvent:
    error: ProviderError = attrs.Factory(ProviderError)


_SHAPES: Final[Mapping[str, type]] = {
    "message_start": MessageStart,
    "content_block_start": BlockStart,
    "content_block_delta": BlockDelta,
    "content_block_stop": BlockStop,
    "message_delta": MessageDelta,
    "error": ErrorEvent,
}

_CONVERTER: Final = strict_converter(forbid_extra_keys=False)


@attrs.define
class _Call:
    id: str | None
    name: str
    start_input: dict[str, Any] | None
    json: list[str] = attrs.Factory(list)


class StreamAssembler:
    """Feed it each event (its name and data); it returns the chunks to stream.

    Text deltas stream as they come; a ``tool_use`` block is assembled from its
    ``input_json_delta`` pieces and emitted at its ``content_block_stop`` with the
    session-unique id ``<id_prefix>-<n>`` and the provider's id as ``providerId``. The
    ``finish`` chunk comes at ``message_stop`` (or the end of the body after the stop
    reason). Other block types (thinking, ...) are ignored. Raises :class:`ModelError`
    (``BAD_STREAM``, ``PROVIDER_ERROR``, ``INCOMPLETE``, ``LIMIT``).
    """

    def __init__(self, id_prefix: str, *, max_tool_calls: int = 64) -> None:
        self._id_prefix = id_prefix
        self._max_tool_calls = max_tool_calls
        self._calls: dict[int, _Call] = {}
        self._started = 0
        self._emitted = 0
        self.finish_reason: str | None = None
        self.done = False

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    def feed_event(self, event: SSEEvent) -> list[dict[str, Any]]:
        """The chunks of one server-sent event, by its name and data."""
        return self.feed(event.event, event.data)

    def feed(self, name: str, data: str) -> list[dict[str, Any]]:
        if self.done or name == "ping":
            return []
        try:
            raw = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise ModelError("BAD_STREAM", f"an event that is not JSON: {data[:120]!r}") from None
        if not isinstance(raw, dict):
            raise ModelError("BAD_STREAM", f"an event that is not a JSON object: {data[:120]!r}")
        kind = raw.get("type", name)
        if kind == "ping":
            return []
        if kind == "message_stop":
            if self.finish_reason is None:
                raise ModelError("INCOMPLETE", "message_stop arrived before any stop_reason")
            self.done = True
            return [{"type": "finish", "reason": self.finish_reason}]
        shape = _SHAPES.get(kind) if isinstance(kind, str) else None
        if shape is None:
            return []  # an event type of a later API version: ignored
        try:
            event: Any = _CONVERTER.structure(raw, shape)
        except cattrs.BaseValidationError as exc:
            detail = "; ".join(f"{why} @ {path}" for path, why in errors(exc, kind))
            raise ModelError("BAD_STREAM", f"a malformed event: {detail}") from None
        if isinstance(event, ErrorEvent):
            raise ModelError("PROVIDER_ERROR", _provider_error(event.error))
        if isinstance(event, MessageStart):
            return _usage(event.message.usage)
        if isinstance(event, BlockStart):
            return self._start(event)
        if isinstance(event, BlockDelta):
            return self._delta(event)
        if isinstance(event, BlockStop):
            call = self._calls.pop(event.index, None)
            return [] if call is None else [self._complete(call)]
        assert isinstance(event, MessageDelta)
        out = _usage(event.usage)
        reason = event.delta.stop_reason
        if reason is not None and self.finish_reason is None:
            if reason == "refusal":
                raise ModelError("PROVIDER_ERROR", "the model refused to answer (refusal)")
            out = [self._complete(c) for c in self._calls.values()] + out
            self._calls.clear()
            self.finish_reason = STOP_REASONS.get(reason, "stop")
        return out

    def end(self) -> list[dict[str, Any]]:
        """The body ended: the ``finish`` chunk after a stop reason, else ``INCOMPLETE``."""
        if self.done:
            return []
        if self.finish_reason is None:
            raise ModelError("INCOMPLETE", "the response ended before the answer finished")
        self.done = True
        return [{"type": "finish", "reason": self.finish_reason}]

    def _start(self, event: BlockStart) -> list[dict[str, Any]]:
        block = event.content_block
        if block.type == "text":
            return [{"type": "text-delta", "text": block.text}] if block.text else []
        if block.type != "tool_use":
            return []
        if not block.name:
            raise ModelError("BAD_STREAM", f"tool_use block {event.index} has no name")
        self._started += 1
        if self._started > self._max_tool_calls:
            raise ModelError(
                "LIMIT",
                f"more than {self._max_tool_calls} tool calls in one answer (Limits.tool_calls)",
            )
        self._calls[event.index] = _Call(block.id, block.name, block.input)
        return []

    def _delta(self, event: BlockDelta) -> list[dict[str, Any]]:
        delta = event.delta
        if delta.type == "text_delta":
            if delta.text is None:
                raise ModelError("BAD_STREAM", "a text_delta without text")
            return [{"type": "text-delta", "text": delta.text}] if delta.text else []
        if delta.type == "input_json_delta":
            call = self._calls.get(event.index)
            if call is None:
                raise ModelError("BAD_STREAM", f"input_json_delta for no tool_use ({event.index})")
            if delta.partial_json:
                call.json.append(delta.partial_json)
        return []

    def _complete(self, call: _Call) -> dict[str, Any]:
        text = "".join(call.json).strip()
        if text:
            try:
                arguments = orjson.loads(text)
            except orjson.JSONDecodeError:
                raise ModelError(
                    "BAD_STREAM", f"tool call {call.name!r}: input is not JSON: {text[:80]!r}"
                ) from None
        else:
            arguments = call.start_input or {}
        if not isinstance(arguments, dict):
            raise ModelError("BAD_STREAM", f"tool call {call.name!r}: input is not a JSON object")
        self._emitted += 1
        chunk: dict[str, Any] = {
            "type": "tool-call",
            "id": f"{self._id_prefix}-{self._emitted}",
            "name": call.name,
            "arguments": arguments,
        }
        if call.id:
            chunk["providerId"] = call.id
        return chunk


def _usage(usage: dict[str, Any] | None) -> list[dict[str, Any]]:
    if usage is None:
        return []
    return [{"type": "usage", **{k: v for k, v in usage.items() if k != "type"}}]


def _provider_error(error: ProviderError) -> str:
    message = " ".join((error.message or "the provider failed").split())
    if error.type is None:
        return message
    kind = error.type if type(error.type) is str else orjson.dumps(error.type).decode()
    return f"{message} ({' '.join(kind.split())})"
