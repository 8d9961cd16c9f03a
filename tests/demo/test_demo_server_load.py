"""The page's server holds against slow clients: 1,100 half-open connections, under a limit of
1,024 open files, do not keep a normal client from its page, and print no traceback.

The server runs as a subprocess with ``RLIMIT_NOFILE`` 1024 and a request-head timeout of an
hour, so nothing but the connection bound can make room for the normal client: if the server
needed a timeout to free a slot (or stopped accepting), the normal ``GET /`` would hang and
the hang guard would fail the test. No wall-clock figure decides: the verdict is that the
normal request completes while the half-open connections are still held, that the server
is still up, and that its stderr has no traceback.
"""

from __future__ import annotations

import resource
import signal
import socket
import subprocess
from collections.abc import Iterator

import pytest
from support.cli import CLI
from support.demo.helpers import HANG_GUARD
from support.procenv import REPO, child_env, with_signals

HALF_OPEN = 1100
FILE_LIMIT = 1024


def _limit_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILE_LIMIT, FILE_LIMIT))


@pytest.fixture
def limited_server() -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    serve = [*CLI, "serve", "--host", "127.0.0.1", "--port", "0", "--head-timeout", "3600"]
    proc = subprocess.Popen(
        with_signals(serve),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=child_env(),
        cwd=str(REPO),
        preexec_fn=_limit_files,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    assert "http://127.0.0.1:" in line, line
    port = int(line.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
    try:
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=HANG_GUARD)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _get(port: int) -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD) as sock:
        sock.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):  # the timeout is a hang guard
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def _still_open(sock: socket.socket) -> bool:
    """The server has not closed this connection (nothing to read, no EOF)."""
    sock.setblocking(False)
    try:
        return bool(sock.recv(1) and False)
    except BlockingIOError:
        return True
    except OSError:
        return False


def test_half_open_connections_do_not_starve_a_normal_client(
    limited_server: tuple[subprocess.Popen[bytes], int],
) -> None:
    proc, port = limited_server
    held: list[socket.socket] = []
    try:
        for _ in range(HALF_OPEN):
            sock = socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD)
            sock.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())  # no end
            held.append(sock)
        for _ in range(3):
            status, body = _get(port)
            assert status == 200 and b"<html" in body.lower()
        # The newest half-open connections are still held: the client above was answered
        # while they waited, not after they were given up.
        assert all(_still_open(sock) for sock in held[-50:])
        assert proc.poll() is None
    finally:
        for sock in held:
            sock.close()
    status, _ = _get(port)
    assert status == 200
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=HANG_GUARD)
    assert b"Traceback" not in err, err.decode(errors="replace")[-2000:]
    assert proc.returncode == 0
