"""The demo's worker process: one real agent on one real JSONL session.

``python -m trio_agent.demo.worker --root DIR --session ID --mode create|open --workdir DIR
--script JSON`` creates the session (``create``) or cold-opens it (``open``: the store's crash
recovery runs first), runs an agent with a :class:`~trio_agent.models.ScriptedModel` and a
:class:`~trio_agent.tools.subprocess_tool.BashTool`, and then does what the demo engine says.

Commands arrive as JSON lines on stdin::

    {"cmd": "followup", "text": "..."}         agent.followup(text)
    {"cmd": "esc"}                             agent.cancel(CancelCause.user())
    {"cmd": "followup_esc", "text": "..."}     followup, then cancel in the same tick
    {"cmd": "shutdown"}                        leave the agent and the store, then exit

End of input counts as ``shutdown``: if the engine goes away, the worker winds down on its own
(the running turn is cancelled with cause ``disposed``, its process group is stopped).

Reports leave as JSON lines on stdout, one object each with a ``type``: ``hello``,
``recovered``, ``ready``, ``status``, ``controller``, ``current``, ``inbox``, ``turn_ended``,
``inbox_dropped``, ``prevented``, ``cancel``, ``agent_error``, ``bad_command`` and ``bye``;
each is a class of :mod:`trio_agent.demo.reports`, whose converter writes it here and checks
it in the engine. They describe runtime state only; what is durable is read from the session
file itself.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import orjson
import trio

from ..log import scan_log
from ..log.render import describe
from ..models import ScriptedModel
from ..procs import reap_orphans
from ..runtime import (
    Agent,
    AgentError,
    CancelCause,
    InboxDropped,
    RuntimeEvent,
    StatusChanged,
    TurnController,
    TurnEnded,
    TurnPrevented,
    open_agent,
)
from ..store import JsonlStore
from ..tools.subprocess_tool import BashTool
from . import reports as r

#: Grace between SIGTERM and SIGKILL when a cancelled tool's group is stopped.
TOOL_GRACE = 1.0
#: Longest JSON command line accepted on stdin.
MAX_COMMAND = 64 * 1024


def report(obj: r.Report) -> None:
    """Write one report line to stdout (blocking, small, unbuffered)."""
    data = r.encode(obj)
    view = memoryview(data)
    while view:
        written = os.write(1, view)
        view = view[written:]


def _cause(cause: CancelCause | None) -> str | None:
    return None if cause is None else cause.describe()


class Tracker:
    """Turns session appends and runtime events into reports about controllers and inbox.

    The session observer runs synchronously inside ``append``, so at ``turn/end`` it sees the
    agent exactly as it is when that line is written: whether the turn's controller was
    already released is observed, not inferred.
    """

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self._numbers: dict[int, int] = {}
        self._keep: list[TurnController] = []  # keep ids stable: never let one be reused
        self._by_turn: dict[int, TurnController] = {}
        self._current: int | None = -1
        self._inbox: r.InboxChanged | None = None

    def number(self, controller: TurnController) -> int:
        key = id(controller)
        if key not in self._numbers:
            self._numbers[key] = len(self._numbers) + 1
            self._keep.append(controller)
        return self._numbers[key]

    def sync(self) -> None:
        controller = self.agent.controller
        n = None if controller is None else self.number(controller)
        if n != self._current:
            self._current = n
            turn = None if controller is None else controller.turn
            report(r.Current(controller=n, turn=turn))
        inbox = self.agent.session.inbox
        snapshot = r.InboxChanged(
            next_turn=[m["text"] for m in inbox.next_turn],
            next_step=[m["text"] for m in inbox.next_step],
        )
        if snapshot != self._inbox:
            self._inbox = snapshot
            report(snapshot)

    def on_append(self, event: Any) -> None:
        data = event.data
        if event.type == "turn/start":
            controller = self.agent.controller
            if controller is not None:
                self._by_turn[data["turn"]] = controller
                report(
                    r.ControllerSeen(
                        controller=self.number(controller),
                        turn=data["turn"],
                        state="live",
                        seq=event.seq,
                    )
                )
        elif event.type == "turn/end":
            controller = self._by_turn.get(data["turn"])
            if controller is not None:
                released = self.agent.controller is not controller and controller.closed
                report(
                    r.ControllerSeen(
                        controller=self.number(controller),
                        turn=data["turn"],
                        state="released" if released else "still-held",
                        seq=event.seq,
                        cause=_cause(controller.cause),
                    )
                )
        self.sync()

    def on_runtime(self, event: RuntimeEvent) -> None:
        if isinstance(event, StatusChanged):
            report(r.StatusReport(status=event.status))
        elif isinstance(event, TurnEnded):
            o = event.outcome
            report(r.TurnEndedReport(turn=o.turn, reason=o.reason, cause=_cause(o.cause)))
        elif isinstance(event, InboxDropped):
            report(
                r.InboxDropped(
                    target=event.target,
                    texts=[m["text"] for m in event.messages],
                    cause=_cause(event.cause),
                )
            )
        elif isinstance(event, TurnPrevented):
            report(r.Prevented(cause=_cause(event.cause), parked=event.parked))
        elif isinstance(event, AgentError):
            report(r.AgentErrorReport(message=event.message))
        self.sync()

    def cancel(self, agent: Agent) -> None:
        controller = agent.controller
        hit = agent.cancel(CancelCause.user())
        report(
            r.Cancelled(
                cause="user",
                hit=hit,
                controller=None if controller is None else self.number(controller),
                turn=None if controller is None else controller.turn,
            )
        )
        self.sync()


async def _read_commands(agent: Agent, tracker: Tracker) -> None:
    stream = trio.lowlevel.FdStream(os.dup(0))
    buffer = b""
    async with stream:
        while True:
            data = await stream.receive_some(65536)
            if not data:
                return  # the engine went away: shut down
            buffer += data
            if len(buffer) > MAX_COMMAND and b"\n" not in buffer:
                report(r.BadCommand(message="command line too long"))
                buffer = b""
                continue
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                if not _run_command(line, agent, tracker):
                    return


def _run_command(line: bytes, agent: Agent, tracker: Tracker) -> bool:
    """Run one command; False means shut down."""
    try:
        cmd = orjson.loads(line)
    except orjson.JSONDecodeError:
        report(r.BadCommand(message="not JSON"))
        return True
    kind = cmd.get("cmd") if isinstance(cmd, dict) else None
    text = cmd.get("text") if isinstance(cmd, dict) else None
    if kind == "shutdown":
        return False
    try:
        if kind == "esc":
            tracker.cancel(agent)
        elif kind in ("followup", "followup_esc") and isinstance(text, str) and text:
            agent.followup(text)
            tracker.sync()
            if kind == "followup_esc":
                tracker.cancel(agent)  # same tick: the controller made at wake is already live
        else:
            report(r.BadCommand(message=f"unknown command {kind!r}"))
    except Exception as exc:  # report it; the engine shows it, the agent keeps running
        report(r.AgentErrorReport(message=f"{kind}: {type(exc).__name__}: {exc}"))
    return True


async def run_worker(args: argparse.Namespace) -> None:
    script = orjson.loads(args.script)
    report(r.Hello(pid=os.getpid(), mode=args.mode))
    async with JsonlStore(args.root, reap_orphans=reap_orphans) as store:
        if args.mode == "create":
            session = await store.create(args.session)
        else:
            path = store.path_of(args.session)
            before = len(scan_log(path.read_bytes(), strict=False).events)
            session = await store.open(args.session)
            closers = list(session.events)[before:]
            report(
                r.Recovered(
                    closers=[r.Closer(seq=e.seq, type=e.type, text=describe(e)) for e in closers]
                )
            )
        model = ScriptedModel(script)
        tools = [BashTool(cwd=args.workdir, grace=TOOL_GRACE)]
        async with open_agent(session, model=model, tools=tools) as agent:
            tracker = Tracker(agent)
            session.subscribe(tracker.on_append)
            agent.subscribe(tracker.on_runtime)
            report(r.Ready(events=len(session.events)))
            tracker.sync()
            await _read_commands(agent, tracker)
    report(r.Bye())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trio_agent.demo.worker")
    parser.add_argument("--root", required=True)
    parser.add_argument("--session", required=True)
    parser.add_argument("--mode", choices=["create", "open"], required=True)
    parser.add_argument("--workdir", required=True, type=Path)
    parser.add_argument("--script", required=True, help="the ScriptedModel script, as JSON")
    args = parser.parse_args(argv)
    trio.run(run_worker, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
