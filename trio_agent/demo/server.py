"""``trio-agent serve``: the demo page and its websocket on one port.

h11 reads each request first. A plain ``GET /`` gets the page (one self-contained HTML file:
inline CSS and JS, no external assets); ``HEAD`` gets the same headers and no body. A
websocket upgrade on ``/ws`` is handed, with the bytes already read, to trio-websocket. Every
other request gets a short error response.

Safety: loopback by default; the ``Host`` header must name this server (DNS rebinding) and a
websocket's ``Origin`` must be the page's own origin, else 403; a websocket message larger
than :data:`MAX_MESSAGE` closes the connection with 1009. Each websocket connection gets its
own scenario run (own temporary session directory, own worker process); when the connection
goes away for any reason its run is torn down, which stops its worker and tool processes.

Robustness (each rule has a regression test in ``tests/demo/test_demo_server.py``):

* Every client frame is structured into an attrs class (:mod:`.messages`, a tagged union on
  ``"type"``) before anything acts on it; a frame that is not one (not JSON, not an object, an
  unknown ``type``, a missing, extra or mistyped field) gets an ``error`` frame worded
  ``bad message: ...`` (:class:`.messages.BadMessage`) naming the field, and the connection
  goes on.
* Whatever fails while serving one connection (a failed handshake, garbage HTTP, a bug in a
  handler) ends that connection only, with one line on stderr and no traceback; every other
  client's run goes on. A handler's failure closes its websocket with 1011.
* Replies are never dropped: they go through a bounded queue per connection
  (:data:`OUTBOX_SIZE`) and are sent without a timeout; a client that leaves that many replies
  unread is closed with 1008 and a reason.
* A websocket that sends nothing for ``idle_timeout`` seconds (:data:`IDLE_TIMEOUT` by default;
  the page pings well within it) is closed with 1001, so idle sockets cannot pile up.
* Slow clients cannot starve the others. A request head must arrive whole within
  ``head_timeout`` seconds (:data:`HEAD_TIMEOUT`) and :data:`MAX_HEAD` bytes. The server holds
  at most ``max_connections`` connections (:data:`MAX_CONNECTIONS`, and never more than the
  file-descriptor limit leaves room for: :func:`connection_cap`); when a new one arrives at
  the cap, the connection that has waited longest for its request head is closed to make room
  (a half-open connection is worth less than a client that speaks). The accept loop is the
  server's own: running out of file descriptors anyway (``EMFILE``) closes the oldest such
  connection and is one line on stderr, never a traceback.

Client to server (JSON text frames): ``{"type": "select", "scenario": "esc"|"kill"|
"truncate"}``, ``{"type": "play", "dwell"?: seconds}``, ``{"type": "pause"}``, ``{"type":
"step"}``, ``{"type": "reset"}``, ``{"type": "ping"}``. Server to client: ``hello`` (the
scenarios), ``state`` (a full snapshot, sent whenever it changes), ``error`` (``message``,
``field``) and ``pong``. A refused ``select`` when :data:`MAX_RUNS` runs are going is an
``error`` starting with ``server busy``.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import ipaddress
import itertools
import resource
import sys
from collections.abc import AsyncIterator
from importlib import resources
from typing import Final, TextIO

import attrs
import h11
import trio
import trio_websocket

from ..failures import leaves
from ..stop_signals import stop_receiver
from .engine import DemoError, Driver, open_run, pace_from_env
from .messages import (
    BadMessage,
    ClientMessage,
    Error,
    Hello,
    Pause,
    Ping,
    Play,
    Pong,
    Reset,
    ScenarioInfo,
    Select,
    ServerMessage,
    State,
    encode,
    parse,
)
from .scenarios import SCENARIOS

#: Largest websocket message accepted from a browser; larger ones close with 1009.
MAX_MESSAGE: Final = 4096
#: Largest request head accepted by the h11 front.
MAX_HEAD: Final = 16384
#: Seconds a client gets to send its request head.
HEAD_TIMEOUT: Final = 10.0
#: Scenario runs (worker processes) the server runs at once, across all clients.
MAX_RUNS: Final = 8
#: Fastest rate at which state snapshots are pushed to one client (seconds between them).
PUSH_INTERVAL: Final = 0.08
DEFAULT_DWELL: Final = 2.5
#: Replies (errors, pongs, state) queued for one client before it counts as too slow.
OUTBOX_SIZE: Final = 64
#: Seconds a websocket may send nothing before it is closed (the page pings every 60 s).
IDLE_TIMEOUT: Final = 300.0
#: Connections held at once (each is a file descriptor), at most.
MAX_CONNECTIONS: Final = 256
#: File descriptors kept free of connections: the runs' workers, pipes and log files.
FD_RESERVE: Final = 128
FDS_PER_RUN: Final = 16
#: What ``accept`` says when the process or the system is out of descriptors or buffers.
CAPACITY_ERRNOS: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
#: Seconds to pause accepting after such an error (the kernel's backlog keeps the clients).
CAPACITY_PAUSE: Final = 0.05


def connection_cap(max_connections: int, max_runs: int) -> int:
    """How many connections to hold: ``max_connections``, but never more than the soft
    ``RLIMIT_NOFILE`` leaves after :data:`FD_RESERVE` and the runs' descriptors (at least 8)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return max_connections
    room = soft - FD_RESERVE - FDS_PER_RUN * max_runs
    return max(8, min(max_connections, room))


