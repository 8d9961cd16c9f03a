"""Hostile HTTP servers on 127.0.0.1 for the adapters' bounds (spec/models.md §Bounds).

Each behaviour answers one request by writing raw bytes with no end in sight (a line with no
newline, a 50 MB event, a compression bomb, comments only, 10,000 tool calls), made lazily so
the server itself stays small. ``python tests/models/hostile.py NAME`` serves behaviour NAME
on a free port and prints its URL: a client test runs it as its own process, so the client's
memory is measured apart from it. The server stops writing when the client closes.
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Awaitable, Callable, Iterator

import orjson
import trio

Send = Callable[[bytes], Awaitable[None]]

CHUNK = 64 * 1024


def _choice(delta: dict[str, object], finish: str | None = None) -> bytes:
    event = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + orjson.dumps(event) + b"\n\n"


def headers(*extra: str, status: str = "200 OK", chunked: bool = False) -> bytes:
    lines = [f"HTTP/1.1 {status}", "content-type: text/event-stream", "connection: close"]
    if chunked:
        lines.append("transfer-encoding: chunked")
    return ("\r\n".join([*lines, *extra]) + "\r\n\r\n").encode()


async def endless_line(send: Send) -> None:
    """600 MB (or more) without a newline, made as it is sent."""
    await send(headers())
    await send(b"data: ")
    piece = b"x" * CHUNK
    for _ in range(600 * 1024 * 1024 // CHUNK):
        await send(piece)


async def huge_line(send: Send) -> None:
    """One 50 MB ``data:`` line, then the end of a normal answer."""
    await send(headers())
    await send(b'data: {"choices":[{"index":0,"delta":{"content":"')
    piece = b"x" * CHUNK
    for _ in range(50 * 1024 * 1024 // CHUNK):
        await send(piece)
    await send(b'"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')


async def huge_event(send: Send) -> None:
    """One event of many short ``data:`` lines, 50 MB in all."""
    await send(headers())
    line = b"data: " + b"y" * 1000 + b"\n"
    for _ in range(50 * 1024):
        await send(line * 64)


def bomb(pattern: bytes, size: int, encoding: str) -> bytes:
    """``size`` bytes of ``pattern`` repeated, compressed (built once, in pieces). Level 1:
    building a 1 GiB bomb at level 9 took 3-5 s of CPU for a ratio of 700-1,000 to 1; level
    1 takes about 1.2 s for 190-230 to 1, still far past every bound the client holds."""
    z = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS if encoding == "gzip" else 15)
    block = pattern * (CHUNK // len(pattern))
    parts = [z.compress(block) for _ in range(size // len(block))]
    return b"".join(parts) + z.flush()


async def gzip_bomb_line(send: Send) -> None:
    """A gzip body that inflates to 1 GiB of zero bytes: one endless line."""
    await send(headers("content-encoding: gzip"))
    await send(bomb(b"\0", 1024 * 1024 * 1024, "gzip"))


async def gzip_bomb_events(send: Send) -> None:
    """A deflate body that inflates to 1 GiB of 4 KB text deltas: the response bound."""
    await send(headers("content-encoding: deflate"))
    await send(bomb(_choice({"content": "z" * 4000}), 1024 * 1024 * 1024, "deflate"))


async def tiny_events(send: Send) -> None:
    """Endless one-character text deltas: the events bound."""
    await send(headers())
    batch = _choice({"content": "t"}) * 1000
    while True:
        await send(batch)


async def gzip_bomb_error(send: Send) -> None:
    """A 500 whose gzip body inflates to 1 GiB."""
    body = bomb(b"error! ", 1024 * 1024 * 1024, "gzip")
    await send(headers("content-encoding: gzip", f"content-length: {len(body)}", status="500 Oops"))
    await send(body)


async def comments_only(send: Send) -> None:
    """``: ping`` every 10 ms, forever: bytes keep coming, events never."""
    await send(headers())
    while True:
        await send(b": ping\n\n")
        await trio.sleep(0.01)


def _calls(count: int) -> Iterator[bytes]:
    for i in range(count):
        call = {"index": i, "id": "call_same", "type": "function",
                "function": {"name": "echo", "arguments": '{"text": "hi"}'}}  # fmt: skip
        yield _choice({"tool_calls": [call]})


_ANSWERED = [0]


async def many_calls(send: Send) -> None:
    """10,000 tool calls in one answer, all with the same id; later requests (the step after
    the calls ran) get a short text answer."""
    await send(headers())
    _ANSWERED[0] += 1
    if _ANSWERED[0] > 1:
        await send(_choice({"content": "done"}) + _choice({}, "stop") + b"data: [DONE]\n\n")
        return
    batch: list[bytes] = []
    for event in _calls(10_000):
        batch.append(event)
        if len(batch) == 256:
            await send(b"".join(batch))
            batch = []
    await send(b"".join(batch) + _choice({}, "tool_calls") + b"data: [DONE]\n\n")


BEHAVIOURS: dict[str, Callable[[Send], Awaitable[None]]] = {
    f.__name__: f
    for f in (endless_line, huge_line, huge_event, gzip_bomb_line, gzip_bomb_events, tiny_events,
              gzip_bomb_error, comments_only, many_calls)
}  # fmt: skip


async def _read_request(stream: trio.SocketStream) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        more = await stream.receive_some(CHUNK)
        if not more:
            return
        data += more
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        more = await stream.receive_some(CHUNK)
        if not more:
            return
        body += more


async def serve(name: str, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
    behaviour = BEHAVIOURS[name]

    async def handle(stream: trio.SocketStream) -> None:
        try:
            await _read_request(stream)
            await behaviour(stream.send_all)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client closed: what a bound should make it do
        finally:
            await stream.aclose()

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(handle, listeners)


async def _main(name: str) -> None:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve, name)
        print(f"http://127.0.0.1:{port}/v1", flush=True)


if __name__ == "__main__":
    trio.run(_main, sys.argv[1])
