"""``trio-agent serve``: the page, the websocket, and robustness against bad clients.

The server runs as a real subprocess (``python -m trio_agent serve --port 0``). After each
test the leak guard checks that no worker, bash tool or server process is left.
"""

from __future__ import annotations

import contextlib
import re
import signal
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest
import trio
import trio_websocket
from support.demo.helpers import HANG_GUARD, ServerProcess, http, server_process
from support.polling import until
from support.proc import children_of, in_group
from support.procenv import child_env

from trio_agent.demo.server import MAX_MESSAGE


@pytest.fixture
async def server() -> AsyncIterator[ServerProcess]:
    async with server_process() as srv:
        yield srv


def get(path: str, host: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()


@contextlib.asynccontextmanager
async def client(
    srv: ServerProcess, origin: str | None = None
) -> AsyncIterator[trio_websocket.WebSocketConnection]:
    """A websocket client on a TCP stream we own: trio-websocket's own client does not close
    its socket after some server-side closes (a ResourceWarning, an error here)."""
    headers = [(b"origin", (origin or srv.origin).encode())]
    stream = await trio.open_tcp_stream("127.0.0.1", srv.port)
    async with stream, trio.open_nursery() as nursery:
        ws = await trio_websocket.wrap_client_stream(
            nursery, stream, f"127.0.0.1:{srv.port}", "/ws", extra_headers=headers
        )
        try:
            hello = orjson.loads(await ws.get_message())
            assert hello["type"] == "hello"
            assert [s["name"] for s in hello["scenarios"]] == ["esc", "kill", "truncate"]
            yield ws
        finally:
            with trio.move_on_after(5, shield=True):
                await ws.aclose()
            nursery.cancel_scope.cancel()


async def send(ws: trio_websocket.WebSocketConnection, msg: Any) -> None:
    await ws.send_message(msg if isinstance(msg, str | bytes) else orjson.dumps(msg).decode())


async def next_of(ws: trio_websocket.WebSocketConnection, kind: str) -> dict[str, Any]:
    with trio.fail_after(HANG_GUARD):
        while True:
            msg = orjson.loads(await ws.get_message())
            if msg["type"] == kind:
                result: dict[str, Any] = msg
                return result


async def state_where(
    ws: trio_websocket.WebSocketConnection, pred: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    with trio.fail_after(HANG_GUARD):
        while True:
            msg = await next_of(ws, "state")
            if pred(msg["state"]):
                state: dict[str, Any] = msg["state"]
                return state


# -- plain HTTP --------------------------------------------------------------------------------


async def test_plain_get_serves_one_self_contained_page(server: ServerProcess) -> None:
    host = f"127.0.0.1:{server.port}"
    status, headers, body = await http(server.port, get("/", host))
    assert status == 200
    assert headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in headers["content-security-policy"]
    page = body.decode()
    assert page.startswith("<!doctype html>")
    assert "<style>" in page and "<script>" in page
    # No external assets: nothing is loaded from anywhere but the page itself.
    assert re.findall(r'(?:src|href)\s*=\s*"(?!data:)', page) == []
    assert "@import" not in page and re.findall(r"url\((?!#)", page) == []  # url(#id): local
    assert page.count("<svg") == 1  # the turn's-life diagram, inlined from its own file
    # The scenario buttons are drawn by the script from the server's hello; the rest is static.
    for needle in ("Next ▸", "Auto-play", "↺ Reset", 'id="log"', 'id="runtime"', "data-scenario"):
        assert needle in page

    status, _, _ = await http(server.port, get("/", f"localhost:{server.port}"))
    assert status == 200


async def test_other_requests_get_short_errors(server: ServerProcess) -> None:
    host = f"127.0.0.1:{server.port}"
    assert (await http(server.port, get("/nope", host)))[0] == 404
    assert (await http(server.port, get("/", "evil.example:80")))[0] == 403  # DNS rebinding
    post = f"POST / HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\n\r\n".encode()
    assert (await http(server.port, post))[0] == 405
    assert (await http(server.port, b"\x16\x03\x01garbage\r\n\r\n"))[0] == 400
    # A websocket path without the upgrade is just a page that is not there.
    assert (await http(server.port, get("/ws", host)))[0] == 404
    assert (await http(server.port, get("/healthz", host)))[0] == 200


async def test_head_gets_the_headers_and_no_body(server: ServerProcess) -> None:
    host = f"127.0.0.1:{server.port}"
    request = f"HEAD / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
    status, headers, body = await http(server.port, request)
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert int(headers["content-length"]) > 1000  # the page's length, announced
    assert body == b""  # and not sent


# -- websocket ---------------------------------------------------------------------------------


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1:1", None])
async def test_wrong_origin_is_refused_with_403(server: ServerProcess, origin: str | None) -> None:
    headers = [] if origin is None else [(b"origin", origin.encode())]
    # Our own stream: trio-websocket does not close its socket after a rejected handshake.
    async with await trio.open_tcp_stream("127.0.0.1", server.port) as stream:
        rejected = pytest.RaisesGroup(trio_websocket.ConnectionRejected, flatten_subgroups=True)
        with rejected as info:
            async with trio.open_nursery() as nursery:
                await trio_websocket.wrap_client_stream(
                    nursery, stream, f"127.0.0.1:{server.port}", "/ws", extra_headers=headers
                )
    error = info.value.exceptions[0]
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    assert isinstance(error, trio_websocket.ConnectionRejected)
    assert error.status_code == 403
    assert b"Origin" in (error.body or b"")
    async with client(server):  # the server keeps serving
        pass


async def test_bad_messages_get_error_frames_and_the_connection_goes_on(
    server: ServerProcess,
) -> None:
    async with client(server) as ws:
        bad: list[tuple[Any, str]] = [
            ("not json", "not JSON"),
            ("[1, 2]", "JSON object"),
            ('{"type": 7}', '"type" must be a string'),
            ({"type": "select", "scenario": []}, "scenario"),
            ({"type": "select"}, "scenario"),
            ({"type": "ping", "extra": 1}, "extra"),
            ({"type": "frobnicate"}, "unknown message type"),
            ({"type": "select", "scenario": "nope"}, "must be one of 'esc', 'kill', 'truncate'"),
            ({"type": "play"}, "select a scenario first"),
            ({"type": "step"}, "select a scenario first"),
            ({"type": "reset"}, "select a scenario first"),
            (b"\x00\x01binary", "binary frames"),
        ]
        for message, expected in bad:
            await send(ws, message)
            error = await next_of(ws, "error")
            assert expected in error["message"], (message, error)
        await send(ws, {"type": "select", "scenario": "esc"})
        await state_where(ws, lambda s: s["ready"])
        for dwell in ("fast", -1, 1e9, True):
            await send(ws, {"type": "play", "dwell": dwell})
            assert "dwell" in (await next_of(ws, "error"))["message"]
        await send(ws, {"type": "ping"})
        await next_of(ws, "pong")


async def test_every_malformed_frame_is_worded_as_a_bad_message(server: ServerProcess) -> None:
    """A frame that is not a client message, whatever is wrong with it, gets one wording:
    ``bad message: ...``, with the offending field when there is one."""
    async with client(server) as ws:
        bad: list[tuple[Any, str | None]] = [
            ("not json", None),
            ("[1, 2]", None),
            (b"\x00\x01binary", None),
            ("{}", "type"),
            ('{"type": 7}', "type"),
            ({"type": "frobnicate"}, "type"),
            ({"type": "select"}, "scenario"),
            ({"type": "select", "scenario": "nope"}, "scenario"),
            ({"type": "ping", "extra": 1}, "extra"),
            ({"type": "play", "dwell": -1}, "dwell"),
        ]
        for message, field in bad:
            await send(ws, message)
            error = await next_of(ws, "error")
            assert error["message"].startswith("bad message: "), (message, error)
            assert error["field"] == field, (message, error)
            if field is not None:
                assert field in error["message"], (message, error)
        await send(ws, {"type": "ping"})
        await next_of(ws, "pong")


async def test_oversized_message_closes_with_1009_and_server_stays_up(
    server: ServerProcess,
) -> None:
    async with client(server) as ws:
        await send(ws, "x" * (MAX_MESSAGE + 1))
        with pytest.raises(trio_websocket.ConnectionClosed) as info, trio.fail_after(HANG_GUARD):
            while True:
                await ws.get_message()
        assert info.value.reason is not None and info.value.reason.code == 1009
    async with client(server) as ws:
        await send(ws, {"type": "ping"})
        await next_of(ws, "pong")


async def _start_tool(ws: trio_websocket.WebSocketConnection) -> dict[str, Any]:
    await send(ws, {"type": "select", "scenario": "esc"})
    await state_where(ws, lambda s: s["ready"])
    await send(ws, {"type": "step"})
    return await state_where(
        ws, lambda s: s["completed"] >= 1 and any(g["alive"] for g in s["runtime"]["groups"])
    )


async def _gone(pids: list[int], pgid: int, server_pid: int) -> None:
    def gone() -> bool:
        return not (in_group(pgid) or children_of(server_pid) or any(map(in_group, pids)))

    await until(gone, guard=HANG_GUARD, period=0.05)


@pytest.mark.slow  # long: make test-fast leaves it out
@pytest.mark.parametrize("how", ["close", "drop"])
async def test_client_disconnecting_mid_scenario_stops_its_processes(
    server: ServerProcess, how: str
) -> None:
    """A clean close and a dropped TCP connection both tear the client's run down."""
    stream = await trio.open_tcp_stream("127.0.0.1", server.port)
    async with trio.open_nursery() as nursery:
        ws = await trio_websocket.wrap_client_stream(
            nursery,
            stream,
            f"127.0.0.1:{server.port}",
            "/ws",
            extra_headers=[(b"origin", server.origin.encode())],
        )
        await next_of(ws, "hello")
        state = await _start_tool(ws)
        worker = state["runtime"]["workers"][0]["pid"]
        pgid = state["runtime"]["groups"][0]["pgid"]
        assert in_group(pgid) and children_of(server.proc.pid) == [worker]
        if how == "close":
            await ws.aclose()
        await stream.aclose()  # for "drop": no close frame, the TCP connection just goes away
        nursery.cancel_scope.cancel()
    await _gone([worker], pgid, server.proc.pid)
    async with client(server) as ws:  # a later client still works
        state = await _start_tool(ws)
        assert state["runtime"]["groups"][0]["pgid"] != pgid


@pytest.mark.slow  # long: make test-fast leaves it out
async def test_several_clients_each_get_their_own_run(server: ServerProcess) -> None:
    async with client(server) as a, client(server) as b:
        sa = await _start_tool(a)
        sb = await _start_tool(b)
        assert sa["log"]["path"] != sb["log"]["path"]
        assert sa["runtime"]["workers"][0]["pid"] != sb["runtime"]["workers"][0]["pid"]
        assert sorted(children_of(server.proc.pid)) == sorted(
            [sa["runtime"]["workers"][0]["pid"], sb["runtime"]["workers"][0]["pid"]]
        )
        # Esc in one run leaves the other untouched.
        await send(a, {"type": "step"})  # queue a follow-up
        await state_where(a, lambda s: s["completed"] >= 2)
        await send(a, {"type": "step"})  # Esc
        done = await state_where(a, lambda s: s["completed"] >= 3)
        assert [i["text"] for i in done["log"]["items"] if i["type"] == "turn/end"] == [
            "turn/end 1 ABORTED"
        ]
        await send(b, {"type": "ping"})
        await next_of(b, "pong")
        pgid_b = sb["runtime"]["groups"][0]["pgid"]
        assert in_group(pgid_b), "client b's tool was touched by client a's Esc"


async def test_switching_scenario_replaces_the_run(server: ServerProcess) -> None:
    async with client(server) as ws:
        first = await _start_tool(ws)
        pgid = first["runtime"]["groups"][0]["pgid"]
        await send(ws, {"type": "select", "scenario": "kill"})
        state = await state_where(ws, lambda s: s["scenario"]["name"] == "kill" and s["ready"])
        assert state["log"]["path"] != first["log"]["path"]
        assert in_group(pgid) == []
        assert len(children_of(server.proc.pid)) == 1


async def test_port_in_use_is_a_one_line_error(server: ServerProcess) -> None:
    done = await trio.run_process(
        [sys.executable, "-m", "trio_agent", "serve", "--port", str(server.port)],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        env=child_env(),
    )
    assert done.returncode == 2
    err = done.stderr.decode()
    assert err.count("\n") == 1 and "cannot listen on 127.0.0.1" in err


async def test_every_client_gets_every_reply_under_load(server: ServerProcess) -> None:
    """Replies go through a bounded queue and are sent without a timeout: none is dropped."""
    clients, pings = 60, 20
    pongs = [0] * clients

    async def one(i: int) -> None:
        async with client(server) as ws:
            for _ in range(pings):
                await send(ws, {"type": "ping"})
            for _ in range(pings):
                await next_of(ws, "pong")
                pongs[i] += 1

    async with trio.open_nursery() as nursery:
        for i in range(clients):
            nursery.start_soon(one, i)
    assert pongs == [pings] * clients


async def test_a_busy_server_tells_every_refused_client() -> None:
    async with server_process("--max-runs", "1") as srv, client(srv) as first:
        await send(first, {"type": "select", "scenario": "esc"})
        await state_where(first, lambda s: s["ready"])
        refused = 0

        async def one() -> None:
            nonlocal refused
            async with client(srv) as ws:
                await send(ws, {"type": "select", "scenario": "kill"})
                error = await next_of(ws, "error")
                assert error["message"].startswith("server busy")
                refused += 1

        async with trio.open_nursery() as nursery:
            for _ in range(40):
                nursery.start_soon(one)
        assert refused == 40


@pytest.mark.parametrize("ignored", [signal.SIGHUP, signal.SIGINT], ids=["nohup", "background"])
async def test_a_signal_started_ignored_stays_ignored(ignored: signal.Signals) -> None:
    """Started under ``nohup`` (SIGHUP ignored) or as a script's background job (SIGINT
    ignored), the server goes on serving when that signal comes (it once took both, and
    stopped): spec/cli.md §Stopping signals. Taken, it would close its listener before it
    could read the request sent after the signal."""
    async with server_process(ignored=[ignored]) as srv:
        srv.proc.send_signal(ignored)
        status, _, body = await http(srv.port, get("/", f"127.0.0.1:{srv.port}"))
        assert status == 200 and b"<html" in body.lower()
        assert srv.proc.returncode is None


async def test_an_idle_websocket_is_closed() -> None:
    async with server_process("--idle-timeout", "0.5") as srv, client(srv) as ws:
        # Send nothing; the server closes the socket (the close is what is waited for).
        with trio.fail_after(HANG_GUARD), pytest.raises(trio_websocket.ConnectionClosed) as info:
            while True:
                await ws.get_message()
        assert info.value.reason is not None and info.value.reason.code == 1001