#: Where the page takes the diagram of a turn's life: the one SVG the docs show too.
DIAGRAM_SLOT = b"<!-- turn-life.svg -->"


def page() -> bytes:
    """The page, with the turn-life diagram inlined at its slot (the page's policy loads
    nothing from elsewhere, so the SVG travels inside it)."""
    static = resources.files(__package__).joinpath("static")
    html = static.joinpath("index.html").read_bytes()
    svg = static.joinpath("turn-life.svg").read_bytes()
    return html.replace(DIAGRAM_SLOT, svg, 1)


class Replay(trio.abc.Stream):
    """A stream that first returns bytes already read from ``stream``, then reads on."""

    def __init__(self, prefix: bytes, stream: trio.abc.Stream) -> None:
        self._prefix = prefix
        self._stream = stream

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._prefix:
            n = len(self._prefix) if max_bytes is None else max_bytes
            data, self._prefix = self._prefix[:n], self._prefix[n:]
            await trio.lowlevel.checkpoint()
            return data
        return bytes(await self._stream.receive_some(max_bytes))

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self._stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        if isinstance(self._stream, trio.abc.HalfCloseableStream):
            await self._stream.send_eof()

    async def aclose(self) -> None:
        await self._stream.aclose()


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@attrs.define
class Origins:
    """Which ``Host`` headers name this server and which page origins may open a websocket."""

    host: str
    port: int

    def hosts(self) -> set[str] | None:
        """Acceptable ``Host`` values, or ``None`` when any name may reach us (0.0.0.0)."""
        if self.host in ("0.0.0.0", "::", ""):
            return None
        names = {self.host}
        if _is_loopback(self.host):
            names |= {"127.0.0.1", "localhost", "[::1]"}
        return {f"{name}:{self.port}" for name in names} | (
            {f"[{self.host}]:{self.port}"} if ":" in self.host else set()
        )

    def host_ok(self, host: str) -> bool:
        allowed = self.hosts()
        return bool(host) and (allowed is None or host in allowed)

    def origin_ok(self, origin: str, host: str) -> bool:
        return self.host_ok(host) and origin == f"http://{host}"


