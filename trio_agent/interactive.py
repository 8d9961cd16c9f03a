"""``trio-agent run``: a tiny interactive agent on a real session, to feel Ctrl-C.

Each line typed on stdin is a follow-up; :class:`ShellModel` answers it by running the line
as a ``bash`` command (a real :class:`~trio_agent.tools.BashTool`, in its own process group)
and then reports the result. The log of the session is printed as it is appended.

Ctrl-C (spec/tools.md, "Ctrl-C"): tools run in their own session, so the terminal's SIGINT no
longer reaches them; the runtime turns it into ``cancel(user)`` for the running turn, which
stops the tool's whole process group. A Ctrl-C while idle, or a second one while a cancel is
still being delivered, shuts down gracefully (queued work is kept) and exits with 130.
"""

from __future__ import annotations

import argparse
import os
import signal
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, TextIO

import trio

from .log.events import Event
from .log.render import describe
from .models.base import ModelRequest, StepContext
from .runtime import CancelCause, TurnEnded, TurnPrevented, open_agent
from .store import JsonlStore, SessionNotFound
from .tools.subprocess_tool import BashTool

INTERRUPTED = 130


class ShellModel:
    """Runs the user's text as a bash command, then summarises the tool's result.

    Deterministic and offline like ``ScriptedModel``, but driven by what was typed.
    """

    def __init__(self, chunk_delay: float = 0.0) -> None:
        self.chunk_delay = chunk_delay

    async def stream(
        self, request: ModelRequest, ctx: StepContext
    ) -> AsyncIterator[Mapping[str, Any]]:
        last = request.messages[-1] if request.messages else None
        if last is not None and last["role"] == "user":
            command = last["text"]
            for piece in ("Running ", f"`{command}`", " in bash."):
                await trio.sleep(self.chunk_delay)
                yield {"type": "text-delta", "text": piece}
            call = {"command": command}
            call_id = f"call-{ctx.turn}-{ctx.step}"
            yield {"type": "tool-call", "id": call_id, "name": "bash", "arguments": call}
            yield {"type": "finish", "reason": "tool-calls"}
            return
        await trio.sleep(self.chunk_delay)
        if last is not None and last["role"] == "tool":
            verdict = "failed" if last["isError"] else "finished"
            yield {"type": "text-delta", "text": f"The command {verdict}."}
        else:
            yield {"type": "text-delta", "text": "Nothing to do."}
        yield {"type": "finish", "reason": "stop"}


async def _open_or_create(store: JsonlStore, session_id: str, err: TextIO) -> Any:
    try:
        session = await store.open(session_id)
    except SessionNotFound:
        return await store.create(session_id)
    print(f"opened {session_id!r}: {len(session.events)} events", file=err)
    return session


async def _read_lines(send: trio.MemorySendChannel[str]) -> None:
    stream = trio.lowlevel.FdStream(os.dup(0))
    buffer = b""
    async with send, stream:
        while True:
            data = await stream.receive_some()
            if not data:
                break
            buffer += data
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                await send.send(line.decode(errors="replace"))
        if buffer.strip():
            await send.send(buffer.decode(errors="replace"))


async def run_interactive(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    exit_code = 0
    with trio.open_signal_receiver(signal.SIGINT) as interrupts:
        async with JsonlStore(root) as store:
            session = await _open_or_create(store, args.session, err)

            def show(event: Event) -> None:
                print(f"[{event.seq}] {describe(event)}", file=out, flush=True)

            unsubscribe = session.subscribe(show)
            try:
                async with (
                    open_agent(session, model=ShellModel(), tools=[BashTool()]) as agent,
                    trio.open_nursery() as nursery,
                ):

                    def report(ev: object) -> None:
                        if isinstance(ev, TurnEnded) and ev.outcome.cause is not None:
                            print(f"(turn {ev.outcome.turn}: {ev.outcome.cause})", file=err)
                        elif isinstance(ev, TurnPrevented):
                            print(f"(no turn started: {ev.cause})", file=err)

                    agent.subscribe(report)
                    lines_send, lines = trio.open_memory_channel[str](0)
                    nursery.start_soon(_read_lines, lines_send)

                    async def watch_interrupts() -> None:
                        nonlocal exit_code
                        async for _ in interrupts:
                            controller = agent.controller
                            if controller is None or controller.cancel_called:
                                # Idle, or a cancel is already on its way: leave, gracefully.
                                exit_code = INTERRUPTED
                                nursery.cancel_scope.cancel()
                                return
                            agent.cancel(CancelCause.user())
                            print("(cancel requested; Ctrl-C again to quit)", file=err)

                    nursery.start_soon(watch_interrupts)
                    async for line in lines:
                        if line.strip():
                            agent.followup(line)
                    await agent.wait_idle()
                    nursery.cancel_scope.cancel()
            finally:
                unsubscribe()
                await session.aclose()
    return exit_code


def main_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    return trio.run(run_interactive, args, out, err)
