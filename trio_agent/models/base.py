"""The model protocol: a request built from the log in, an async iterator of chunks out.

A model is asked once per step. It streams chunks (JSON objects with a ``type``), the same
objects the loop appends as ``assistant/chunk`` events, one per chunk, as they arrive:

* ``{"type": "text-delta", "text": str}`` — visible text;
* ``{"type": "tool-call", "id": str, "name": str, "arguments": object}`` — one requested call,
  its ``id`` unique in the whole log (a call whose id is already used fails the turn with
  ``BAD_CHUNK``); an optional ``providerId`` (a non-empty str) keeps the provider's own id
  for the call, kept in the ``assistant/message`` block and sent back to the provider
  (spec/models.md §Call ids);
* ``{"type": "finish", "reason": "stop" | "tool-calls" | "max-tokens"}`` — the end; or
  ``{"type": "finish", "reason": "error", "error": {"code": str, "message": str}}`` for a
  provider failure (the turn then ends ``error`` with that code and message);
* any other ``type`` (usage, reasoning, ...) is logged and otherwise ignored.

The model must honour trio cancellation: a cancelled turn raises ``trio.Cancelled`` at the
model's next checkpoint and the loop finalizes what was visible (spec/cancel.md K14).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from ..cancel import ControllerView
from ..log.envelope import Event

__all__ = [
    "Model",
    "ModelError",
    "ModelRequest",
    "StepContext",
    "Transcript",
    "check_chunk",
    "is_error_info",
]


class StepContext(Protocol):
    """The turn context a model receives (the runtime's ``TurnContext`` satisfies it)."""

    @property
    def turn(self) -> int: ...

    @property
    def step(self) -> int: ...

    @property
    def controller(self) -> ControllerView: ...


@attrs.frozen(slots=True)
class ModelRequest:
    """One model call: the transcript derived from the log, plus what the seams added.

    ``messages`` are JSON-able dicts, in log order:
    ``{"role": "user", "id", "text", "source"}``,
    ``{"role": "assistant", "id", "content": [block, ...], "interrupted": bool}`` and
    ``{"role": "tool", "callId", "content", "isError", "code"}`` (``code`` may be ``None``).
    A tool message's ``content`` is what the call printed (its ``tool/output`` events, both
    streams in log order, at most :data:`TOOL_OUTPUT_LIMIT` characters with a marker saying how
    much was cut) followed by the result's own ``content`` (spec/models.md §Tool messages).
    """

    turn: int
    step: int
    system: str
    messages: Sequence[Mapping[str, Any]]
    tools: Sequence[str]
    #: ``{"name", "description", "parameters"}`` per tool, for models that advertise tools
    #: (spec/models.md §Tools); the scripted model ignores it.
    tool_specs: Sequence[Mapping[str, Any]] = ()


class Model(Protocol):
    """Anything that streams chunks for a request (see the module docstring)."""

    def stream(
        self, request: ModelRequest, ctx: StepContext
    ) -> AsyncIterator[Mapping[str, Any]]: ...


class ModelError(Exception):
    """A model call failed; the turn ends ``error{code, message}``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def _nonempty_str(value: object) -> bool:
    return type(value) is str and bool(value)


def is_error_info(value: object) -> bool:
    """True for ``{"code": str, "message": str}`` (the error of a failed model call)."""
    return (
        isinstance(value, Mapping)
        and type(value.get("code")) is str
        and type(value.get("message")) is str
    )


def check_chunk(chunk: object) -> Mapping[str, Any]:
    """Return ``chunk`` if it is a well-formed chunk, else raise :class:`ModelError`
    (code ``BAD_CHUNK``): a model that streams garbage fails its turn, not the session."""
    if not isinstance(chunk, Mapping) or not _nonempty_str(chunk.get("type")):
        raise ModelError("BAD_CHUNK", f"a chunk must be an object with a type, got {chunk!r}")
    kind = chunk["type"]
    if kind == "text-delta":
        if type(chunk.get("text")) is not str:
            raise ModelError("BAD_CHUNK", f"text-delta without a str text: {chunk!r}")
    elif kind == "tool-call":
        if not (_nonempty_str(chunk.get("id")) and _nonempty_str(chunk.get("name"))):
            raise ModelError("BAD_CHUNK", f"tool-call needs a non-empty id and name: {chunk!r}")
        if type(chunk.get("arguments", {})) is not dict:
            raise ModelError("BAD_CHUNK", f"tool-call arguments must be an object: {chunk!r}")
        if "providerId" in chunk and not _nonempty_str(chunk["providerId"]):
            raise ModelError("BAD_CHUNK", f"providerId must be a non-empty str: {chunk!r}")
    elif kind == "finish":
        if type(chunk.get("reason")) is not str:
            raise ModelError("BAD_CHUNK", f"finish without a str reason: {chunk!r}")
        if chunk["reason"] == "error" and not is_error_info(chunk.get("error")):
            raise ModelError(
                "BAD_CHUNK", f"an error finish needs error{{code, message}}: {chunk!r}"
            )
    return chunk


#: Characters of a call's output a model is shown, before the result (spec/models.md).
TOOL_OUTPUT_LIMIT = 16_000


class Transcript:
    """The conversation as a model sees it, derived incrementally from log events.

    Feed it the log (or each new suffix of it); :attr:`messages` is the list of request
    messages described on :class:`ModelRequest`. Pure: no trio, no I/O.
    """

    __slots__ = ("_cut", "_fed", "_output", "messages")

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self._fed = 0
        self._output: dict[str, list[str]] = {}  # call id -> output kept so far
        self._cut: dict[str, int] = {}  # call id -> characters of output not kept

    def feed(self, events: Iterable[Event]) -> None:
        for event in events:
            self._fed += 1
            data = event.data
            if event.type == "user/message":
                m = data["message"]
                self.messages.append(
                    {"role": "user", "id": m["id"], "text": m["text"], "source": m["source"]}
                )
            elif event.type == "assistant/message":
                self.messages.append(
                    {
                        "role": "assistant",
                        "id": data["message"]["id"],
                        "content": data["message"]["content"],
                        "interrupted": bool(data.get("interrupted", False)),
                    }
                )
            elif event.type == "tool/output":
                self._keep(data["callId"], data["text"])
            elif event.type == "tool/result":
                error = data.get("error")
                self.messages.append(
                    {
                        "role": "tool",
                        "callId": data["callId"],
                        "content": self._with_output(data["callId"], data["content"]),
                        "isError": data["isError"],
                        "code": None if error is None else error["code"],
                    }
                )

    def _keep(self, call_id: str, text: str) -> None:
        kept = self._output.setdefault(call_id, [])
        room = TOOL_OUTPUT_LIMIT - sum(map(len, kept))
        if room > 0:
            kept.append(text[:room])
        if len(text) > room:
            self._cut[call_id] = self._cut.get(call_id, 0) + len(text) - max(room, 0)

    def _with_output(self, call_id: str, content: str) -> str:
        output = "".join(self._output.pop(call_id, ()))
        cut = self._cut.pop(call_id, 0)
        if cut:
            output += f"\n[... {cut} more characters of output not shown]\n"
        if not output:
            return content
        return output + ("" if output.endswith("\n") else "\n") + content

    def catch_up(self, log: Sequence[Event]) -> None:
        """Feed the events of ``log`` this transcript has not seen yet."""
        self.feed(log[self._fed :])
