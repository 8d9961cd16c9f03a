"""Helpers for the demo tests: a demo server subprocess, raw HTTP (the /proc probes and the
child environment are tests/support's).

Waits poll real state; their bounds are hang guards, never expectations about speed.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Sequence

import trio

from support.procenv import REPO, child_env, with_signals
from trio_agent.demo.engine import Driver

TAG_VAR = "TRIO_AGENT_DEMO_TEST_TAG"
HANG_GUARD = 60.0


def stepped(driver: Driver, n: int, *, stop_on_error: bool = True) -> Callable[[], bool]:
    """The condition a test waits on after asking for step ``n``: the driver completed it
    (or, unless ``stop_on_error`` is false, failed)."""

    def reached() -> bool:
        return driver.completed >= n or (stop_on_error and driver.error is not None)

    return reached


class ServerProcess:
    def __init__(self, proc: trio.Process, port: int) -> None:
        self.proc = proc
        self.port = port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextlib.asynccontextmanager
async def server_process(
    *extra: str, ignored: Sequence[signal.Signals] = ()
) -> AsyncIterator[ServerProcess]:
    """``python -m trio_agent serve --port 0 [extra...]`` in a subprocess, started with the
    ``ignored`` signals ignored (:func:`~support.procenv.with_signals`); stopped with SIGINT,
    or SIGTERM if SIGINT is ignored."""
    serve = [sys.executable, "-m", "trio_agent", "serve", "--host", "127.0.0.1", "--port", "0"]
    proc = await trio.lowlevel.open_process(
        with_signals([*serve, *extra], ignored=ignored),
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=child_env(),
        cwd=str(REPO),
    )
    assert proc.stdout is not None
    try:
        buffer = b""
        with trio.fail_after(HANG_GUARD):
            while b"\n" not in buffer:
                data = await proc.stdout.receive_some(4096)
                assert data, "the server exited before printing its URL"
                buffer += data
        line = buffer.split(b"\n", 1)[0].decode()
        port = int(line.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
        yield ServerProcess(proc, port)
    finally:
        with trio.CancelScope(shield=True):
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM if signal.SIGINT in ignored else signal.SIGINT)
                with trio.move_on_after(HANG_GUARD):
                    await proc.wait()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            await proc.stdout.aclose()


async def http(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send a raw HTTP/1.1 request; return status, headers and body (connection: close)."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(request)
        data = b""
        with trio.fail_after(HANG_GUARD):
            while chunk := await stream.receive_some(65536):
                data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        key, _, value = line.partition(":")
        headers[key.strip().lower()] = value.strip()
    return status, headers, body
