"""A scripted OpenAI-compatible server on 127.0.0.1, for tests and for trying the HTTP model.

It answers each ``POST`` (``/chat/completions``, or Anthropic's ``/messages``) with the next
:class:`Play` of its script: server-sent events (named ones with ``named=True``, as
Anthropic's API sends them; :func:`anthropic_events` builds such a stream; ``preamble``
bytes such as SSE comments first), then the end of the response, a hang (the stream stays
open, sending nothing, until the client closes it), a drip (one more text delta every
``every`` seconds, forever, until the client closes it), or a dropped connection; or an
error status with a body. A ``GET`` (``/models``) lists ``models``, or answers 404 when it
is ``None``. It records each request's JSON body and headers and, per connection, a
:class:`trio.Event` set when the client closed it (and the ``time.perf_counter()`` of that
moment), so a test can wait for "the socket was closed" as an event instead of a timer.

HTTP is h11 (one connection, one request: the server closes after the response). Run it by
hand with ``python -m trio_agent.testing.provider --port N``: it prints its URL, lists one
model (``scripted``) and answers every request with a short text.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal

import attrs
import h11
import orjson
import trio

__all__ = [
    "Connection",
    "Play",
    "Provider",
    "anthropic_events",
    "serve_provider",
    "text_events",
    "tool_call_events",
]


@attrs.frozen
class Play:
    """One scripted response. ``events`` are SSE ``data`` payloads, sent in order (a dict is
    JSON-encoded; a str is sent as is, so ``"[DONE]"`` or malformed text can be scripted);
    ``raw`` bytes are sent verbatim after them. With ``then="drip"``, a text delta of
    ``drip_text`` follows every ``every`` seconds until the client closes the connection."""

    status: int = 200
    events: tuple[dict[str, Any] | str, ...] = ()
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    raw: bytes = b""
    #: Bytes sent verbatim before the events (SSE comments such as ``: ping``).
    preamble: bytes = b""
    then: Literal["end", "hang", "drop", "drip"] = "end"
    every: float = 0.001
    drip_text: str = "."
    #: Send each dict event with an ``event: <its "type">`` line first (Anthropic's shape);
    #: a drip then sends Anthropic text deltas.
    named: bool = False


@attrs.define
class Connection:
    """What one client connection did."""

    closed: trio.Event = attrs.Factory(trio.Event)
    #: ``time.perf_counter()`` when the server saw the connection end (set with ``closed``).
    closed_at: float | None = None
    request: dict[str, Any] | None = None
    #: The request's headers, names in lower case.
    headers: dict[str, str] = attrs.Factory(dict)


def text_events(text: str, *, pieces: int = 3, finish: str = "stop") -> tuple[dict[str, Any], ...]:
    """The SSE payloads of a streamed text answer, in ``pieces`` deltas, then ``[DONE]``."""
    step = max(1, -(-len(text) // pieces))
    deltas = [text[i : i + step] for i in range(0, len(text), step)]
    out: list[dict[str, Any]] = [_choice({"role": "assistant", "content": ""})]
    out += [_choice({"content": d}) for d in deltas]
    out.append(_choice({}, finish))
    return tuple(out)


def tool_call_events(
    name: str, arguments: str, *, call_id: str = "call_1", pieces: int = 3, text: str = ""
) -> tuple[dict[str, Any], ...]:
    """A tool call whose ``arguments`` JSON text is split over ``pieces`` deltas."""
    out: list[dict[str, Any]] = []
    if text:
        out.append(_choice({"content": text}))
    step = max(1, -(-len(arguments) // pieces))
    parts = [arguments[i : i + step] for i in range(0, len(arguments), step)] or [""]
    first = {"index": 0, "id": call_id, "type": "function", "function": {"name": name}}
    out.append(_choice({"tool_calls": [{**first, "function": {"name": name, "arguments": ""}}]}))
    out += [_choice({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in parts]
    out.append(_choice({}, "tool_calls"))
    return tuple(out)


def anthropic_events(
    text: str = "",
    *,
    calls: tuple[tuple[str, str, str], ...] = (),
    stop: str | None = None,
    pieces: int = 3,
) -> tuple[dict[str, Any], ...]:
    """Anthropic Messages events (send with ``Play(named=True)``): ``message_start``, a text
    block in ``pieces`` deltas, one ``tool_use`` block per ``(id, name, input JSON text)``
    with its input split over ``pieces`` ``input_json_delta`` events, ``message_delta`` with
    the stop reason (``tool_use`` when there are calls, else ``end_turn``), ``message_stop``."""
    usage = {"input_tokens": 10, "output_tokens": 1}
    out: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message",
         "role": "assistant", "content": [], "model": "m", "usage": usage}},
        {"type": "ping"},
    ]  # fmt: skip
    index = 0
    if text:
        out.append({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}})  # fmt: skip
        step = max(1, -(-len(text) // pieces))
        for i in range(0, len(text), step):
            out.append({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": text[i : i + step]}})  # fmt: skip
        out.append({"type": "content_block_stop", "index": 0})
        index = 1
    for call_id, name, arguments in calls:
        out.append({"type": "content_block_start", "index": index, "content_block":
                    {"type": "tool_use", "id": call_id, "name": name, "input": {}}})  # fmt: skip
        step = max(1, -(-len(arguments) // pieces))
        for i in range(0, len(arguments), step):
            part = {"type": "input_json_delta", "partial_json": arguments[i : i + step]}
            out.append({"type": "content_block_delta", "index": index, "delta": part})
        out.append({"type": "content_block_stop", "index": index})
        index += 1
    reason = stop or ("tool_use" if calls else "end_turn")
    out.append({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None},
                "usage": {"output_tokens": 7}})  # fmt: skip
    out.append({"type": "message_stop"})
    return tuple(out)


def _choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


class Provider:
    """See the module docstring; run one with :func:`serve_provider`."""

    def __init__(
        self,
        plays: list[Play] | None = None,
        *,
        default: Play | None = None,
        port: int = 0,
        models: list[str] | None = None,
    ) -> None:
        self.plays: deque[Play] = deque(plays or [])
        self.default = default or Play(events=(*text_events("ok"), "[DONE]"))
        self.connections: list[Connection] = []
        self.port = port
        #: What ``GET .../models`` lists (``None``: answered 404, as servers without one).
        self.models = models
        #: How many ``GET`` requests were answered (they are not among :attr:`connections`).
        self.listed = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return [c.request for c in self.connections if c.request is not None]

    async def _handle(self, stream: trio.SocketStream) -> None:
        conn = Connection()
        self.connections.append(conn)
        try:
            await self._serve_one(stream, conn)
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
            pass  # the client went away: that is what `closed` records
        finally:
            conn.closed_at = time.perf_counter()
            conn.closed.set()
            await stream.aclose()

    async def _list_models(self, stream: trio.SocketStream, h: h11.Connection) -> None:
        if self.models is None:
            status, body = 404, b'{"error": {"message": "not found"}}'
        else:
            status = 200
            listed = [{"id": m, "object": "model", "owned_by": "test"} for m in self.models]
            body = orjson.dumps({"object": "list", "data": listed})
        headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
        for event in (h11.Response(status_code=status, headers=headers), h11.Data(data=body),
                      h11.EndOfMessage()):  # fmt: skip
            data = h.send(event)
            if data:
                await stream.send_all(data)

    async def _serve_one(self, stream: trio.SocketStream, conn: Connection) -> None:
        h = h11.Connection(h11.SERVER)
        body = b""
        method = b""
        while True:
            event = h.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                if not data:
                    return
                h.receive_data(data)
            elif isinstance(event, h11.Request):
                conn.headers = {k.decode().lower(): v.decode() for k, v in event.headers}
                method = event.method
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                break
        if method == b"GET":  # the model list: not a chat request
            self.connections.remove(conn)
            self.listed += 1
            await self._list_models(stream, h)
            return
        try:
            conn.request = orjson.loads(body)
        except orjson.JSONDecodeError:
            conn.request = {"_not_json": body.decode("utf-8", "replace")}
        play = self.plays.popleft() if self.plays else self.default

        async def send(ev: Any) -> None:
            data = h.send(ev)
            if data:
                await stream.send_all(data)

        if play.status != 200:
            headers = [("content-type", "application/json"), *play.headers]
            headers.append(("content-length", str(len(play.body))))
            await send(h11.Response(status_code=play.status, headers=headers))
            await send(h11.Data(data=play.body))
            await send(h11.EndOfMessage())
            return
        headers = [("content-type", "text/event-stream"), *play.headers]
        await send(h11.Response(status_code=200, headers=headers))
        if play.preamble:
            await send(h11.Data(data=play.preamble))
        for item in play.events:
            text = item if isinstance(item, str) else orjson.dumps(item).decode()
            name = f"event: {item['type']}\n" if play.named and isinstance(item, dict) else ""
            await send(h11.Data(data=f"{name}data: {text}\n\n".encode()))
        if play.raw:
            await send(h11.Data(data=play.raw))
        if play.then == "drop":
            return  # closed without the chunked terminator: the body is cut
        if play.then == "hang":
            while await stream.receive_some(65536):  # until the client closes the socket
                pass
            return
        if play.then == "drip":
            await _drip(stream, send, play)
            return
        await send(h11.EndOfMessage())


async def _drip(
    stream: trio.SocketStream, send: Callable[[Any], Awaitable[None]], play: Play
) -> None:
    """Send a delta every ``play.every`` seconds while waiting for the client to close: the
    close is seen when it happens (a read returns end-of-file), not at the next send."""
    if play.named:
        delta = {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": play.drip_text}}  # fmt: skip
        data = b"event: content_block_delta\ndata: " + orjson.dumps(delta) + b"\n\n"
    else:
        data = b"data: " + orjson.dumps(_choice({"content": play.drip_text})) + b"\n\n"

    async def drip() -> None:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            while True:
                await trio.sleep(play.every)
                await send(h11.Data(data=data))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(drip)
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            while await stream.receive_some(65536):
                pass
        nursery.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def serve_provider(
    plays: list[Play] | None = None,
    *,
    default: Play | None = None,
    port: int = 0,
    models: list[str] | None = None,
) -> AsyncIterator[Provider]:
    """``async with serve_provider(plays) as provider: ... provider.url`` (127.0.0.1 only)."""
    provider = Provider(plays, default=default, port=port, models=models)
    async with trio.open_nursery() as nursery:
        serve = functools.partial(trio.serve_tcp, provider._handle, port, host="127.0.0.1")
        listeners = await nursery.start(serve)
        provider.port = listeners[0].socket.getsockname()[1]
        try:
            yield provider
        finally:
            nursery.cancel_scope.cancel()


async def _main(port: int) -> None:
    async with serve_provider(port=port, models=["scripted"]) as provider:
        print(provider.url, flush=True)
        await trio.sleep_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m trio_agent.testing.provider",
        description="A scripted OpenAI-compatible server on 127.0.0.1 that answers every "
        "request with a short streamed text.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free)")
    args = parser.parse_args(argv)
    try:
        trio.run(_main, args.port)
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        print(f"provider: cannot listen on 127.0.0.1:{args.port}: {exc.strerror}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
