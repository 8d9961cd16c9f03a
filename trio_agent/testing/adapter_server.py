"""``python -m trio_agent.testing.adapter_server``: our runtime behind the harness protocol.

Reads one JSON request per line on stdin and answers on stdout (spec/harness.md):

* ``{"journal": {...}}`` lines, one per journal entry, written the moment the entry happens
  (so everything reported before a SIGKILL reaches the driver), then
* one ``{"reply": {...}}`` line that ends the request.

It hosts the same :class:`~trio_agent.testing.host.WorldHost` as the in-process adapter, in a
``trio.run`` with a ``MockClock(rate=0)``: nothing moves between requests. A crash trap that
fires here kills this process with a real ``SIGKILL`` on the spot (for ``flush`` with
``after_write``, from the writer's thread right after the batch's bytes are written); the
driver sees end-of-file and reads the durable bytes the dead process left. The driver may also
SIGKILL it between requests (``crash`` is then not sent at all).

After a reply sent without settling (``cancel`` with ``settle: false``) the next request is
read blocking the thread, so the cancelled run cannot move before that request's action.

``new_agent`` (K24) replaces the agent within this process and its world: the session stays
open, and the same process serves the new agent.

``{"op": "bye"}`` (or end of input) ends the process after tearing the current world down.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from typing import Any, NoReturn

# ``trio.testing`` imports pytest (and with it pluggy and pygments) whenever pytest is
# installed, for ``RaisesGroup``, which this server never uses; it falls back to its own code
# when the import fails. Run as a program, this server is started once per harness example:
# refuse it that import (only when nothing in this process has imported pytest already).
if __name__ == "__main__":
    sys.modules.setdefault("pytest", None)  # type: ignore[arg-type]

import orjson
import trio

from .host import WorldHost, host_clock
from .scheduling import fifo_scheduling
from .world import World

__all__ = ["main"]

#: Longest request line accepted.
MAX_LINE = 1 << 20


def _write(obj: Any) -> None:
    data = orjson.dumps(obj) + b"\n"
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


def _kill_self() -> NoReturn:
    os.kill(os.getpid(), signal.SIGKILL)
    while True:  # pragma: no cover - the signal is on its way
        time.sleep(1)


def _read_now(fd: int) -> bytes:
    """Read from ``fd`` blocking the whole thread, so no trio task runs meanwhile (the
    stream's file is non-blocking: wait for it with ``select``)."""
    while True:
        select.select([fd], [], [])
        try:
            return os.read(fd, 1 << 16)
        except BlockingIOError:
            continue


def _crash(world: World, after_write: bool) -> None:
    """A world crashed: die now, for real (no teardown, no flush, no unlock but the kernel's)."""
    # A parked batch that an injected disk failure will refuse writes nothing, so there is no
    # "after the write" to wait for: its thread would fail and return, and nothing would ever
    # kill us (a hang). Then die now; the durable bytes are the same.
    if after_write and world.ops.parked_will_write:
        world.ops.after_write = _kill_self
        world.ops.release()
        while True:  # the writer's thread writes the batch, then kills the process
            time.sleep(1)
    _kill_self()


async def _serve() -> None:
    stdin = trio.lowlevel.FdStream(os.dup(0))
    buffer = b""
    async with trio.open_nursery() as nursery:
        host = WorldHost(
            nursery,
            lambda entry: _write({"journal": entry}),
            on_crash=_crash,
            implementation="trio_agent adapter_server (subprocess)",
        )
        try:
            while True:
                while b"\n" not in buffer:
                    if len(buffer) > MAX_LINE:
                        _write({"reply": {"ok": False, "error": "request line too long"}})
                        return
                    if host.held:
                        # The last reply did not settle (cancel with settle: false): the
                        # world must not move before the next request's action happened.
                        chunk = _read_now(stdin.fileno())
                    else:
                        chunk = await stdin.receive_some(1 << 16)
                    if not chunk:
                        return
                    buffer += chunk
                line, buffer = buffer.split(b"\n", 1)
                if not line.strip():
                    continue
                try:
                    message = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    _write({"reply": {"ok": False, "error": f"not JSON: {exc}"}})
                    continue
                if not isinstance(message, dict):
                    _write({"reply": {"ok": False, "error": "a request is a JSON object"}})
                    continue
                if message.get("op") == "bye":
                    _write({"reply": {"ok": True, "result": None, "crashed": False}})
                    return
                _write({"reply": await host.handle(message)})
        finally:
            with trio.CancelScope(shield=True):
                await host.aclose()
            nursery.cancel_scope.cancel()
            await stdin.aclose()


def main() -> None:
    with fifo_scheduling():
        trio.run(_serve, clock=host_clock())


if __name__ == "__main__":
    main()