async def read_head(stream: trio.abc.Stream) -> tuple[h11.Request | None, bytes]:
    """Read one request head with h11; ``(request, every byte read)`` or ``(None, bytes)``."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
    raw = b""
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError:
            return None, raw
        if isinstance(event, h11.Request):
            return event, raw
        if event is h11.NEED_DATA:
            data = bytes(await stream.receive_some(4096))
            if not data:
                return None, raw
            raw += data
            conn.receive_data(data)
            continue
        return None, raw


async def respond(
    stream: trio.abc.Stream,
    status: int,
    body: bytes,
    content_type: str = "text/plain",
    *,
    head: bool = False,
) -> None:
    """One response, then the connection closes. ``head``: the headers a GET would get
    (``content-length`` included, RFC 9110 §9.3.2) and no body."""
    conn = h11.Connection(h11.SERVER)
    # h11 must see a request before it will produce a response; its method decides whether
    # h11 lets a body through (none after HEAD).
    method = b"HEAD" if head else b"GET"
    conn.receive_data(method + b" / HTTP/1.1\r\nHost: x\r\n\r\n")
    conn.next_event()
    headers = [
        ("content-type", f"{content_type}; charset=utf-8"),
        ("content-length", str(len(body))),
        ("connection", "close"),
        ("cache-control", "no-store"),
        ("x-content-type-options", "nosniff"),
    ]
    if content_type == "text/html":
        headers.append(
            (
                "content-security-policy",
                "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
                "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'",
            )
        )
    data = conn.send(h11.Response(status_code=status, headers=headers))
    if not head:
        data += conn.send(h11.Data(data=body))
    data += conn.send(h11.EndOfMessage())
    await stream.send_all(data)


def _header(request: h11.Request, name: bytes) -> str:
    for key, value in request.headers:
        if key == name:
            return value.decode("latin-1")
    return ""


def _peer(stream: trio.abc.Stream) -> str:
    try:
        name = stream.socket.getpeername()  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        return "?"
    return f"{name[0]}:{name[1]}" if isinstance(name, tuple) else str(name)


#: What a client going away looks like from our side: not worth a log line.
_GONE: Final = (trio.BrokenResourceError, trio.ClosedResourceError, trio_websocket.ConnectionClosed)


def _one_line(exc: BaseException) -> str:
    """``Type: message`` of the first leaf that is not just the client going away."""
    found = leaves(exc)
    leaf = next((e for e in found if not isinstance(e, _GONE)), found[0])
    text = " ".join(str(leaf).split())
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


@attrs.frozen
class Close:
    """How a websocket connection is closed (RFC 6455 code and reason)."""

    code: int
    reason: str = ""


class SlowClient(Exception):
    """The client left :data:`OUTBOX_SIZE` replies unread; its connection is closed."""


class DemoServer:
    """The HTTP + websocket front (see the module docstring)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        max_runs: int = MAX_RUNS,
        idle_timeout: float = IDLE_TIMEOUT,
        head_timeout: float = HEAD_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
        err: TextIO | None = None,
    ) -> None:
        self.origins = Origins(host, port)
        self.runs = trio.CapacityLimiter(max_runs)
        self.idle_timeout = idle_timeout
        self.head_timeout = head_timeout
        self.max_connections = connection_cap(max_connections, max_runs)
        self.page = page()
        self._err = err if err is not None else sys.stderr
        #: Connections open now (accepted, handler not finished).
        self.connections = 0
        #: Connections still waiting for their request head, oldest first: the scope that
        #: reads the head, to be cancelled to make room.
        self._waiting: dict[int, trio.CancelScope] = {}
        self._ids = itertools.count()
        self._shedding = False

    # -- accepting ---------------------------------------------------------------------------------

    async def serve_listeners(self, listeners: list[trio.SocketListener]) -> None:
        """Accept on every listener until cancelled; each connection gets :meth:`handle`."""
        async with trio.open_nursery() as nursery:
            for listener in listeners:
                nursery.start_soon(self._accept_loop, listener, nursery)

    async def _accept_loop(self, listener: trio.SocketListener, nursery: trio.Nursery) -> None:
        async with listener:
            while True:
                try:
                    stream = await listener.accept()
                except OSError as exc:
                    if exc.errno not in CAPACITY_ERRNOS:
                        raise
                    # Out of descriptors although under our cap (something else holds them):
                    # make room, say so once, and let the kernel's backlog keep the clients.
                    if not self._shedding:
                        self._shedding = True
                        self.log(
                            f"accept: {errno.errorcode.get(exc.errno or 0, exc)}: "
                            "closing the connections that wait longest for a request head"
                        )
                    self._make_room()
                    await trio.sleep(CAPACITY_PAUSE)
                    continue
                self._shedding = False
                if self.connections >= self.max_connections and not self._make_room():
                    # Every connection held is a client that spoke (a websocket): refuse.
                    with trio.move_on_after(1, shield=True):
                        await stream.aclose()
                    continue
                self.connections += 1
                nursery.start_soon(self.handle, stream)

    def _make_room(self) -> bool:
        """Close the connection that has waited longest for its request head, if any."""
        if not self._waiting:
            return False
        key = next(iter(self._waiting))
        self._waiting.pop(key).cancel()
        return True

    def log(self, line: str) -> None:
        """One line on stderr per problem (never a traceback)."""
        with contextlib.suppress(OSError, ValueError):
            print(f"trio-agent serve: {line}", file=self._err, flush=True)

    async def handle(self, stream: trio.abc.Stream) -> None:
        """Serve one TCP connection. Whatever goes wrong ends this connection only."""
        peer = _peer(stream)
        try:
            await self._handle(stream, peer)
        except Exception as exc:  # a handler's failure must never end the server
            if not all(isinstance(e, _GONE) for e in leaves(exc)):
                self.log(f"connection from {peer} failed: {_one_line(exc)}")
        finally:
            self.connections -= 1
            with trio.move_on_after(1, shield=True):
                await stream.aclose()

    async def _handle(self, stream: trio.abc.Stream, peer: str) -> None:
        request, raw, timed_out = None, b"", True
        key = next(self._ids)
        # The whole head within head_timeout (not per read: a byte a second never ends); the
        # scope is also how _make_room closes a connection still waiting for its head.
        scope = trio.CancelScope(deadline=trio.current_time() + self.head_timeout)
        self._waiting[key] = scope
        try:
            with scope:
                request, raw = await read_head(stream)
                timed_out = False
        finally:
            self._waiting.pop(key, None)
        if timed_out:
            return  # the head never came, or the connection made room for a newer one
        if request is None:
            if raw:
                self.log(f"bad request from {peer}: not HTTP/1.1 ({len(raw)} bytes)")
                await respond(stream, 400, b"bad request\n")
            return
        host = _header(request, b"host")
        if not self.origins.host_ok(host):
            await respond(stream, 403, b"forbidden: unknown Host\n")
            return
        target = request.target.decode("latin-1").split("?", 1)[0]
        upgrade = _header(request, b"upgrade").lower() == "websocket"
        if target == "/ws" and upgrade:
            origin = _header(request, b"origin")
            if not self.origins.origin_ok(origin, host):
                await respond(stream, 403, b"forbidden: websocket Origin is not this page\n")
                return
            await self._websocket(Replay(raw, stream), peer)
            return
        head = request.method == b"HEAD"
        if request.method not in (b"GET", b"HEAD"):
            await respond(stream, 405, b"method not allowed\n")
        elif target in ("/", "/index.html"):
            await respond(stream, 200, self.page, "text/html", head=head)
        elif target == "/healthz":
            await respond(stream, 200, b"ok\n", head=head)
        else:
            await respond(stream, 404, b"not found\n", head=head)

    async def _websocket(self, stream: Replay, peer: str) -> None:
        async with trio.open_nursery() as nursery:
            request = await trio_websocket.wrap_server_stream(
                nursery, stream, message_queue_size=4, max_message_size=MAX_MESSAGE
            )
            try:
                conn = await request.accept()
            except Exception as exc:  # a failed handshake: one line, this connection only
                self.log(f"websocket handshake with {peer} failed: {_one_line(exc)}")
                nursery.cancel_scope.cancel()
                return
            close = Close(1000)
            try:
                close = await Client(self, conn).run()
            except Exception as exc:  # a handler's failure ends this connection only
                self.log(f"websocket {peer}: handler failed: {_one_line(exc)}")
                close = Close(1011, "internal error")
            finally:
                with trio.move_on_after(2, shield=True):
                    await conn.aclose(close.code, close.reason)
                nursery.cancel_scope.cancel()


