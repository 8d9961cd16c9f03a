"""The OpenAI-compatible Chat Completions wire format, both ways (spec/models.md). Pure.

:func:`request_body` maps a :class:`~trio_agent.models.base.ModelRequest` to the JSON body of
``POST /chat/completions`` with ``stream: true``; :class:`StreamAssembler` turns the data of
each server-sent event into the model protocol's chunks. Provider payloads are attrs classes
structured by cattrs, so a malformed event is refused with the field named (a provider
error's ``code`` excepted: it is shown as sent, see :class:`ProviderError`). No trio, no I/O:
:mod:`trio_agent.models.openai` drives this over HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs
import cattrs
import orjson

from ..boundary import errors, strict_converter
from .base import ModelError, ModelRequest

__all__ = ["FINISH_REASONS", "StreamAssembler", "request_body"]

#: ``finish_reason`` → the chunk protocol's ``finish.reason`` (spec/models.md §OpenAIChatModel).
FINISH_REASONS: Final = {"stop": "stop", "tool_calls": "tool-calls", "length": "max-tokens"}


def request_body(
    request: ModelRequest,
    model: str,
    *,
    max_tokens: int | None = None,
    extra_body: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body for ``request`` (spec/models.md §Request)."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for m in request.messages:
        role = m["role"]
        if role == "user":
            messages.append({"role": "user", "content": m["text"]})
        elif role == "assistant":
            text = "".join(b["text"] for b in m["content"] if b["type"] == "text")
            calls = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {
                        "name": b["name"],
                        "arguments": orjson.dumps(b["arguments"]).decode(),
                    },
                }
                for b in m["content"]
                if b["type"] == "tool-call"
            ]
            content = text if text or not calls else None  # null beside tool calls
            out: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:
                out["tool_calls"] = calls
            messages.append(out)
        elif role == "tool":
            messages.append({"role": "tool", "tool_call_id": m["callId"], "content": m["content"]})
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": True}
    if request.tool_specs:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": spec["name"],
                    "description": spec.get("description", ""),
                    "parameters": spec.get("parameters", {"type": "object"}),
                },
            }
            for spec in request.tool_specs
        ]
    elif request.tools:
        body["tools"] = [
            {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
            for name in request.tools
        ]
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    body.update(extra_body or {})
    return body


# -- the response: one SSE data payload at a time ---------------------------------------------


@attrs.frozen
class FunctionDelta:
    name: str | None = None
    arguments: str | None = None


@attrs.frozen
class ToolCallDelta:
    index: int
    id: str | None = None
    type: str | None = None
    function: FunctionDelta | None = None


@attrs.frozen
class Delta:
    content: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


@attrs.frozen
class Choice:
    index: int = 0
    delta: Delta = attrs.Factory(Delta)
    finish_reason: str | None = None


@attrs.frozen
class ProviderError:
    """The ``error`` object of an event. ``code`` is any JSON value, kept as the provider sent
    it: it is only ever shown (:func:`_provider_error`), never acted on, so no shape of it
    is refused. A refusal would be a ``BAD_STREAM`` about the code in place of the
    provider's error, and its message, the one thing the user needs, would be lost."""

    message: str = ""
    type: str | None = None
    code: Any = None


@attrs.frozen
class StreamEvent:
    """One ``data:`` payload of the stream; unknown keys are the provider's own."""

    choices: list[Choice] = attrs.Factory(list)
    usage: dict[str, Any] | None = None
    error: ProviderError | None = None


#: Strict like every boundary (no value is coerced), but a provider's own keys are ignored,
#: and a provider error's ``code`` is taken as it is (:class:`ProviderError`).
_CONVERTER: Final = strict_converter(forbid_extra_keys=False)


def _provider_error(error: ProviderError) -> str:
    """The one-line message of a provider's error: its message, then its code as sent (a
    string as it is, any other JSON value as compact JSON: ``boom ({"x":1})``)."""
    message = " ".join((error.message or "the provider failed").split())
    if error.code is None:
        return message
    code = error.code if type(error.code) is str else orjson.dumps(error.code).decode()
    return f"{message} ({' '.join(code.split())})"


@attrs.define
class _Call:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = attrs.Factory(list)


