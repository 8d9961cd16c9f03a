"""``WorldHost``: answers harness protocol requests (spec/harness.md) with real worlds.

The same object serves the in-process adapter (called through a background trio thread) and
the JSON-lines server (``python -m trio_agent.testing.adapter_server``): it owns the current
:class:`~trio_agent.testing.world.World`, turns each request into actions on it, settles it,
and returns the reply. Journal entries go to ``emit`` as they happen (the server writes each
one to stdout at once, so the entries written before a real SIGKILL still reach the driver).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import trio

from .protocol import POINTS, PROTOCOL, Reply
from .world import World

__all__ = ["WorldHost"]

_CAUSES: Final = ("user", "parent")


class RequestError(ValueError):
    """A request that does not fit the protocol or the world's current state."""


def _bool(message: dict[str, Any], key: str, default: bool = False) -> bool:
    value = message.get(key, default)
    if type(value) is not bool:
        raise RequestError(f"{key} must be a boolean")
    return value


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
        op = message.get("op")
        if op == "hello":
            return {"protocol": PROTOCOL, "implementation": self._implementation, "points": POINTS}
        if op == "start":
            return await self._start(message)
        world = self.world
        if world is None or world.done.is_set():
            raise RequestError(f"{op!r} needs a running world: send start first")
        if op in ("followup", "steer", "inject"):
            text = message.get("text")
            if type(text) is not str:
                raise RequestError("text must be a string")
            result: Any = {"id": world.send(op, text)}
        elif op == "cancel":
            cause = message.get("cause", "user")
            if cause not in _CAUSES:
                raise RequestError(f"cause must be one of {_CAUSES}")
            keep_inbox = _bool(message, "keep_inbox")
            settle = _bool(message, "settle", True)
            where = world.where()
            hit = world.cancel(cause, keep_inbox, where=f"now:{where}")
            result = {"hit": hit, "where": where}
            if not settle:
                self.held = True  # reply before the cancelled run unwinds
                return result
        elif op == "advance":
            ticks = message.get("ticks", 1)
            seconds = message.get("seconds", 1.0)
            if type(ticks) is not int or not 1 <= ticks <= 1000:
                raise RequestError("ticks must be an integer in 1..1000")
            if type(seconds) not in (int, float) or not 0 < seconds <= 3600:
                raise RequestError("seconds must be a number in (0, 3600]")
            clock = trio.lowlevel.current_clock()
            for _ in range(ticks):
                clock.jump(float(seconds))  # type: ignore[attr-defined]
                await world.settle()
                if world.dead:
                    break
            return None
        elif op in ("tool", "approval"):
            decision = message.get("decision")
            allowed = ("finish", "fail") if op == "tool" else ("allow", "deny")
            if decision not in allowed:
                raise RequestError(f"decision must be one of {allowed}")
            result = {"call": world.decide(op, decision)}
        elif op == "flush":
            self._nursery.start_soon(world.flush_task)
            result = None
        elif op == "disk":
            fail = message.get("fail")
            if type(fail) is not int or not 0 <= fail <= 100:
                raise RequestError("fail must be an integer in 0..100")
            world.ops.fail_next += fail
            result = None
        elif op == "arm":
            point = message.get("point")
            action = message.get("action")
            if point not in POINTS:
                raise RequestError(f"unknown point {point!r}")
            if not isinstance(action, dict) or action.get("kind") not in ("crash", "cancel"):
                raise RequestError("action must be {kind: crash|cancel, ...}")
            if action["kind"] == "cancel":
                if action.get("cause") not in _CAUSES:
                    raise RequestError(f"cause must be one of {_CAUSES}")
                _bool(action, "keep_inbox")
            else:
                _bool(action, "after_write")
            world.arm(point, action)
            result = None
        elif op == "shutdown":
            world.stop.set()
            for _ in range(100):
                await world.settle()
                if world.done.is_set() or world.dead:
                    break
                await trio.sleep(0)
            else:
                raise RuntimeError("the world did not shut down (something waits on virtual time)")
            return {"closed_ok": world.closed_ok}
        elif op == "crash":
            result = {"where": world.where()}
            world.crash()
            return result
        else:
            raise RequestError(f"unknown op {op!r}")
        await world.settle()
        return result

    async def _start(self, message: dict[str, Any]) -> Any:
        old = self.world
        if old is not None and not old.done.is_set():
            raise RequestError("a world is already running: shutdown or crash it first")
        log = message.get("log")
        plan = message.get("plan", [])
        if type(log) is not str:
            raise RequestError("log must be a path string")
        if not isinstance(plan, list) or not all(type(p) is str for p in plan):
            raise RequestError("plan must be a list of menu names")
        world = World(
            log_path=log,
            create=_bool(message, "create"),
            plan=plan,
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
