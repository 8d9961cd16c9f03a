"""The OpenAI-compatible Chat Completions wire format, both ways (spec/models.md). Pure.

:func:`request_body` maps a :class:`~trio_agent.models.base.ModelRequest` to the JSON body of
``POST /chat/completions`` with ``stream: true``; :class:`StreamAssembler` turns the data of
each server-sent event into the model protocol's chunks. Provider payloads are attrs classes
structured by cattrs, so a malformed event is refused with the field named (a provider
error's ``code`` excepted: it is shown as sent, see :class:`ProviderError`). No trio, no I/O:
:mod:`trio_agent.models.openai` drives this over HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs
import cattrs
import orjson

from ..boundary import errors, strict_converter
from .base import ModelError, ModelRequest
from .sse import SSEEvent

__all__ = ["FINISH_REASONS", "StreamAssembler", "provider_ids", "request_body"]

#: ``finish_reason`` → the chunk protocol's ``finish.reason`` (spec/models.md §OpenAIChatModel).
FINISH_REASONS: Final = {"stop": "stop", "tool_calls": "tool-calls", "length": "max-tokens"}


def provider_ids(blocks: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Our call id → the id to send the provider for the ``tool-call`` blocks of one message:
    the provider's own (``providerId``) when it gave one that no other block of the message
    shares, else ours (spec/models.md §Call ids)."""
    theirs = [b.get("providerId") for b in blocks]
    counts: dict[object, int] = {}
    for pid in theirs:
        counts[pid] = counts.get(pid, 0) + 1
    return {
        b["id"]: pid if type(pid) is str and pid and counts[pid] == 1 else b["id"]
        for b, pid in zip(blocks, theirs, strict=True)
    }