class StreamAssembler:
    """Feed it each SSE ``data`` string; it returns the chunks to stream (spec/models.md).

    Tool-call fragments are assembled per ``index`` (id and name in the first fragment,
    ``arguments`` split across many) and emitted as one ``tool-call`` chunk when complete:
    when a fragment of a later index starts, or at the finish. Raises :class:`ModelError`
    (``BAD_STREAM``, ``PROVIDER_ERROR``) for what cannot be streamed on.
    """

    def __init__(self, id_prefix: str) -> None:
        self._id_prefix = id_prefix
        self._calls: dict[int, _Call] = {}
        self._emitted: set[int] = set()
        self.finished = False
        self.done = False

    def feed(self, data: str) -> list[dict[str, Any]]:
        if self.done:
            return []
        if data.strip() == "[DONE]":
            self.done = True
            return self._finish("stop") if not self.finished else []
        try:
            raw = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise ModelError("BAD_STREAM", f"an event that is not JSON: {data[:120]!r}") from None
        if not isinstance(raw, dict):
            raise ModelError("BAD_STREAM", f"an event that is not a JSON object: {data[:120]!r}")
        try:
            event = _CONVERTER.structure(raw, StreamEvent)
        except cattrs.BaseValidationError as exc:
            detail = "; ".join(f"{why} @ {path}" for path, why in errors(exc, "event"))
            raise ModelError("BAD_STREAM", f"a malformed event: {detail}") from None
        if event.error is not None:
            raise ModelError("PROVIDER_ERROR", _provider_error(event.error))
        out: list[dict[str, Any]] = []
        for choice in event.choices[:1]:  # one completion is asked for (n = 1)
            if choice.delta.content:
                out.append({"type": "text-delta", "text": choice.delta.content})
            for fragment in choice.delta.tool_calls or ():
                out.extend(self._fragment(fragment))
            if choice.finish_reason is not None and not self.finished:
                reason = choice.finish_reason
                if reason == "content_filter":
                    raise ModelError("PROVIDER_ERROR", "the provider filtered the answer")
                out.extend(self._finish(FINISH_REASONS.get(reason, "stop")))
        if event.usage is not None:  # the provider's keys, under our type: never another chunk
            out.append({"type": "usage", **{k: v for k, v in event.usage.items() if k != "type"}})
        return out

    def end(self) -> list[dict[str, Any]]:
        """The stream ended (end of the body). Without ``[DONE]`` or a finish it was cut."""
        if not self.finished:
            raise ModelError("CONNECTION", "the connection closed before the answer finished")
        return []

    def _fragment(self, fragment: ToolCallDelta) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if fragment.index not in self._calls:
            # A later index starts: every earlier call is complete.
            for index in sorted(self._calls):
                if index < fragment.index and index not in self._emitted:
                    out.append(self._complete(index))
            self._calls[fragment.index] = _Call()
        call = self._calls[fragment.index]
        if fragment.id:
            call.id = fragment.id
        if fragment.function is not None:
            if fragment.function.name:
                call.name = (call.name or "") + fragment.function.name
            if fragment.function.arguments:
                call.arguments.append(fragment.function.arguments)
        return out

    def _complete(self, index: int) -> dict[str, Any]:
        self._emitted.add(index)
        call = self._calls[index]
        if not call.name:
            raise ModelError("BAD_STREAM", f"tool call {index} has no function name")
        text = "".join(call.arguments).strip() or "{}"
        try:
            arguments = orjson.loads(text)
        except orjson.JSONDecodeError:
            raise ModelError(
                "BAD_STREAM", f"tool call {call.name!r}: arguments are not JSON: {text[:80]!r}"
            ) from None
        if not isinstance(arguments, dict):
            raise ModelError(
                "BAD_STREAM", f"tool call {call.name!r}: arguments are not a JSON object"
            )
        call_id = call.id or f"{self._id_prefix}-{index}"
        return {"type": "tool-call", "id": call_id, "name": call.name, "arguments": arguments}

    def _finish(self, reason: str) -> list[dict[str, Any]]:
        self.finished = True
        out = [self._complete(i) for i in sorted(self._calls) if i not in self._emitted]
        if reason == "stop" and out:
            reason = "tool-calls"  # some servers say stop after calls
        return [*out, {"type": "finish", "reason": reason}]
