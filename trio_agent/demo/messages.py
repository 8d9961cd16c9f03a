"""The demo websocket's messages: attrs classes, (un)structured by one cattrs converter.

Every frame a client sends is a JSON object whose ``type`` picks one class of
:data:`CLIENT_MESSAGES` (a tagged union on ``"type"``); every other field is checked against that
class: a missing field, an extra field or a value of the wrong type or range is refused by
:func:`parse` with a :class:`BadMessage` naming the field, before any handler sees the message;
every such refusal is worded ``bad message: ...`` (:class:`BadMessage` adds the prefix).
So no value a client can send reaches the server's code untyped.

Every frame the server sends is one of :data:`ServerMessage`, unstructured by the same converter
with its ``type`` tag (:func:`encode`).
"""

from __future__ import annotations

from typing import Any, Final, Literal

import attrs
import cattrs
import orjson

from ..boundary import first_error, strict_converter

#: The scenario names a ``select`` may carry (the keys of :data:`.scenarios.SCENARIOS`).
ScenarioName = Literal["esc", "kill", "truncate"]
#: Longest dwell a ``play`` may ask for, in seconds.
MAX_DWELL: Final = 30.0


class BadMessage(Exception):
    """A client frame that is not a valid message; ``field`` names the offending field.

    The one place a bad client frame is worded: ``what`` is what is wrong with it, and
    ``message``, what the client gets in its ``error`` frame, is ``bad message: <what>``.
    """

    def __init__(self, what: str, field: str | None = None) -> None:
        message = f"bad message: {what}"
        super().__init__(message)
        self.message = message
        self.field = field


# -- client to server ------------------------------------------------------------------------


@attrs.frozen
class Select:
    """Start (or restart) a scenario run."""

    scenario: ScenarioName


@attrs.frozen
class Play:
    """Advance by itself, waiting ``dwell`` seconds between steps (absent: keep the last)."""

    dwell: float | None = None


@attrs.frozen
class Pause:
    pass


@attrs.frozen
class Step:
    pass


@attrs.frozen
class Reset:
    pass


@attrs.frozen
class Ping:
    pass


ClientMessage = Select | Play | Pause | Step | Reset | Ping

#: The ``type`` tag of each client message.
CLIENT_MESSAGES: Final[dict[str, type[ClientMessage]]] = {
    "select": Select,
    "play": Play,
    "pause": Pause,
    "step": Step,
    "reset": Reset,
    "ping": Ping,
}


# -- server to client ------------------------------------------------------------------------


@attrs.frozen
class ScenarioInfo:
    name: str
    title: str
    summary: str


@attrs.frozen
class Hello:
    """The first frame of every connection: the scenarios a client may select."""

    scenarios: list[ScenarioInfo]


@attrs.frozen
class State:
    """A full snapshot of the client's run (the engine's ``Driver.snapshot()``)."""

    state: dict[str, Any]


@attrs.frozen
class Error:
    """A refused message or request; ``field`` names the offending field when there is one."""

    message: str
    field: str | None = None


@attrs.frozen
class Pong:
    pass


ServerMessage = Hello | State | Error | Pong

_SERVER_TAGS: Final[dict[type[Any], str]] = {
    Hello: "hello",
    State: "state",
    Error: "error",
    Pong: "pong",
}


# -- the converter ---------------------------------------------------------------------------

#: Strict (no value is coerced: ``True`` is not a dwell, ``[]`` not a scenario), a dwell finite.
converter: Final = strict_converter(finite_floats=True)


def parse(text: str | bytes) -> ClientMessage:
    """One client frame -> its message; :class:`BadMessage` (naming the field) if it is not one."""
    if isinstance(text, bytes):
        raise BadMessage("binary frames are not accepted; send JSON text")
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise BadMessage("not JSON") from None
    if not isinstance(obj, dict):
        raise BadMessage(f'expected a JSON object with a "type", got {_kind(obj)}')
    kind = obj.get("type")
    if not isinstance(kind, str):
        if "type" not in obj:
            raise BadMessage('"type" is missing', "type")
        raise BadMessage(f'"type" must be a string, got {_kind(kind)}', "type")
    cls = CLIENT_MESSAGES.get(kind)
    if cls is None:
        choices = ", ".join(CLIENT_MESSAGES)
        raise BadMessage(f"unknown message type {kind[:40]!r}; one of {choices}", "type")
    fields = {k: v for k, v in obj.items() if k != "type"}
    try:
        message: ClientMessage = converter.structure(fields, cls)
    except cattrs.BaseValidationError as exc:
        field, what = first_error(exc)
        if field is None and len(extra := sorted(set(fields) - set(attrs.fields_dict(cls)))):
            field = extra[0]
        where = f"{kind}.{field}" if field else kind
        raise BadMessage(f"{where}: {what}", field) from None
    if (
        isinstance(message, Play)
        and message.dwell is not None
        and not 0 <= message.dwell <= MAX_DWELL
    ):
        raise BadMessage(f"play.dwell: must be seconds between 0 and {MAX_DWELL:g}", "dwell")
    return message


def _kind(value: Any) -> str:
    return {
        list: "an array",
        dict: "an object",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
    }.get(type(value), "null")


def encode(message: ServerMessage) -> str:
    """A server message as the JSON text of one frame: ``{"type": tag, **fields}``."""
    body: dict[str, Any] = converter.unstructure(message)
    return orjson.dumps({"type": _SERVER_TAGS[type(message)], **body}).decode()