def request_body(
    request: ModelRequest,
    model: str,
    *,
    max_tokens: int | None = None,
    tool_choice: str | Mapping[str, Any] | None = "auto",
    include_usage: bool = True,
    extra_body: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body for ``request`` (spec/models.md §Request)."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    sent_ids: dict[str, str] = {}  # our call id -> the id the provider was shown
    for m in request.messages:
        role = m["role"]
        if role == "user":
            messages.append({"role": "user", "content": m["text"]})
        elif role == "assistant":
            text = "".join(b["text"] for b in m["content"] if b["type"] == "text")
            blocks = [b for b in m["content"] if b["type"] == "tool-call"]
            ids = provider_ids(blocks)
            sent_ids.update(ids)
            calls = [
                {
                    "id": ids[b["id"]],
                    "type": "function",
                    "function": {
                        "name": b["name"],
                        "arguments": orjson.dumps(b["arguments"]).decode(),
                    },
                }
                for b in blocks
            ]
            # "" beside tool calls, never null: servers refuse null (and a missing content).
            out: dict[str, Any] = {"role": "assistant", "content": text}
            if calls:
                out["tool_calls"] = calls
            messages.append(out)
        elif role == "tool":
            call_id = sent_ids.get(m["callId"], m["callId"])
            messages.append({"role": "tool", "tool_call_id": call_id, "content": m["content"]})
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": True}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
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
    if "tools" in body and tool_choice is not None:
        body["tool_choice"] = tool_choice
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    body.update(extra_body or {})
    return body


# -- the response: one SSE data payload at a time ---------------------------------------------


@attrs.frozen
class FunctionDelta:
    name: str | None = None
    #: JSON text, the OpenAI way; some gateways send the object itself (checked when used).
    arguments: Any = None


@attrs.frozen
class ToolCallDelta:
    #: Absent from some servers' fragments (each then carries a whole call).
    index: int | None = None
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

    Tool-call fragments are assembled per call (id and name in the first fragment,
    ``arguments`` split across many; an id or name repeated in a later fragment is taken
    once) and emitted as one ``tool-call`` chunk when complete: when another call starts (see
    :meth:`_starts_call`), or at the finish reason. Each gets the session-unique id
    ``<id_prefix>-<n>`` (n from 1) and keeps the provider's id as ``providerId``. The
    ``finish`` chunk waits for ``[DONE]`` (or the end of the body), so a usage event sent
    after the finish reason is still streamed. Raises :class:`ModelError` (``BAD_STREAM``,
    ``PROVIDER_ERROR``, ``INCOMPLETE``, ``LIMIT``) for what cannot be streamed on. Each
    event costs time in proportion to its own size: 10,000 calls are linear.
    """

    def __init__(self, id_prefix: str, *, max_tool_calls: int = 64) -> None:
        self._id_prefix = id_prefix
        self._max_tool_calls = max_tool_calls
        self._calls: dict[int, _Call] = {}  # in order of arrival
        self._open: int | None = None  # the key of the call whose fragments are arriving
        self._open_index: int | None = None  # its provider index, if it had one
        self._seen: set[int] = set()  # provider indexes seen
        self._emitted = 0
        #: The finish reason arrived (its chunk waits for the end); and the end arrived.
        self.finish_reason: str | None = None
        self.done = False

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    def feed_event(self, event: SSEEvent) -> list[dict[str, Any]]:
        """The chunks of one server-sent event (only its data counts here)."""
        return self.feed(event.data)

    def feed(self, data: str) -> list[dict[str, Any]]:
        if self.done:
            return []
        if data.strip() == "[DONE]":
            self.done = True
            if self.finish_reason is None:
                raise ModelError(
                    "INCOMPLETE", "[DONE] arrived before any finish_reason: the answer was cut"
                )
            return [{"type": "finish", "reason": self.finish_reason}]
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
        if raw.get("object") == "error":  # an error object sent bare, as older servers do
            bare = ProviderError(
                message=raw["message"] if type(raw.get("message")) is str else "",
                code=raw.get("code", raw.get("type")),
            )
            raise ModelError("PROVIDER_ERROR", _provider_error(bare))
        out: list[dict[str, Any]] = []
        for choice in event.choices[:1]:  # one completion is asked for (n = 1)
            if self.finish_reason is not None:
                continue  # after the finish reason only usage counts
            if choice.delta.content:
                out.append({"type": "text-delta", "text": choice.delta.content})
            for fragment in choice.delta.tool_calls or ():
                out.extend(self._fragment(fragment))
            if choice.finish_reason is not None:
                reason = choice.finish_reason
                if reason == "content_filter":
                    raise ModelError("PROVIDER_ERROR", "the provider filtered the answer")
                out.extend(self._close_open())
                reason = FINISH_REASONS.get(reason, "stop")
                if reason == "stop" and self._emitted:
                    reason = "tool-calls"  # some servers say stop after calls
                self.finish_reason = reason
        if event.usage is not None:  # the provider's keys, under our type: never another chunk
            out.append({"type": "usage", **{k: v for k, v in event.usage.items() if k != "type"}})
        return out

    def end(self) -> list[dict[str, Any]]:
        """The body ended. After a finish reason, the ``finish`` chunk (when ``[DONE]`` did
        not already bring it); without one the answer was cut (``INCOMPLETE``)."""
        if self.done:
            return []
        if self.finish_reason is None:
            raise ModelError("INCOMPLETE", "the response ended before the answer finished")
        self.done = True
        return [{"type": "finish", "reason": self.finish_reason}]

    def _fragment(self, fragment: ToolCallDelta) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self._starts_call(fragment):
            index = fragment.index
            if index is not None and index != self._open_index and index in self._seen:
                raise ModelError(
                    "BAD_STREAM",
                    f"tool call {fragment.index} continued after another call started",
                )
            out.extend(self._close_open())  # another call starts: the open one is complete
            if len(self._calls) >= self._max_tool_calls:
                raise ModelError(
                    "LIMIT",
                    f"more than {self._max_tool_calls} tool calls in one answer "
                    "(Limits.tool_calls)",
                )
            key = len(self._calls)
            self._calls[key] = _Call()
            self._open = key
            self._open_index = fragment.index
            if fragment.index is not None:
                self._seen.add(fragment.index)
        assert self._open is not None
        call = self._calls[self._open]
        if fragment.id and call.id is None:
            call.id = fragment.id  # a repeated id (some servers send it each time) is ignored
        function = fragment.function
        if function is not None:
            if function.name and function.name != call.name:
                # Some servers repeat the whole name in every fragment: taken once.
                call.name = (call.name or "") + function.name
            arguments = function.arguments
            if isinstance(arguments, dict):
                arguments = orjson.dumps(arguments).decode()  # the object itself, sent as is
            elif arguments is not None and type(arguments) is not str:
                raise ModelError(
                    "BAD_STREAM", f"tool call arguments must be JSON text, got {arguments!r:.80}"
                )
            if arguments:
                call.arguments.append(arguments)
        return out

    def _starts_call(self, fragment: ToolCallDelta) -> bool:
        """Does ``fragment`` begin a new call? When no call is open; when its ``index``
        differs from the open call's; when it carries an id other than the open call's
        (some gateways give every call index 0); and, without an index, when it names a
        function while the open call already has arguments."""
        if self._open is None:
            return True
        call = self._calls[self._open]
        if fragment.index is not None and fragment.index != self._open_index:
            return True
        if fragment.id and call.id and fragment.id != call.id:
            return True
        function = fragment.function
        named = function is not None and bool(function.name)
        return fragment.index is None and named and bool(call.arguments) and not fragment.id

    def _close_open(self) -> list[dict[str, Any]]:
        if self._open is None:
            return []
        index, self._open = self._open, None
        return [self._complete(index)]

    def _complete(self, index: int) -> dict[str, Any]:
        call = self._calls[index]
        if not call.name:
            raise ModelError("BAD_STREAM", f"tool call {index} has no function name")
        text = "".join(call.arguments).strip() or "{}"
        call.arguments = []  # emitted: its text is not kept twice
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
        self._emitted += 1
        chunk = {
            "type": "tool-call",
            "id": f"{self._id_prefix}-{self._emitted}",
            "name": call.name,
            "arguments": arguments,
        }
        if call.id:
            chunk["providerId"] = call.id
        return chunk
