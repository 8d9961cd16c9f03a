"""``WorldHost``: answers harness protocol requests (spec/harness.md) with real worlds.

The same object serves the in-process adapter (called through a background trio thread) and
the JSON-lines server (``python -m trio_agent.testing.adapter_server``): it owns the current
:class:`~trio_agent.testing.world.World`, turns each request into actions on it, settles it,
and returns the reply. Journal entries go to ``emit`` as they happen (the server writes each
one to stdout at once, so the entries written before a real SIGKILL still reach the driver).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import trio
import trio.testing

from .protocol import CLOCK_START, POINTS, PROTOCOL, AdapterError, Reply, trap_points
from .wire import (
    AdvanceRequest,
    ApprovalRequest,
    ArmRequest,
    BareRequest,
    CancelRequest,
    DiskRequest,
    HelloRequest,
    SendRequest,
    StartRequest,
    ToolRequest,
    parse_request,
)
from .world import World

__all__ = ["WorldHost", "host_clock"]


def host_clock() -> trio.testing.MockClock:
    """The clock a host's ``trio.run`` runs on: virtual and still (``rate=0``, no autojump),
    so time moves only when asked, starting at :data:`~.protocol.CLOCK_START`."""
    clock = trio.testing.MockClock(rate=0)
    clock.jump(CLOCK_START)
    return clock


class RequestError(ValueError):
    """A request that does not fit the protocol or the world's current state."""


class WorldHost:
    """Hosts one world at a time in ``nursery`` (see the module docstring).

    ``on_crash(world, after_write)`` is called when a world crashes (a trap fired or a
    ``crash`` request): the in-process host only keeps the frozen bytes; the server kills its
    own process there.
    """

    def __init__(
        self,
        nursery: trio.Nursery,
        emit: Callable[[dict[str, Any]], None],
        *,
        on_crash: Callable[[World, bool], None] | None = None,
        implementation: str = "trio_agent (in-process)",
    ) -> None:
        self._nursery = nursery
        self._emit = emit
        self._on_crash = on_crash or (lambda world, after_write: None)
        self._implementation = implementation
        self.world: World | None = None
        #: The last reply was sent without settling (``cancel`` with ``settle: false``): the
        #: serving loop must not let the world move until the next request has been read, and
        #: then performs that request's action first (spec/harness.md §Requests).
        self.held = False
        #: The frozen durable bytes of the last crashed world.
        self.snapshot: bytes | None = None

    async def handle(self, message: dict[str, Any]) -> Reply:
        """Answer one request. Never raises for a bad request: the reply says ``ok: false``."""
        self.held = False
        try:
            result = await self._dispatch(message)
        except Exception as exc:  # reported to the driver, which fails the run
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "crashed": False}
        world = self.world
        if world is not None and world.dead:
            await self._discard(world)
            return {"ok": True, "result": result, "state": None, "crashed": True}
        state = world.state() if world is not None else None
        return {"ok": True, "result": result, "state": state, "crashed": False}

    async def _dispatch(self, message: dict[str, Any]) -> Any:
        try:
            request = parse_request(message)
        except AdapterError as exc:  # worded for the driver: "protocol: request ...: ... @ $.x"
            raise RequestError(str(exc)) from None
        if isinstance(request, HelloRequest):
            return {"protocol": PROTOCOL, "implementation": self._implementation, "points": POINTS}
        if isinstance(request, StartRequest):
            return await self._start(request)
        world = self.world
        if world is None or world.done.is_set():
            raise RequestError(f"{request.op!r} needs a running world: send start first")
        result: Any = None
        match request:
            case SendRequest(op=op, text=text):
                result = {"id": world.send(op, text)}
            case CancelRequest(cause=cause, keep_inbox=keep_inbox, settle=settle):
                where = world.where()
                hit = world.cancel(cause, keep_inbox, where=f"now:{where}")
                result = {"hit": hit, "where": where}
                if not settle:
                    self.held = True  # reply before the cancelled run unwinds
                    return result
            case AdvanceRequest(ticks=ticks, seconds=seconds):
                if not 1 <= ticks <= 1000:
                    raise RequestError("ticks must be an integer in 1..1000")
                if not 0 < seconds <= 3600:
                    raise RequestError("seconds must be a number in (0, 3600]")
                clock = trio.lowlevel.current_clock()
                for _ in range(ticks):
                    clock.jump(float(seconds))  # type: ignore[attr-defined]
                    await world.settle()
                    if world.dead:
                        break
                return None
            case ToolRequest(decision=decision):
                result = {"call": world.decide("tool", decision)}
            case ApprovalRequest(decision=decision):
                result = {"call": world.decide("approval", decision)}
            case DiskRequest(fail=fail):
                if not 0 <= fail <= 100:
                    raise RequestError("fail must be an integer in 0..100")
                world.ops.fail_next += fail
            case ArmRequest(point=point, action=action):
                armed = attrs.asdict(action)
                if point not in trap_points(armed["kind"]):
                    raise RequestError(f"{point} takes only a cancel trap, not {armed['kind']}")
                world.arm(point, armed)
            case BareRequest(op="flush"):
                self._nursery.start_soon(world.flush_task)
            case BareRequest(op="shutdown"):
                world.stop.set()
                for _ in range(100):
                    await world.settle()
                    if world.done.is_set() or world.dead:
                        break
                    await trio.sleep(0)
                else:
                    raise RuntimeError(
                        "the world did not shut down (something waits on virtual time)"
                    )
                return {"closed_ok": world.closed_ok}
            case BareRequest(op="new_agent"):
                if world.renewing:
                    raise RequestError("an agent is already being replaced")
                world.renew()
                for _ in range(100):
                    await world.settle()
                    if world.renewed or world.done.is_set() or world.dead:
                        break
                    await trio.sleep(0)
                else:
                    raise RuntimeError(
                        "the agent did not shut down for a new one (something waits on "
                        "virtual time)"
                    )
                return {"second": world.second}
            case BareRequest(op="crash"):
                result = {"where": world.where()}
                world.crash()
                return result
            case _:  # bye is the serving loop's, never the world's
                raise RequestError(f"unknown op {request.op!r}")
        await world.settle()
        return result

    async def _start(self, request: StartRequest) -> Any:
        old = self.world
        if old is not None and not old.done.is_set():
            raise RequestError("a world is already running: shutdown or crash it first")
        world = World(
            log_path=request.log,
            create=request.create,
            plan=request.plan,
            emit=self._emit,
            on_crash=self._crashed,
        )
        self.world = world
        await self._nursery.start(world.run)
        await world.settle()
        return {"events": len(world.session.events) if world.session is not None else 0}

    def _crashed(self, world: World, after_write: bool) -> None:
        self.snapshot = world.snapshot
        self._on_crash(world, after_write)

    async def _discard(self, world: World) -> None:
        with trio.CancelScope(shield=True):
            await world.teardown()

    async def aclose(self) -> None:
        """Tear down the current world, whatever state it is in."""
        self.held = False
        world = self.world
        if world is not None and not world.done.is_set():
            await self._discard(world)
