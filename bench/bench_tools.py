"""Cancel → the call's whole tree gone, and the cost of containing it, on real process trees
(spec/tools.md §4, §10).

``python -m bench tools``. For each run: start the tree with ``run_group``, wait until every
process of it exists, then time from ``cancel()`` to the moment the cancelled ``run_group``
call is over (by contract, the tree is gone then; each run re-checks /proc to be sure), under
each containment: the PID namespace and the process-group fallback, side by side in one run.
The floor is SIGKILL + reap of one plain child, measured the same way. The spawn overhead is a
whole ``run_group`` of ``true`` under each containment beside a bare fork and exec of ``true``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Awaitable, Callable

import trio

from trio_agent.procs.census import group_members, namespace_init, namespace_members, pid_namespace
from trio_agent.procs.containment import ContainmentPolicy, namespace_refusal
from trio_agent.tools.run_group import ProcessOptions, run_group

RUNS = 200
SMALL_GRACE = 0.05

HONOURS_TERM = ["bash", "-c", "sleep 100 & sleep 100 & wait"]
IGNORES_TERM = ["bash", "-c", "trap '' TERM; sleep 100 & sleep 100 & wait"]


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _until(predicate: Callable[[], bool]) -> None:
    with trio.fail_after(30):
        while not predicate():
            await trio.sleep(0.001)


async def _kill_one_child() -> float:
    proc = await trio.lowlevel.open_process(["sleep", "100"])
    start = time.perf_counter()
    proc.kill()
    await proc.wait()
    return time.perf_counter() - start


def _namespace_of(pgid: int) -> int | None:
    """The inode of the PID namespace that bwrap ``pgid`` made, once it exists."""
    init = namespace_init(pgid)
    return None if init is None else pid_namespace(init)


async def _cancel_namespace(argv: list[str], grace: float) -> float:
    """One run in a PID namespace (bash and two sleeps beside bwrap's init)."""
    found: list[int] = []

    def ready(pgid: int) -> bool:
        if not found:
            inode = _namespace_of(pgid)
            if inode is None:
                return False
            found.append(inode)
        return len(namespace_members(found[0], init=0)) == 4  # the init counts here

    def left(_pgid: int) -> list[int]:
        return namespace_members(found[0], init=0)

    return await _timed_cancel(argv, grace, "required", ready, left)


async def _spawn_true(containment: str) -> float:
    """One whole run_group of ``true``: spawn, wait, stop, reap."""
    start = time.perf_counter()
    await run_group(
        ["true"], on_spawned=lambda s: None, on_output=lambda s, t: None,
        options=ProcessOptions(containment=containment),  # type: ignore[arg-type]
    )  # fmt: skip
    return time.perf_counter() - start


async def _bare_true() -> float:
    start = time.perf_counter()
    proc = await trio.lowlevel.open_process(["true"])
    await proc.wait()
    return time.perf_counter() - start


async def _cancel_group(argv: list[str], grace: float) -> float:
    """One run as a process group (bash and two sleeps)."""

    def ready(pgid: int) -> bool:
        return len(group_members(pgid)) == 3

    return await _timed_cancel(argv, grace, "process-group", ready, group_members)


async def _timed_cancel(
    argv: list[str],
    grace: float,
    containment: ContainmentPolicy,
    ready: Callable[[int], bool],
    left: Callable[[int], list[int]],
) -> float:
    """One run: start ``argv``, wait until ``ready(pgid)``, then the seconds from cancel() to
    the end of the cancelled run_group call; ``left(pgid)`` must then find nothing."""
    pgids: list[int] = []
    scope = trio.CancelScope()
    finished = trio.Event()

    async def tool() -> None:
        with scope:
            await run_group(
                argv, on_spawned=lambda s: pgids.append(s.pgid), on_output=lambda s, t: None,
                options=ProcessOptions(grace=grace, containment=containment),
            )  # fmt: skip
        finished.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tool)
        await _until(lambda: bool(pgids) and ready(pgids[0]))
        start = time.perf_counter()
        scope.cancel()
        await finished.wait()
        elapsed = time.perf_counter() - start
    if left(pgids[0]):
        raise AssertionError(f"call {pgids[0]} still has processes after cancel returned")
    return elapsed


async def _sample(run: Callable[[], Awaitable[float]]) -> list[float]:
    await run()  # warm-up: first spawn pays for imports and the thread pool
    return [await run() for _ in range(RUNS)]


def _line(label: str, samples: list[float], extra: str = "") -> None:
    p50, p99 = _percentile(samples, 0.5) * 1e3, _percentile(samples, 0.99) * 1e3
    print(f"  {label:<44} p50 {p50:8.2f} ms   p99 {p99:8.2f} ms{extra}", flush=True)


async def _main() -> None:
    processes = sum(name.isdigit() for name in os.listdir("/proc"))
    start = time.perf_counter()
    for _ in range(50):
        group_members(1)
    scan = (time.perf_counter() - start) / 50
    print(f"  host: {processes} processes; one /proc group scan takes {scan * 1e3:.2f} ms")
    print(f"  {RUNS} runs each; latency from cancel() to the cancelled call returning")
    floor = await _sample(_kill_one_child)
    _line("floor: SIGKILL + reap one plain child", floor)

    honour = await _sample(lambda: _cancel_group(HONOURS_TERM, grace=2.0))
    ratio = statistics.median(honour) / statistics.median(floor)
    _line("bash + 2 sleeps, honour SIGTERM (grace 2 s)", honour, f"   = {ratio:.1f}x floor p50")

    ignore = await _sample(lambda: _cancel_group(IGNORES_TERM, grace=SMALL_GRACE))
    _line(f"bash + 2 sleeps, ignore SIGTERM (grace {SMALL_GRACE * 1e3:g} ms)", ignore)
    over = [s - SMALL_GRACE for s in ignore]
    ratio = statistics.median(ignore) / SMALL_GRACE
    _line("  overhead above the grace", over, f"   total = {ratio:.3f}x grace p50")
    print(f"  groups left with members after cancel: 0 of {2 * RUNS}", flush=True)

    refusal = namespace_refusal()
    if refusal is not None:
        print(f"  PID namespace: not measured ({refusal})", flush=True)
        return
    ns_honour = await _sample(lambda: _cancel_namespace(HONOURS_TERM, grace=2.0))
    ratio = statistics.median(ns_honour) / statistics.median(honour)
    _line("namespace: honour SIGTERM (grace 2 s)", ns_honour, f"   = {ratio:.2f}x the group's p50")
    ns_ignore = await _sample(lambda: _cancel_namespace(IGNORES_TERM, grace=SMALL_GRACE))
    _line(f"namespace: ignore SIGTERM (grace {SMALL_GRACE * 1e3:g} ms)", ns_ignore)
    over = [s - SMALL_GRACE for s in ns_ignore]
    _line("  overhead above the grace", over)
    print(f"  namespaces left with processes after cancel: 0 of {2 * RUNS}", flush=True)

    bare = await _sample(_bare_true)
    group = await _sample(lambda: _spawn_true("process-group"))
    space = await _sample(lambda: _spawn_true("required"))
    _line("spawn: bare fork + exec + reap of true", bare)
    _line("spawn: run_group(true), process group", group)
    extra = (statistics.median(space) - statistics.median(group)) * 1e3
    _line("spawn: run_group(true), PID namespace", space, f"   +{extra:.2f} ms p50 over the group")


def main() -> None:
    if subprocess.run(["bash", "-c", "true"], check=False).returncode != 0:
        raise SystemExit("bench_tools needs bash")
    trio.run(_main)


if __name__ == "__main__":
    main()