@attrs.define(eq=False)
class _Current:
    name: str
    scope: trio.CancelScope
    done: trio.Event
    driver: Driver | None = None
    error: str | None = None


class Client:
    """One browser connection: its own scenario run, torn down when it goes away."""

    def __init__(self, server: DemoServer, conn: trio_websocket.WebSocketConnection) -> None:
        self.server = server
        self.conn = conn
        self.current: _Current | None = None
        self.dwell = DEFAULT_DWELL
        self._outbox_send, self._outbox = trio.open_memory_channel[ServerMessage](OUTBOX_SIZE)
        self._nursery: trio.Nursery | None = None

    async def run(self) -> Close:
        """Serve the connection; how to close it (idle, slow, or a normal end)."""
        close = Close(1000)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._sender)
                self.reply(
                    Hello([ScenarioInfo(s.name, s.title, s.summary) for s in SCENARIOS.values()])
                )
                try:
                    close = await self._receive()
                finally:
                    nursery.cancel_scope.cancel()  # tears the run down (bounded, shielded)
        except* trio_websocket.ConnectionClosed:
            pass
        except* SlowClient:
            close = Close(1008, f"too slow: {OUTBOX_SIZE} replies left unread")
        return close

    def reply(self, message: ServerMessage) -> None:
        """Queue a frame for the sender. The queue, not the send, is bounded: a client that
        found :data:`OUTBOX_SIZE` replies unread is closed (:class:`SlowClient`); no reply is
        ever dropped while the connection stays open."""
        try:
            self._outbox_send.send_nowait(message)
        except trio.WouldBlock:
            raise SlowClient from None

    def error(self, message: str, field: str | None = None) -> None:
        self.reply(Error(message, field))

    # -- receiving ------------------------------------------------------------------------------

    async def _receive(self) -> Close:
        timeout = self.server.idle_timeout
        while True:
            frame: str | bytes | None = None
            with trio.move_on_after(timeout):
                try:
                    frame = await self.conn.get_message()
                except trio_websocket.ConnectionClosed:
                    return Close(1000)
            if frame is None:
                return Close(1001, f"idle: no message for {timeout:g} s")
            try:
                message = parse(frame)
            except BadMessage as exc:
                self.error(exc.message, exc.field)
                continue
            await self._dispatch(message)

    async def _dispatch(self, message: ClientMessage) -> None:
        if isinstance(message, Ping):
            self.reply(Pong())
        elif isinstance(message, Select):
            await self._start(message.scenario)
        elif isinstance(message, Reset):
            if self.current is None:
                self.error("nothing to reset: select a scenario first")
                return
            await self._start(self.current.name)
        else:
            kind = type(message).__name__.lower()
            driver = self.current.driver if self.current is not None else None
            if driver is None:
                self.error(f"{kind}: select a scenario first")
            elif isinstance(message, Play):
                if message.dwell is not None:
                    self.dwell = message.dwell
                driver.play(self.dwell)
            elif isinstance(message, Pause):
                driver.pause()
            else:
                driver.step()

    # -- the scenario run -------------------------------------------------------------------------

    async def _start(self, name: str) -> None:
        old = self.current
        if old is not None:
            old.scope.cancel()
            await old.done.wait()
        assert self._nursery is not None
        self.current = await self._nursery.start(self._scenario, name)

    async def _scenario(self, name: str, task_status: trio.TaskStatus[_Current]) -> None:
        current = _Current(name, trio.CancelScope(), trio.Event())
        task_status.started(current)
        try:
            with current.scope:
                try:
                    self.server.runs.acquire_on_behalf_of_nowait(current)
                except trio.WouldBlock:
                    current.error = "server busy: as many demos run as it allows; try later"
                    self.error(current.error)
                    return
                try:
                    async with open_run() as run:
                        current.driver = Driver(SCENARIOS[name], run, dwell=self.dwell)
                        try:
                            await current.driver.main()
                        except DemoError:
                            await trio.sleep_forever()  # keep showing the state until reset
                finally:
                    self.server.runs.release_on_behalf_of(current)
        finally:
            current.done.set()

    # -- sending --------------------------------------------------------------------------------

    async def _send(self, message: ServerMessage) -> None:
        await self.conn.send_message(encode(message))

    async def _sender(self) -> None:
        last: tuple[int, int] | None = None
        next_push = trio.current_time()
        while True:
            message: ServerMessage | None = None
            with trio.move_on_at(next_push):
                message = await self._outbox.receive()
            if message is not None:
                # No timeout around the send: a slow client only fills its bounded outbox
                # (and is closed by reply()); a cancelled send would lose the frame.
                await self._send(message)
            if trio.current_time() < next_push:
                continue
            next_push = trio.current_time() + PUSH_INTERVAL
            current = self.current
            driver = current.driver if current is not None else None
            if driver is None:
                continue
            key = (id(current), driver.run.version)
            if key != last:
                last = key
                await self._send(State(driver.snapshot()))


