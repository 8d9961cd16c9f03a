"""Child processes for the store's kill -9 tests (run as a script, never imported by pytest).

``python store_child.py zygote`` starts a fork server: it imports everything once, then reads
one JSON command per line on stdin and forks a child per command, so each of the hundreds of
processes the tests SIGKILL costs a fork rather than an interpreter start. Protocol (stdout,
one line per message, each a single atomic ``write``):

    parent → zygote   {"op": "torture" | "repair" | "hold", ...}   → "pid <pid>"
                      {"op": "reap", "pid": <pid>}                 → "reaped <pid> <status>"
    child  → parent   "ready <pid> <n>", "ack <pid> <seq> <sha256>", "point <pid> <name>",
                      "batch <pid> <first seq> <count>", "done <pid>", "error <pid> <message>"

``torture`` writes to ``JsonlStore(root)``, or, given ``dsn``, to ``PostgresStore(dsn)`` with
a ``lease``; then every batch transaction the writer attempts is announced first ("batch").

Children write to the zygote's stdout (inherited), and the zygote answers "reaped" only after
``waitpid``, so every line a child wrote precedes it.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import sys
import time
import traceback
from typing import Any

import orjson
import trio

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/

from support.store.workload import workload

from trio_agent.log import encode_event
from trio_agent.store import FileOps, JsonlStore, PostgresStore, SessionNotFound, Store, repair_file
from trio_agent.store.postgres import PgWriter


def say(*parts: object) -> None:
    os.write(1, (" ".join(str(p) for p in parts) + "\n").encode())


class ChildOps(FileOps):
    """Real file operations that can kill this process at a named point, or write short."""

    def __init__(self, kill_at: str | None, short: bool, seed: int, nth: int = 1) -> None:
        self.kill_at = kill_at
        self.short = short
        self.rng = random.Random(seed)
        self.left = nth  # kill at the nth time the point is reached

    def write(self, fd: int, data: bytes | memoryview) -> int:
        if self.short:
            data = data[: self.rng.randint(1, 8)]
            time.sleep(0.00005)
        return os.write(fd, data)

    def point(self, name: str) -> None:
        say("point", os.getpid(), name)
        if name == self.kill_at:
            self.left -= 1
            if self.left == 0:
                os.kill(os.getpid(), signal.SIGKILL)


def announce_batches() -> None:
    """Say "batch <pid> <first seq> <count>" before each batch transaction of this process's
    database writers (the real one runs right after), so the parent can check that every
    batch is committed whole or not at all."""
    write = PgWriter._write_blocking

    def announced(self: PgWriter, data: bytes) -> None:
        say("batch", os.getpid(), self._next_seq, data.count(b"\n"))
        write(self, data)

    PgWriter._write_blocking = announced  # type: ignore[method-assign]


async def torture(cmd: dict[str, Any]) -> None:
    rng = random.Random(cmd["seed"])
    store: Store
    if "dsn" in cmd:
        announce_batches()
        store = PostgresStore(
            cmd["dsn"],
            lease=cmd["lease"],
            owner=f"child-{os.getpid()}",
            reap_orphans=None,
            window=cmd["window"],
        )
    else:
        store = JsonlStore(cmd["root"], reap_orphans=None, window=cmd["window"])
    async with store:
        try:
            session = await store.open(cmd["id"])
        except SessionNotFound:
            session = await store.create(cmd["id"])
        start = session.next_seq
        say("ready", os.getpid(), start)
        digest = hashlib.sha256()
        steps = workload(rng, session.checker.last_turn + 1, cmd["tag"], cmd["turns"])
        for type_, data, flush in steps:
            event = session.append(type_, data)
            digest.update(encode_event(event))
            if flush or rng.random() < 0.05:
                await session.flush()
                say("ack", os.getpid(), event.seq, digest.hexdigest())
            elif rng.random() < 0.2:
                await trio.sleep(rng.random() * 0.002)  # let the window expire now and then
        await session.flush()
        say("ack", os.getpid(), session.next_seq - 1, digest.hexdigest())


async def repair(cmd: dict[str, Any]) -> None:
    ops = ChildOps(cmd.get("kill_at"), cmd.get("short", False), cmd.get("seed", 0))
    say("ready", os.getpid(), 0)
    report = await repair_file(cmd["path"], reap_orphans=None, file_ops=ops)
    say("ack", os.getpid(), report.events - 1, len(report.closers))


async def checkpointed(cmd: dict[str, Any]) -> None:
    """Write turns with small checkpoints, each turn acknowledged; killed at a named point."""
    rng = random.Random(cmd["seed"])
    ops = ChildOps(cmd["kill_at"], False, 0, nth=cmd["nth"])
    store = JsonlStore(cmd["root"], reap_orphans=None, file_ops=ops, checkpoint_every=2000)
    async with store:
        session = await store.create(cmd["id"])
        say("ready", os.getpid(), 0)
        for type_, data, _ in workload(rng, 1, "k", cmd["turns"]):
            event = session.append(type_, data)
            if type_ == "turn/end":
                await session.flush()
                say("ack", os.getpid(), event.seq, 0)


async def hold(cmd: dict[str, Any]) -> None:
    rng = random.Random(cmd.get("seed", 0))
    async with JsonlStore(cmd["root"], reap_orphans=None) as store:
        try:
            session = await store.open(cmd["id"])
        except SessionNotFound:
            session = await store.create(cmd["id"])
        # Stop in the middle of a turn: some events durable, the turn open.
        for type_, data, _flush in workload(rng, session.checker.last_turn + 1, cmd["tag"], 1):
            session.append(type_, data)
            if type_ == "tool/call":
                break
        await session.flush()
        say("ready", os.getpid(), session.next_seq)
        await trio.sleep_forever()


OPS = {"torture": torture, "repair": repair, "hold": hold, "checkpointed": checkpointed}


def run_child(cmd: dict[str, Any]) -> None:
    try:
        trio.run(OPS[cmd["op"]], cmd)
        say("done", os.getpid())
        code = 0
    except BaseException as exc:  # report, never fall back into the zygote's loop
        message = "".join(traceback.format_exception_only(exc)).strip().replace("\n", " | ")
        say("error", os.getpid(), message)
        traceback.print_exc()
        code = 1
    os._exit(code)


def zygote() -> None:
    for raw in sys.stdin.buffer:
        cmd = orjson.loads(raw)
        if cmd["op"] == "reap":
            _, status = os.waitpid(cmd["pid"], 0)
            say("reaped", cmd["pid"], status)
            continue
        if cmd["op"] == "exit":
            break
        pid = os.fork()
        if pid == 0:
            run_child(cmd)
        say("pid", pid)


if __name__ == "__main__":
    if sys.argv[1:] == ["zygote"]:
        zygote()
    else:  # one command as JSON on the command line, in this process
        run_child(orjson.loads(sys.argv[1]))
