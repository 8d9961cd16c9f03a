"""Store benchmarks: durable throughput, hot-path append cost, cold open of a large log.

``python -m bench store``. Figures are ratios against a baseline measured in the same run:

1. durable throughput, write-behind batching vs one fsync per event (target >= 20x);
2. ``Session.append`` cost in µs/event, in memory and bound to a writer, with and without
   observers (target <= 10 µs);
3. cold open + repair of a >= 200 MB log vs ``json.loads`` of every line (target <= 3x).

Everything runs on real files in a temporary directory, removed at the end.
"""

from __future__ import annotations

import gc
import json
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import trio

from trio_agent.log import Event
from trio_agent.store import JsonlStore, Session

from .bench_files import durable_copy

Item = tuple[str, dict[str, Any], bool]

BIG_LOG_BYTES = int(os.environ.get("TRIO_AGENT_BENCH_LOG_MB", "210")) << 20


def turns(
    rng: random.Random, first: int, count: int, *, text: int = 40, output: int = 80
) -> Iterator[Item]:
    """Valid turns: splice, claim, steps with streamed chunks, one or two tool calls with
    output, results; ``(type, data, flush_point)`` where flush points are the runtime's
    (before a tool body, after ``turn/end``)."""
    for turn in range(first, first + count):
        msg = {"id": f"m{turn}", "text": f"task {turn}", "source": "user"}
        yield "agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [msg]}, False
        yield "turn/start", {"turn": turn}, False
        claim = {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}
        yield "agent/inbox/spliced", claim, False
        steps = 2
        for step in range(1, steps + 1):
            where = {"turn": turn, "step": step}
            yield "step/start", dict(where), False
            if step == 1:
                yield "user/message", {**where, "message": msg}, False
            for _ in range(rng.randint(3, 8)):
                chunk = {"type": "text-delta", "text": "x" * rng.randint(text // 2, text)}
                yield "assistant/chunk", {**where, "chunk": chunk}, False
            count_calls = 0 if step == steps else rng.randint(1, 2)
            calls = [
                {"type": "tool-call", "id": f"c{turn}.{step}.{i}", "name": "sh", "arguments": {}}
                for i in range(count_calls)
            ]
            message = {"id": f"a{turn}.{step}", "content": [{"type": "text", "text": "ok"}, *calls]}
            yield "assistant/message", {**where, "message": message}, False
            for block in calls:
                call = {**where, "callId": block["id"]}
                yield "tool/call", {**call, "name": "sh", "arguments": block["arguments"]}, True
                for _ in range(rng.randint(1, 4)):
                    text_out = "o" * rng.randint(output // 2, output)
                    yield "tool/output", {**call, "stream": "stdout", "text": text_out}, False
                yield "tool/result", {**call, "isError": False, "content": "done"}, False
            yield "step/end", dict(where), False
        yield "turn/end", {"turn": turn, "reason": {"kind": "completed"}}, True


def best(runs: int, fn: Callable[[], float]) -> float:
    return min(fn() for _ in range(runs))


# -- 1. durable throughput ------------------------------------------------------------------


async def _durable(root: Path, items: list[Item], mode: str) -> float:
    async with JsonlStore(root, reap_orphans=None) as store:
        session = await store.create(f"{mode}-{time.monotonic_ns()}")
        start = time.perf_counter()
        for type_, data, flush_point in items:
            session.append(type_, data)
            if mode == "each" or (mode == "points" and flush_point):
                await session.flush()
            elif mode == "stream":
                await trio.sleep(0)  # a producer that yields, as a streaming runtime does
        await session.flush()
        return time.perf_counter() - start


def bench_throughput(tmp: Path) -> None:
    items = list(turns(random.Random(1), 1, 60))
    n = len(items)
    each = best(2, lambda: trio.run(_durable, tmp, items, "each"))
    points = best(2, lambda: trio.run(_durable, tmp, items, "points"))
    stream = best(2, lambda: trio.run(_durable, tmp, items, "stream"))
    print(f"durable throughput ({n} events, real fsync):")
    print(f"  one fsync per event            {n / each:>9,.0f} events/s")
    print(
        f"  write-behind, window only      {n / stream:>9,.0f} events/s"
        f"   ratio {each / stream:5.1f}x  (target >= 20x)"
    )
    print(
        f"  write-behind + runtime flushes {n / points:>9,.0f} events/s"
        f"   ratio {each / points:5.1f}x  (a flush before every tool body and after turn/end)"
    )


# -- 2. hot path ----------------------------------------------------------------------------


class _NullSink:
    """Stands in for the writer to time append's own work (no trio, no disk)."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def admit(self, type_: str, nbytes: int) -> None:
        pass

    def submit(self, line: bytes) -> None:
        self.lines.append(line)

    async def flush(self) -> None: ...
    async def wait_writable(self) -> None: ...
    async def aclose(self) -> None: ...


def _append_all(items: list[Item], make: Callable[[], Session], observers: int) -> float:
    session = make()
    seen: list[Event] = []
    for _ in range(observers):
        session.subscribe(seen.append)
    gc.collect()
    start = time.perf_counter()
    append = session.append
    for type_, data, _ in items:
        append(type_, data)
    return (time.perf_counter() - start) / len(items) * 1e6


async def _append_durable(root: Path, items: list[Item]) -> float:
    async with JsonlStore(root, window=3600, reap_orphans=None) as store:
        session = await store.create(f"hot-{time.monotonic_ns()}")
        gc.collect()
        start = time.perf_counter()
        for type_, data, _ in items:
            session.append(type_, data)
        cost = (time.perf_counter() - start) / len(items) * 1e6
        await session.flush()
        return cost


def bench_hot_path(tmp: Path) -> None:
    items = list(turns(random.Random(2), 1, 400))
    memory = best(9, lambda: _append_all(items, Session.in_memory, 0))
    observed = best(9, lambda: _append_all(items, Session.in_memory, 3))
    sink = best(9, lambda: _append_all(items, lambda: Session("x", sink=_NullSink()), 0))
    durable = best(5, lambda: trio.run(_append_durable, tmp, items))
    print(f"append hot path ({len(items)} events; target <= 10 µs/event):")
    print(f"  in memory (checker)          {memory:6.2f} µs/event")
    print(f"  in memory + 3 observers      {observed:6.2f} µs/event")
    print(f"  with a writer sink (no disk) {sink:6.2f} µs/event")
    print(f"  bound to the JSONL writer    {durable:6.2f} µs/event (append only; disk is async)")


# -- 3. cold open of a large log ------------------------------------------------------------


class _FileSink(_NullSink):
    def __init__(self, f: Any) -> None:
        super().__init__()
        self.f = f
        self.size = 0

    def submit(self, line: bytes) -> None:
        self.f.write(line)
        self.size += len(line)


def _generate(path: Path, target: int) -> int:
    path.parent.mkdir(parents=True)
    rng = random.Random(3)
    with path.open("wb") as f:
        f.write(b'{"type":"session","version":1,"id":"big","createdAt":1}\n')
        sink = _FileSink(f)
        session = Session("big", sink=sink, clock=lambda: 1_700_000_000_000)
        turn = 1
        while sink.size < target:
            for type_, data, _ in turns(rng, turn, 50, text=300, output=1500):
                session.append(type_, data)
            turn += 50
        # Leave the last turn open mid-tool, with a torn tail, so repair has work to do.
        for type_, data, _ in turns(rng, turn, 1, text=300, output=1500):
            session.append(type_, data)
            if type_ == "tool/output":
                break
        f.write(b'{"seq":')
        events = len(session.events)
    del session
    gc.collect()
    return events


def _raw_json(path: Path) -> float:
    start = time.perf_counter()
    with path.open("rb") as f:
        data = f.read()
    loads = json.loads
    for line in data[: data.rfind(b"\n")].split(b"\n"):  # complete lines (not the torn tail)
        loads(line)
    return time.perf_counter() - start


async def _cold_open(root: Path) -> tuple[float, int]:
    async with JsonlStore(root, reap_orphans=None) as store:
        start = time.perf_counter()
        session = await store.open("big")
        elapsed = time.perf_counter() - start
        assert session.events[-1].data["reason"] == {"kind": "interrupted"}
        count = len(session.events)
        await session.aclose()
    return elapsed, count


def bench_cold_open(tmp: Path) -> None:
    path = tmp / "big" / "big" / "session.jsonl"
    events = _generate(path, BIG_LOG_BYTES)
    size = path.stat().st_size
    backup = path.with_name("pristine")
    shutil.copyfile(path, backup)
    try:
        raw = best(2, lambda: _raw_json(path))
        opens = []
        for _ in range(2):
            # repair changes the file: start from the damage, synced as after a crash (what
            # the writer wrote was already durable)
            durable_copy(backup, path)
            gc.collect()
            elapsed, count = trio.run(_cold_open, path.parent.parent)
            opens.append(elapsed)
        cold = min(opens)
    finally:
        shutil.rmtree(path.parent.parent)
    mb = size / 2**20
    print(f"cold open + repair of a {mb:.0f} MB log ({events:,} events, torn tail, open turn):")
    print(f"  json.loads of every line     {raw:6.2f} s   ({size / raw / 2**20:6.0f} MB/s)")
    print(
        f"  JsonlStore.open (repair)     {cold:6.2f} s   ({size / cold / 2**20:6.0f} MB/s)   "
        f"ratio {cold / raw:4.2f}x  (target <= 3x)"
    )
    assert count > events  # the closers were appended


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench_store."))
    try:
        bench_throughput(tmp)
        bench_hot_path(tmp)
        bench_cold_open(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