async def serve(
    host: str,
    port: int,
    *,
    max_runs: int = MAX_RUNS,
    idle_timeout: float = IDLE_TIMEOUT,
    head_timeout: float = HEAD_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
    err: TextIO | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled; ``task_status.started(port)`` once listening (port 0 = any)."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    await serve_on(
        listeners,
        host,
        max_runs=max_runs,
        idle_timeout=idle_timeout,
        head_timeout=head_timeout,
        max_connections=max_connections,
        err=err,
        task_status=task_status,
    )


async def serve_on(
    listeners: list[trio.SocketListener],
    host: str,
    *,
    max_runs: int = MAX_RUNS,
    idle_timeout: float = IDLE_TIMEOUT,
    head_timeout: float = HEAD_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
    err: TextIO | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve on listeners already bound (so a bind error surfaces before any task starts)."""
    actual = listeners[0].socket.getsockname()[1]
    server = DemoServer(
        host,
        actual,
        max_runs=max_runs,
        idle_timeout=idle_timeout,
        head_timeout=head_timeout,
        max_connections=max_connections,
        err=err,
    )
    task_status.started(actual)
    await server.serve_listeners(listeners)


def run_serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        pace_from_env()
    except DemoError as exc:
        print(f"trio-agent serve: {exc}", file=err)
        return 2
    shown = f"[{args.host}]" if ":" in args.host else args.host  # as a URL writes the host

    async def main() -> None:
        # SIGINT, SIGTERM and SIGHUP cancel everything in order: each client's run is torn
        # down (its worker and tool processes stopped) before the process exits. One the
        # server was started with ignored (nohup's SIGHUP) stays ignored.
        listeners = await trio.open_tcp_listeners(args.port, host=args.host)
        with stop_receiver() as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_cancel_on_signal, signals, nursery.cancel_scope)
                port = await nursery.start(
                    functools.partial(
                        serve_on,
                        listeners,
                        args.host,
                        max_runs=getattr(args, "max_runs", MAX_RUNS),
                        idle_timeout=getattr(args, "idle_timeout", IDLE_TIMEOUT),
                        head_timeout=getattr(args, "head_timeout", HEAD_TIMEOUT),
                        max_connections=getattr(args, "max_connections", MAX_CONNECTIONS),
                        err=err,
                    )
                )
                print(f"trio-agent demo: http://{shown}:{port}/  (Ctrl+C to stop)", file=out)
                out.flush()
                if not _is_loopback(args.host):
                    print(
                        "warning: listening beyond loopback; anyone who can reach this port "
                        "can start demo workers (bash subprocesses) on this machine",
                        file=err,
                    )

    try:
        trio.run(main)
    except OSError as exc:  # the system's words, not Python's "[Errno 98]" before them
        why = exc.strerror or str(exc)
        print(f"trio-agent serve: cannot listen on {shown}:{args.port}: {why}", file=err)
        return 2
    return 0


async def _cancel_on_signal(signals: AsyncIterator[int], scope: trio.CancelScope) -> None:
    async for _ in signals:
        scope.cancel()
        return
