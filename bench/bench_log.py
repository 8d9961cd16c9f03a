"""decode + check + repair of a >= 200 MB log versus plain ``json.loads`` of every line.

The bar: the whole pure path (split, decode with I0, LogChecker, closers) within 3x of
the stdlib parse alone. Both run on the same bytes in the same process, best of 3 each.
"""

from __future__ import annotations

import gc
import json
import os
import random
import time
from collections.abc import Callable

import orjson

from trio_agent.log import Header, build, encode_event, encode_header, repair_closers, scan_log
from trio_agent.testing.loggen import LogGenerator

TARGET_BYTES = int(os.environ.get("TRIO_AGENT_BENCH_MB", "200")) * 1_000_000


def build_log(target: int) -> bytes:
    gen = LogGenerator(random.Random(2026))
    parts = [encode_header(Header("bench", 1_700_000_000_000))]
    size = len(parts[0])
    while size < target:
        gen.session(200)
        for event in gen.take():
            line = encode_event(event)
            parts.append(line)
            size += len(line)
    # End inside an open step with a dispatched call, so repair has real work to do.
    gen.queue("next-turn")
    gen.turn += 1
    gen.emit(*build.turn_start(gen.turn))
    gen.claim(include_turn_item=True)
    gen.emit(*build.step_start(gen.turn, 1))
    arguments = {"command": "make"}
    call = {"type": "tool-call", "id": "bench-call", "name": "bash", "arguments": arguments}
    gen.emit(*build.assistant_message(gen.turn, 1, "bench-msg", [call]))
    gen.emit(*build.tool_call(gen.turn, 1, "bench-call", "bash", arguments))
    parts.extend(encode_event(e) for e in gen.take())
    return b"".join(parts)


def best_of(n: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(n):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    data = build_log(TARGET_BYTES)
    lines = data.split(b"\n")[:-1]
    print(f"log: {len(data) / 1e6:.0f} MB, {len(lines) - 1:,} events")

    def stdlib() -> None:
        for line in lines:
            json.loads(line)

    def fast_parse() -> None:
        for line in lines:
            orjson.loads(line)

    def ours() -> None:
        scan = scan_log(data, strict=True)
        closers = repair_closers(scan.checker)
        assert len(closers) == 3, closers

    t_json = best_of(3, stdlib)
    t_orjson = best_of(3, fast_parse)
    t_ours = best_of(3, ours)
    n = len(lines) - 1
    print(
        f"json.loads per line        {t_json:7.2f} s  {t_json / n * 1e6:5.2f} us/event  (baseline)"
    )
    print(
        f"orjson.loads per line      {t_orjson:7.2f} s  {t_orjson / n * 1e6:5.2f} us/event  "
        f"ratio {t_orjson / t_json:.2f}x"
    )
    print(
        f"decode+check+repair (ours) {t_ours:7.2f} s  {t_ours / n * 1e6:5.2f} us/event  "
        f"ratio {t_ours / t_json:.2f}x  (target <= 3x)"
    )


if __name__ == "__main__":
    main()
