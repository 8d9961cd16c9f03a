"""The in-process adapter: our runtime in a background trio thread, driven synchronously.

One ``trio.run`` per adapter, in a daemon thread, with a
``MockClock(rate=0)`` and no autojump, so virtual time moves only when the ``advance`` request
jumps it. Requests are plain protocol messages (spec/harness.md), round-tripped through JSON
on the way in and out so the in-process adapter cannot rely on anything the wire would lose.

A crash here freezes the file's bytes at the crash point (the writer's disk I/O is gated, so
nothing is in flight), then discards the world: its teardown may still write to the old file,
which is why the driver continues from a *copy* of the frozen bytes in a fresh directory.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import orjson
import trio

from .host import WorldHost, host_clock
from .protocol import AdapterError, Reply
from .scheduling import fifo_scheduling
from .wire import check_journal, check_reply

__all__ = ["InProcessAdapter", "TrioThread"]

T = TypeVar("T")

#: Real seconds a request may take before the harness calls it a hang.
DEFAULT_TIMEOUT: Final = 120.0

#: A call handed to the trio thread: the async function, its arguments, and where its
#: outcome goes.
_Job = tuple[Callable[..., Awaitable[Any]], tuple[Any, ...], queue.SimpleQueue[tuple[bool, Any]]]


class TrioThread:
    """One ``trio.run`` with a ``MockClock(rate=0)`` in a daemon thread.

    :meth:`call` runs an async function in it and returns its result (or raises its
    exception) in the calling thread, giving up after ``timeout`` real seconds.

    The first call starts one task that runs every call: between two calls it blocks the
    thread (synchronously, waiting for the next call), so nothing in the ``trio.run`` moves
    between them. A world replies once it has settled, and then there is nothing to move; a
    reply sent before the world settled (``cancel`` with ``settle: false``) is a still world
    until the next request's action has run. It is also the cheap way across: a call is two
    hand-overs of a plain queue, not a wake-up of trio's I/O loop and a task of its own.
    After a call that raised, the thread goes back to trio's scheduler and the next call
    starts the task again.
    """

    def __init__(self) -> None:
        self.clock = host_clock()
        self._serving = False
        self._calls: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._stop: trio.Event | None = None
        self._crash: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="harness-trio", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._crash is not None:
            raise self._crash

    def _main(self) -> None:
        async def root() -> None:
            self._token = trio.lowlevel.current_trio_token()
            self._stop = trio.Event()
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self._ready.set()
                await self._stop.wait()
                nursery.cancel_scope.cancel()

        try:
            with fifo_scheduling():
                trio.run(root, clock=self.clock)
        except BaseException as exc:
            self._crash = exc
            self._ready.set()

    @property
    def nursery(self) -> trio.Nursery:
        assert self._nursery is not None
        return self._nursery

    async def _serve(self, job: _Job) -> None:
        """Run ``job``, then each call as it arrives, until :meth:`close` sends ``None`` or a
        call raises: its exception goes to the caller, and the thread back to trio's
        scheduler (the next call starts a new task)."""
        next_job: _Job | None = job
        while next_job is not None:
            call, call_args, answer = next_job
            try:
                result = await call(*call_args)
            except BaseException as exc:  # handed to the caller's thread
                self._serving = False  # before the answer, which the caller waits for
                answer.put((False, exc))
                return
            answer.put((True, result))
            next_job = self._calls.get()  # blocks the trio thread: nothing else runs

    def call(
        self, fn: Callable[..., Awaitable[T]], *args: Any, timeout: float = DEFAULT_TIMEOUT
    ) -> T:
        if self._crash is not None:
            raise AdapterError(f"the trio thread died: {self._crash!r}") from self._crash
        box: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
        job: _Job = (fn, args, box)
        if self._serving:
            self._calls.put(job)
        else:
            assert self._token is not None
            self._serving = True
            self._token.run_sync_soon(self.nursery.start_soon, self._serve, job)
        try:
            ok, value = box.get(timeout=timeout)
        except queue.Empty:
            raise AdapterError(f"no answer within {timeout}s: the world hangs") from None
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def close(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Stop the ``trio.run`` and join its thread (``timeout``: a hang guard, as for a call)."""
        if self._serving:
            self._calls.put(None)  # the serving task returns to trio's scheduler
            self._serving = False
        if self._thread.is_alive() and self._stop is not None:
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AdapterError("the trio thread did not stop")


class InProcessAdapter:
    """Drives our runtime in this process through :class:`WorldHost` (see the module doc)."""

    def __init__(self, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._timeout = timeout
        self._journal: list[dict[str, Any]] = []
        self._thread = TrioThread()
        self._host = WorldHost(
            self._thread.nursery, self._journal.append, implementation="trio_agent in-process"
        )

    def request(self, message: dict[str, Any]) -> Reply:
        wire = orjson.loads(orjson.dumps(message))
        self._journal.clear()
        reply: Reply = self._thread.call(self._host.handle, wire, timeout=self._timeout)
        reply = dict(reply)
        reply["journal"] = list(self._journal)
        self._journal.clear()
        result: Reply = orjson.loads(orjson.dumps(reply))
        # Our own world is held to the wire shapes a port must meet (spec/harness.md).
        for entry in result["journal"]:
            check_journal(entry)
        check_reply({k: v for k, v in result.items() if k != "journal"}, str(message.get("op")))
        return result

    def crash(self) -> None:
        reply = self.request({"op": "crash"})
        if not reply.get("crashed"):
            raise AdapterError(f"crash request did not crash the world: {reply}")

    def durable_bytes(self, log_path: str) -> bytes:
        snapshot = self._host.snapshot
        if snapshot is None:
            raise AdapterError("no world has crashed")
        return snapshot

    def close(self) -> None:
        try:
            self._thread.call(self._host.aclose, timeout=self._timeout)
        finally:
            self._thread.close(self._timeout)
